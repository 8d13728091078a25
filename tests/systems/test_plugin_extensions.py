"""A plug-in adds a fault and a checker of its own through the entry points
the raft store uses for its own (`faultline.faults`, `faultline.checkers`):
tests/plugins/faultline_demo_plugin, installed from its own package.

It is installed into a directory of its own (`pip install --target`), put
on the path of the processes that use it: installed into the shared venv,
its fault and checker would join every other test's runs and the generated
docs/contracts.md tables."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checkers.history import NEMESIS, History, Op
from checkers.rundir import Run

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "tests" / "plugins" / "faultline_demo_plugin"


def _demo():
    sys.path.insert(0, str(PLUGIN))
    try:
        import faultline_demo
        return faultline_demo
    finally:
        sys.path.pop(0)


def _run(*ops: Op) -> Run:
    client = [Op(0, 1, 0, "invoke", "read", None, key=1), Op(1, 2, 0, "ok", "read", 0, key=1)]
    return Run(Path("."), {}, History([*client, *ops]))


def _nemesis(index: int, error: str | None = None) -> list[Op]:
    return [Op(index, 10 + index, NEMESIS, "invoke", "freeze-followers", {}),
            Op(index + 1, 11 + index, NEMESIS, "info", "freeze-followers", {"nodes": ["n2"]},
               error=error)]


def test_the_demo_checker_passes_a_run_whose_faults_all_acted():
    v = _demo().check_nemesis_errors(_run(*_nemesis(2)), {})
    assert v["valid"] is True and v["stats"]["nemesis_ops"] == 1


def test_the_demo_checker_fails_a_run_with_a_fault_that_failed():
    v = _demo().check_nemesis_errors(_run(*_nemesis(2), *_nemesis(4, "RuntimeError: no")), {})
    assert v["valid"] is False
    assert [(a["type"], a["error"]) for a in v["anomalies"]] == [("fault-failed",
                                                                  "RuntimeError: no")]


def test_the_demo_checker_cannot_judge_a_run_without_faults():
    assert _demo().check_nemesis_errors(_run(), {})["valid"] == "unknown"


def test_the_plugin_is_not_in_this_venv():
    """The tests below install it apart; were it here, every run would get its checker."""
    from checkers.registry import CHECKS
    from nemesis.base import FAULTS
    assert "nemesis-errors" not in CHECKS and "freeze-followers" not in FAULTS


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process that has the plug-in installed."""
    target = tmp_path_factory.mktemp("demo-plugin")
    # Built from a copy: the build leaves build/ and egg-info beside its source,
    # and two workers may build at once.
    source = Path(shutil.copytree(PLUGIN, tmp_path_factory.mktemp("demo-source") / "plugin",
                                  ignore=shutil.ignore_patterns("build", "*.egg-info")))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--disable-pip-version-check", "--target", str(target), str(source)],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return {**os.environ, "PYTHONPATH": str(target)}


@pytest.mark.slow
def test_the_registries_see_the_installed_plugins_fault_and_checker(installed):
    probe = ("import json\n"
             "from checkers.registry import CHECKS, CLUSTER_CHECKERS\n"
             "from nemesis.base import FAULTS, make_fault\n"
             "from workloads.judging import default_checkers\n"
             "print(json.dumps({'fault': make_fault('freeze-followers').name,\n"
             "  'heal': FAULTS['freeze-followers'].heal_f,\n"
             "  'raft': 'lose-state' in FAULTS and 'invariants' in CHECKS,\n"
             "  'checker': CHECKS['nemesis-errors'].name,\n"
             "  'every_run': 'nemesis-errors' in default_checkers('register')}))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=installed, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {"fault": "freeze-followers", "heal": "thaw-followers",
                                      "raft": True, "checker": "nemesis-errors",
                                      "every_run": True}


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_run_plays_the_plugins_fault_and_is_judged_by_its_checker(installed, tmp_path):
    """A real raft run with the plug-in's fault as its nemesis: the history
    records it, the run's default checkers include the plug-in's, which
    judged it. Certain: the fault only pauses and resumes processes, which
    never fails on live nodes, and the schedule plays it within 8 s at a 2 s
    interval."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--system", "raft", "--workload", "register",
         "--nemesis", "freeze-followers", "--nemesis-interval", "2", "--time-limit", "8",
         "--recovery-time", "2", "--results", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=installed, timeout=300)
    assert proc.returncode in (0, 1, 2), proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = Path(re.search(r"verdict: \w+\s+\((.+)\)", proc.stdout).group(1))
    schedule = json.loads((run_dir / "run.json").read_text())["schedule"]
    played = [e for e in schedule if e["f"] == "freeze-followers"]
    assert played and all(e["error"] is None for e in played), schedule
    assert any(e["f"] == "thaw-followers" for e in schedule), schedule
    verdicts = json.loads((run_dir / "verdicts.json").read_text())["checkers"]
    assert verdicts["nemesis-errors"]["valid"] is True, verdicts["nemesis-errors"]
    assert verdicts["nemesis-errors"]["stats"]["nemesis_ops"] >= 2
