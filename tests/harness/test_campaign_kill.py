"""A campaign SIGKILLed at every phase boundary and resumed loses no run and
counts none twice (issue 28, finding 5): a killed campaign's workers run on,
and the resume used to start their runs again ("never ran"), dropping the
orphans' finished runs from runs.json (an INVALID one would have passed the
gate). Real raft runs and a real Spark check; the campaign process kills
itself at the named point (runner.KILL_AT_ENV)."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from checkers.spark.session import java_missing
from harness.campaign.runner import KILL_AT_ENV, KILL_POINTS
from harness.results.store import RUN_ID
from harness.run.errors import EXIT_BAD_INPUT

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c",
       "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"]
CAMPAIGN = """
name = "kill"
description = "two short raft runs, killed and resumed"

[defaults]
nodes = 3
concurrency = 2
rate = 50.0
time_limit = 3.0
nemesis_interval = 1.0
recovery_time = 1.0
final_read_timeout = 3.0

[[matrix]]
db = ["raft"]
workload = ["register"]
nemesis = ["partition"]
seeds = [1, 2]
"""
RUNS = 2
# Two runs and a Spark check take about 2 minutes; a machine shared with
# other test suites has taken 10 (no speed is asserted, only completion).
CAMPAIGN_TIMEOUT_S = 1800

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
    pytest.mark.skipif(java_missing() is not None, reason="Spark needs Java"),
]


def campaign(args, results, kill_at=None):
    env = {k: v for k, v in os.environ.items() if k != KILL_AT_ENV}
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    return subprocess.run([*CLI, "campaign", *args, "--results", str(results)], cwd=REPO,
                          env=env, capture_output=True, text=True,
                          timeout=CAMPAIGN_TIMEOUT_S)


def read(path):
    return json.loads(Path(path).read_text())


START_POINTS = [p for p in KILL_POINTS if p != "reset"]   # reset is a resume's own


@pytest.mark.timeout(3 * CAMPAIGN_TIMEOUT_S)
@pytest.mark.parametrize("start_kill, resume_kill",
                         [(p, None) for p in START_POINTS]
                         + [("spawned", "reset"), ("spawned", "spawned"),
                            ("marked", "spawned")])
def test_killed_at_a_phase_boundary_and_resumed_every_run_once(tmp_path, start_kill,
                                                                resume_kill):
    results = tmp_path / "results"
    spec = tmp_path / "kill.toml"
    spec.write_text(CAMPAIGN)
    first = campaign([str(spec), "--parallel", "2"], results, start_kill)
    assert first.returncode == -9, first.stderr
    (cdir,) = (results / "campaigns").iterdir()
    if start_kill == "created":
        # killed before it planned anything: nothing ran, and resume says so
        again = campaign(["--resume", cdir.name], results)
        assert again.returncode == EXIT_BAD_INPUT and "nothing ran" in again.stderr
        assert not [p for p in results.iterdir() if RUN_ID.fullmatch(p.name)]
        return
    second = None
    if resume_kill:
        second = campaign(["--resume", cdir.name], results, resume_kill)
        # (a resume with nothing left to run never reaches a run's kill point)
        assert second.returncode in (-9, 0, 1, 2), second.stderr
    last = campaign(["--resume", cdir.name], results)
    assert last.returncode in (0, 1, 2), last.stderr

    entries = read(cdir / "runs.json")
    assert [e["index"] for e in entries] == list(range(RUNS))
    for e in entries:
        assert e["status"] == "complete", (e, last.stderr)
        document = read(Path(e["run_dir"]) / "verdicts.json")
        assert e["verdict"] == {True: "valid", False: "invalid"}.get(document["valid"],
                                                                      "unknown")
    # Every run dir the campaign made is in runs.json exactly once: no run
    # lost, none run twice (a started run is adopted, never started again).
    made = [p.name for p in results.iterdir() if RUN_ID.fullmatch(p.name)]
    listed = Counter(Path(d).name for e in entries
                     for d in [e["run_dir"], *(a["run_dir"] for a in
                                               e.get("previous_attempts", []))])
    assert sorted(made) == sorted(listed) and set(listed.values()) == {1}, (made, listed)
    assert len(made) == RUNS
    table = pq.read_table(cdir / "verdicts.parquet").to_pandas()
    assert set(table["run"]) == {e["run_id"] for e in entries}
    if start_kill == "spawned":
        # the run its worker was running (a run takes seconds) was waited for
        first_resume = second if resume_kill else last
        assert "still running in a worker of the killed campaign" in first_resume.stderr
