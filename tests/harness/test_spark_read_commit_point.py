"""`faultline check` (a real local Spark session) judges read-behind-commit-point
as a run does in-process: the node files reach the run-scoped checker the same
way. A run dir written by hand: two reads, one answered behind the announced
commit point (its twin, answered after the node caught up, is not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers.history import Op
from checkers.registry import check_loaded
from checkers.registry import read_run_json as read_json
from checkers.rundir import load_run
from checkers.spark.session import java_missing
from harness.cli import main
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter
from workloads.judging import plan_for

START_NS = 5_000_000_000
MS = 1_000_000


def line(t_ms: int, node: str, event: str, **fields: object) -> str:
    return json.dumps({"t": START_NS + t_ms * MS, "node": node, "event": event, **fields})


def write_run(results: Path) -> Path:
    run = create_run_dir(results)
    with HistoryWriter(run / "history.msgpack") as w:
        w.append(Op(0, 10 * MS, 0, "invoke", "write", 1, "k"))
        w.append(Op(0, 90 * MS, 0, "ok", "write", 1, "k", "n1"))
        for process, node in ((1, "n2"), (2, "n3")):
            w.append(Op(0, 200 * MS, process, "invoke", "read", None, "k"))
            w.append(Op(0, 300 * MS, process, "ok", "read", 1, "k", node))
    for node in ("n1", "n2", "n3"):
        lines = [line(-100, node, "start", epoch=1, log_end=0, cluster_id="c",
                      hw_before_answers=True)]
        lines += {"n1": [line(100, "n1", "hw", hw=10, epoch=1)],
                  "n2": [line(50, "n2", "hw", hw=5, epoch=1)],
                  "n3": [line(50, "n3", "hw", hw=5, epoch=1),
                         line(250, "n3", "hw", hw=10, epoch=1)]}[node]
        (run / "nodes" / node).mkdir(parents=True)
        (run / "nodes" / node / "stdout.log").write_text("\n".join(lines) + "\n")
    (run / "run.json").write_text(json.dumps({
        "run_id": run.name, "status": "complete", "artifacts": ["events"],
        "start_monotonic_ns": START_NS,
        "config": {"db": "raft", "workload": "register", "checkers": ["read-commit-point"]}}))
    return run


@pytest.mark.slow
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_spark_judges_reads_behind_the_commit_point_as_in_process(tmp_path):
    run = write_run(tmp_path / "results")
    in_process = check_loaded(load_run(run), plan_for(read_json(run)))
    local = in_process["checkers"]["read-commit-point"]
    assert local["valid"] is False
    assert [(a["process"], a["node"]) for a in local["anomalies"]] == [(1, "n2")]
    assert main(["check", str(run)]) == 1
    spark = json.loads((run / "verdicts.json").read_text())["checkers"]["read-commit-point"]
    assert spark["anomalies"] == local["anomalies"]
    assert spark["valid"] is False
    assert {k: v for k, v in spark["stats"].items() if k != "seconds"} == {
        k: v for k, v in local["stats"].items() if k != "seconds"}
