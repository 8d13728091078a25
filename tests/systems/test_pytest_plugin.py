"""The pytest plugin: chaos tests as tests, side by side under xdist."""

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from faultline.pytest_plugin import ChaosResult

CHAOS_TESTS = textwrap.dedent('''
    from faultline.builtin import RAFT

    # Reads and writes only. The stats checker says unknown, honestly, when
    # some op kind never succeeded, and a cas succeeds only when it guesses
    # the current value: a run starved to a few dozen ops by a loaded machine
    # can end with every cas failed (seen: 46 ops, verdict unknown). A read or
    # a write fails only when the cluster does, and the final reads are
    # retried until they succeed. (No fault is due in the first 4 s of these
    # seeds' schedules: what is tested is the plugin, side by side.)
    SHORT = dict(workload="register", nemesis="partition", time_limit=4, recovery_time=2,
                 concurrency=3, workload_options={"cas": False})

    def test_by_name(faultline_run):
        result = faultline_run(system="raft", seed=1, **SHORT)
        assert result.valid, result.summary

    def test_by_object(faultline_run):
        result = faultline_run(system=RAFT, seed=2, **SHORT)
        assert result.valid, result.summary
''')


def test_result_summary_names_the_checkers_that_did_not_pass(tmp_path):
    r = ChaosResult(False, False, tmp_path, tmp_path / "report.html", 1,
                    {"valid": False, "checkers": {"linearizability": {"valid": False},
                                                  "stats": {"valid": True}}})
    assert "linearizability" in r.summary and "stats" not in r.summary


def test_the_fixture_is_registered_by_entry_point(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider",
                          str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    assert "faultline_run" in out.stdout


def _windows(run_dirs):
    for d in run_dirs:
        doc = json.loads((Path(d) / "run.json").read_text())
        yield (datetime.fromisoformat(doc["start_wall"]), datetime.fromisoformat(doc["end_wall"]))


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_two_chaos_tests_run_in_parallel_under_xdist_and_report_their_run_dirs(tmp_path):
    (tmp_path / "test_chaos.py").write_text(CHAOS_TESTS)
    junit = tmp_path / "junit.xml"
    results = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-rA",
         f"--junitxml={junit}", f"--faultline-results={results}", "test_chaos.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    cases = ET.parse(junit).getroot().iter("testcase")
    run_dirs = {}
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        run_dirs[case.get("name")] = props["faultline_run_dir"]
        assert props["faultline_verdict"] == "True"
        assert Path(props["faultline_report"]).is_file()
    assert set(run_dirs) == {"test_by_name", "test_by_object"}
    assert len(set(run_dirs.values())) == 2            # each run its own id, so namespaces
    for d in run_dirs.values():
        assert (Path(d) / "history.msgpack").is_file()
        assert d in proc.stdout                        # the "faultline" report section
    (s1, e1), (s2, e2) = _windows(run_dirs.values())
    assert s1 < e2 and s2 < e1, "the two runs did not overlap in time"
