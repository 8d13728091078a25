"""`faultline check` through Spark judges a run with a companion workload as
in-process does: each checker on its own workload's ops (Spark's key groups
of the other workload's keys are none of its), each verdict naming it."""

import json

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

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")]


def composed_run(results, read_back: list[int]):
    """A register run whose list-append companion appended then read a key in
    one txn, reading `read_back` ([] misses its own append: Elle's anomaly)."""
    run_dir = create_run_dir(results)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for i in range(1, 11):
            w.append(Op(0, 0, 0, "invoke", "write", i, "r0"))
            w.append(Op(0, 0, 0, "ok", "write", i, "r0"))
            w.append(Op(0, 0, 1, "invoke", "read", None, "r0"))
            w.append(Op(0, 0, 1, "ok", "read", i, "r0"))
        key = "list-append:1"
        txn = [["append", key, -1], ["r", key, None]]
        w.append(Op(0, 0, 2, "invoke", "txn", txn, workload="list-append"))
        w.append(Op(0, 0, 2, "ok", "txn", [txn[0], ["r", key, read_back]],
                    workload="list-append"))
        # A later read, ordered after it: something for Elle to judge either way.
        w.append(Op(0, 0, 3, "invoke", "txn", [["r", key, None]], workload="list-append"))
        w.append(Op(0, 0, 3, "ok", "txn", [["r", key, [-1]]], workload="list-append"))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "config": {"db": "etcd", "workload": "register", "companion": "list-append"}}))
    return run_dir


@pytest.mark.parametrize("read_back,valid", [([], False), ([-1], True)])
def test_spark_judges_each_workloads_ops_with_its_own_checkers(tmp_path, read_back, valid):
    run_dir = composed_run(tmp_path / "results", read_back)
    in_process = check_loaded(load_run(run_dir), plan_for(read_json(run_dir)))
    assert main(["check", str(run_dir)]) == (0 if valid else 1)
    spark = json.loads((run_dir / "verdicts.json").read_text())
    for doc in (spark, in_process):
        assert set(doc["checkers"]) == {"stats", "linearizability", "availability", "elle"}
        lin, elle = doc["checkers"]["linearizability"], doc["checkers"]["elle"]
        assert lin["valid"] is True and lin["stats"]["workload"] == "register"
        assert elle["valid"] is valid and elle["stats"]["workload"] == "list-append"
        assert doc["valid"] is valid
    assert spark["checkers"]["linearizability"]["stats"]["keys"] == 1


def run_without_companion_ops(results):
    """A list-append run whose register companion issued no ops (a short
    run, a small share): the companion's linearizability has nothing to judge."""
    run_dir = create_run_dir(results)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for i in range(1, 4):
            w.append(Op(0, 0, 0, "invoke", "txn", [["append", 1, i]]))
            w.append(Op(0, 0, 0, "ok", "txn", [["append", 1, i]]))
            w.append(Op(0, 0, 1, "invoke", "txn", [["r", 1, None]]))
            w.append(Op(0, 0, 1, "ok", "txn", [["r", 1, list(range(1, i + 1))]]))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "config": {"db": "etcd", "workload": "list-append", "companion": "register"}}))
    return run_dir


def test_spark_and_in_process_agree_on_a_companion_that_issued_no_ops(tmp_path):
    """Before: Spark merged the no-keys marker as a key verdict (`1 of 1
    key(s) undecided: ...`, no workload named); in-process said `no client
    operations` of the register workload."""
    run_dir = run_without_companion_ops(tmp_path / "results")
    in_process = check_loaded(load_run(run_dir), plan_for(read_json(run_dir)))
    assert main(["check", str(run_dir)]) == 2
    spark = json.loads((run_dir / "verdicts.json").read_text())
    assert set(spark["checkers"]) == set(in_process["checkers"])
    for name, v in in_process["checkers"].items():
        assert spark["checkers"][name]["valid"] == v["valid"], name
        assert spark["checkers"][name]["stats"].get("reason") == v["stats"].get("reason"), name
    lin = spark["checkers"]["linearizability"]
    assert lin["valid"] == "unknown" and lin["stats"] == {
        "reason": "no client operations", "workload": "register", "seconds": 0.0}
    assert spark["checkers"]["elle"]["valid"] is True
    assert spark["valid"] == in_process["valid"] == "unknown"
