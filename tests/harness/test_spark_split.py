"""One big history across executors: `faultline check` with every run split
(Elle per strongly connected component, divergence per offset range, each a
Spark task) must write exactly the in-process verdicts, on runs that pass and
on runs with anomalies in several components and several offset ranges."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import msgpack
import pytest

from checkers.elle.simulate import serial_history
from checkers.history import Op
from checkers.registry import check_run_dir
from checkers.rundir import LOG_DUMP, NODES_DIR, STDOUT_LOG
from checkers.spark.check_job import check_runs
from checkers.spark.session import end_session, java_missing, spark_session
from checkers.spark.split_job import SPLIT_CHECKERS
from checkers.verdict_store import STAMP_FIELD
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter
from tests.checkers.test_divergence import dump, role
from workloads.judging import plan_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")]

TIMINGS = {"seconds", "graph_s", "cycle_search_s"}


def save(results: Path, ops: list[Op], config: dict[str, Any],
         dumps: dict[str, dict] | None = None, events: dict[str, list] | None = None) -> Path:
    run = create_run_dir(results)
    with HistoryWriter(run / "history.msgpack") as w:
        for op in ops:
            w.append(op)
    (run / "run.json").write_text(json.dumps(
        {"run_id": run.name, "status": "complete", "config": config}))
    for node, d in (dumps or {}).items():
        (run / NODES_DIR / node).mkdir(parents=True, exist_ok=True)
        (run / NODES_DIR / node / LOG_DUMP).write_bytes(msgpack.packb(d))
    for node, evs in (events or {}).items():
        (run / NODES_DIR / node).mkdir(parents=True, exist_ok=True)
        (run / NODES_DIR / node / STDOUT_LOG).write_text(
            "".join(json.dumps(e) + "\n" for e in evs))
    return run


def a_few_ops() -> list[Op]:
    return [Op(0, 0, 0, "invoke", "write", 1), Op(1, 1, 0, "ok", "write", 1)]


def diverging_logs() -> tuple[dict[str, dict], dict[str, list]]:
    """Three places where A and B disagree on committed entries, one of them
    cut by most range boundaries, an epoch no leader had, and a hole."""
    a = dump("A", [(0, 20, 1), (21, 25, 1), (26, 100, 1), (101, 130, 1), (131, 300, 1)],
             hw=301, epoch=3)
    b = dump("B", [(0, 20, 1), (21, 25, 2), (26, 100, 1), (101, 130, 2), (131, 280, 1),
                   (281, 300, 4)], hw=301, epoch=3)
    c = dump("C", [(0, 60, 1), (90, 300, 1)], hw=301, epoch=3)
    events = {"A": [role(0, "A", "Leader", 1, "A")], "B": [role(1, "B", "Leader", 2, "B")]}
    return {"A": a, "B": b, "C": c}, events


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("split") / "results"
    rng = random.Random
    elle_config = {"workload": "list-append", "checkers": ["elle"]}
    # Stale reads: cycles in ten components.
    save(results, serial_history(3000, max_writes_per_key=32, p_stale=0.004, rng=rng(3)),
         elle_config)
    save(results, serial_history(1500, max_writes_per_key=32, rng=rng(4)), elle_config)
    save(results, serial_history(2000, max_writes_per_key=32, p_stale=0.004, registers=True,
                                 rng=rng(5)),
         {"workload": "rw-register", "checkers": ["rw-register"]})
    dumps, events = diverging_logs()
    save(results, a_few_ops(), {"checkers": ["divergence"]}, dumps, events)
    same = {n: dump(n, [(0, 150, 1), (151, 300, 2)], hw=301, epoch=2) for n in "ABC"}
    save(results, a_few_ops(), {"checkers": ["divergence"]}, same,
         {"A": [role(0, "A", "Leader", 1, "A"), role(1, "A", "Leader", 2, "A")]})
    return results


def documents(results: Path) -> dict[str, dict]:
    """Each run's verdicts.json, less the seconds taken and the stamp of the
    history file (a copy's differs)."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in TIMINGS | {STAMP_FIELD}}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return {d.name: strip(json.loads((d / "verdicts.json").read_text()))
            for d in sorted(results.iterdir()) if d.is_dir()}


def test_split_checks_on_spark_equal_in_process(results: Path, tmp_path: Path) -> None:
    local = shutil.copytree(results, tmp_path / "in-process")
    for d in sorted(local.iterdir()):
        check_run_dir(d, plan_for)
    expected = documents(local)
    verdicts = [(doc["checkers"][n]["valid"], n) for doc in expected.values()
                for n in doc["checkers"]]
    # Runs that must fail and runs that must pass, for each split checker.
    assert {(False, n) for n in SPLIT_CHECKERS} <= set(verdicts)
    assert {(True, "elle"), (True, "divergence")} <= set(verdicts)

    on_spark = shutil.copytree(results, tmp_path / "spark")
    said: list[str] = []
    spark = spark_session()
    try:
        check_runs(spark, sorted(d for d in on_spark.iterdir() if d.is_dir()), plan_for,
                   said.append, split_from=0)
    finally:
        end_session(spark)
    assert sum("split across executors" in s for s in said) == len(expected)
    assert documents(on_spark) == expected
