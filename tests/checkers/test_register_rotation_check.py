"""A long register run with rotating keys is many single-register histories,
each judged on its own: in-process, and on Spark, which groups a run's ops by
key and checks each group as a task. Both must find the one key with a stale
read, pass every other key, and agree row for row."""

from __future__ import annotations

import json
import random
import shutil
from itertools import islice
from pathlib import Path

import pytest

from checkers.history import Op
from checkers.registry import check_run_dir
from checkers.spark.session import java_missing
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter
from workloads import register
from workloads.judging import plan_for

OPS_PER_KEY = 60
N_OPS = 300          # keys r0 .. r4
STALE_KEY = "r2"


def rotated_history(seed: int, stale_key: str | None) -> list[Op]:
    """The register workload's ops (a fresh key every OPS_PER_KEY ops) run by
    three processes on an in-memory register per key, each op taking effect
    when it completes, so the history is linearizable. With `stale_key`, one
    read of that key returns the key's first written value after a later
    write to it had completed before the read began: not linearizable."""
    rng = random.Random(seed)
    specs = iter(islice(register.generate(random.Random(seed),
                                          {"ops_per_key": OPS_PER_KEY,
                                           "absent_key_ops": 0}), N_OPS))
    regs: dict[str, int | None] = {}
    history: list[Op] = []
    open_ops: dict[int, Op] = {}
    first_value: dict[str, int] = {}
    overwritten: set[str] = set()     # keys whose first value a completed write replaced
    staled = False

    def emit(p: int, typ: str, f: str, value, key, error=None) -> None:
        history.append(Op(len(history), len(history), p, typ, f, value, key=key, error=error))

    done = False
    while not done or open_ops:
        p = rng.randrange(3)
        if p not in open_ops:
            spec = next(specs, None)
            if spec is None:
                done = True
                continue
            emit(p, "invoke", spec.f, spec.value, spec.key)
            open_ops[p] = history[-1]
            continue
        inv = open_ops.pop(p)
        k = inv.key
        if inv.f == "read":
            value = regs.get(k)
            if (stale_key == k and not staled and k in overwritten
                    and inv.index > max(o.index for o in history
                                        if o.type == "ok" and o.key == k and o.f != "read")):
                value, staled = first_value[k], True
            emit(p, "ok", "read", value, k)
        elif inv.f == "write":
            if k in first_value:
                overwritten.add(k)
            first_value.setdefault(k, inv.value)
            regs[k] = inv.value
            emit(p, "ok", "write", inv.value, k)
        elif regs.get(k) == inv.value[0]:
            regs[k] = inv.value[1]
            overwritten.add(k)
            emit(p, "ok", "cas", inv.value, k)
        else:
            emit(p, "fail", "cas", inv.value, k, error="cas_mismatch")
    assert staled or stale_key is None
    return history


def save(results: Path, ops: list[Op]) -> Path:
    run = create_run_dir(results)
    with HistoryWriter(run / "history.msgpack") as w:
        for op in ops:
            w.append(op)
    (run / "run.json").write_text(json.dumps(
        {"run_id": run.name, "status": "complete",
         "config": {"workload": "register", "checkers": ["linearizability"]}}))
    return run


@pytest.fixture()
def results(tmp_path: Path) -> tuple[Path, Path, Path]:
    results = tmp_path / "results"
    good = save(results, rotated_history(7, None))
    bad = save(results, rotated_history(7, STALE_KEY))
    return results, good, bad


def per_key(document: dict) -> dict[str, object]:
    lin = document["checkers"]["linearizability"]
    return {k["key"]: k["valid"] for k in lin["stats"]["per_key"]}


def test_each_rotated_key_is_judged_on_its_own(results: tuple[Path, Path, Path]) -> None:
    _, good, bad = results
    keys = [f"r{i}" for i in range(N_OPS // OPS_PER_KEY)]
    assert per_key(check_run_dir(good, plan_for)) == dict.fromkeys(keys, True)
    doc = check_run_dir(bad, plan_for)
    # Every key checked, the stale one alone invalid, and named in the anomaly.
    assert per_key(doc) == {k: k != STALE_KEY for k in keys}
    lin = doc["checkers"]["linearizability"]
    assert lin["valid"] is False
    assert [a["key"] for a in lin["anomalies"]] == [STALE_KEY]
    assert lin["anomalies"][0]["op"]["f"] == "read"


@pytest.mark.slow
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_spark_checks_each_rotated_key_as_its_own_task(results: tuple[Path, Path, Path],
                                                       tmp_path: Path) -> None:
    from checkers.spark.check_job import check_runs
    from checkers.spark.session import end_session, spark_session

    root, good, bad = results
    on_spark = shutil.copytree(root, tmp_path / "spark")
    local = {d.name: check_run_dir(d, plan_for)["checkers"]["linearizability"]
             for d in (good, bad)}
    spark = spark_session()
    try:
        rows = check_runs(spark, sorted(d for d in on_spark.iterdir() if d.is_dir()), plan_for)
    finally:
        end_session(spark)
    rows = rows[rows["checker"] == "linearizability"]
    keys = {f'"r{i}"' for i in range(N_OPS // OPS_PER_KEY)}
    # One row (one task) per run and key.
    for run in (good.name, bad.name):
        assert sorted(rows[rows["run"] == run]["key"]) == sorted(keys)
    got = {(r.run, json.loads(r.key)): r.valid for r in rows.itertuples()}
    assert got == {(run, k): {True: "true", False: "false"}[v]
                   for run, lin in local.items() for k, v in per_key(
                       {"checkers": {"linearizability": lin}}).items()}
    for run, lin in local.items():
        doc = json.loads((on_spark / run / "verdicts.json").read_text())
        assert doc["checkers"]["linearizability"]["valid"] == lin["valid"]
        assert ([a["key"] for a in doc["checkers"]["linearizability"]["anomalies"]]
                == [a["key"] for a in lin["anomalies"]])
