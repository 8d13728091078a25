"""The list-append checker's fast path (`checkers.elle.fast`) says only what
the object path (`checkers.elle.check`) says: on clean histories the same
verdict, stats and edge counts included (timings aside); on a history with
any anomaly it defers (None), and the object path finds the anomaly. Twins:
each anomalous history below has a clean one beside it that the fast path
judges, as the object path does."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from checkers import elle
from checkers.elle.fast import fast_check
from checkers.elle.simulate import serial_history
from checkers.history import Op, pack_op, read_history, read_txn_ops
from harness.cli import main

MODELS = ["strict-serializable", "serializable", "snapshot-isolation", "read-committed"]


def _write(ops: list[Op], path: Path) -> Path:
    path.write_bytes(b"".join(pack_op(op) for op in ops))
    return path


def _comparable(v: dict) -> dict:
    v = json.loads(json.dumps(v, default=str))
    for timing in ("graph_s", "cycle_search_s"):
        v["stats"].pop(timing, None)
    return v


def both(ops: list[Op], tmp_path: Path, model: str = "strict-serializable"
         ) -> tuple[dict | None, dict]:
    """The fast path's verdict (None: it deferred) and the object path's, on
    `ops` written as a msgpack history and read back as check-elle reads it."""
    path = _write(ops, tmp_path / "history.msgpack")
    txn_ops = read_txn_ops(path)
    fast = fast_check(txn_ops, model) if txn_ops is not None else None
    h = read_history(path)
    full = elle.check(h.ops, model=model, prefix_keys=h.prefix_keys)
    return (None if fast is None else _comparable(fast)), _comparable(full)


def txns(*specs: tuple[int, str, list]) -> list[Op]:
    """Ops from (process, type, micro-ops): an invoke's reads are nil."""
    ops = []
    for i, (p, typ, mops) in enumerate(specs):
        value = [[f, k, None if typ == "invoke" and f == "r" else v] for f, k, v in mops]
        ops.append(Op(i, i, p, typ, "txn", value))
    return ops


def serial(*steps: tuple[int, str, list]) -> list[Op]:
    """Each (process, status, micro-ops as completed) invoked and completed
    before the next begins."""
    specs: list[tuple[int, str, list]] = []
    for p, status, mops in steps:
        specs += [(p, "invoke", mops), (p, status, mops)]
    return txns(*specs)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("max_writes", "p_fail", "p_info"),
                         [(256, 0.02, 0.02), (8, 0.0, 0.0), (32, 0.1, 0.1)])
def test_clean_generated_histories_get_the_object_paths_verdict(
        tmp_path: Path, seed: int, max_writes: int, p_fail: float, p_info: float) -> None:
    ops = serial_history(3000, keys=10, concurrency=10, max_writes_per_key=max_writes,
                         p_fail=p_fail, p_info=p_info, rng=random.Random(seed))
    for model in MODELS:
        fast, full = both(ops, tmp_path, model)
        assert full["valid"] is True and not full["anomalies"]
        assert fast == full


def test_without_the_candidate_order_the_components_decide(tmp_path: Path,
                                                          monkeypatch: Any) -> None:
    """No rounds of the candidate order: acyclicity is left to the strongly
    connected components, with the same verdict."""
    from checkers.elle import fast

    ops = serial_history(3000, keys=10, concurrency=10, p_fail=0.02, p_info=0.02,
                         rng=random.Random(7))
    monkeypatch.setattr(fast, "ORDER_ROUNDS", 0)
    fast_v, full = both(ops, tmp_path)
    assert fast_v == full and full["valid"] is True


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stale_reads_are_left_to_the_object_path(tmp_path: Path, seed: int) -> None:
    ops = serial_history(3000, keys=10, concurrency=10, p_fail=0.02, p_info=0.02,
                         p_stale=0.01, rng=random.Random(seed))
    fast, full = both(ops, tmp_path)
    assert full["valid"] is False
    assert fast is None


# (name, anomalous history, the anomaly the object path finds in it, its clean twin)
A, R = "append", "r"
TWINS = [
    ("G1a: read a failed txn's append",
     serial((0, "fail", [[A, 1, 5]]), (1, "ok", [[A, 1, 1]]), (2, "ok", [[R, 1, [5, 1]]])),
     "G1a",
     serial((0, "fail", [[A, 1, 5]]), (1, "ok", [[A, 1, 1]]), (2, "ok", [[R, 1, [1]]]))),
    ("G1b: read an intermediate append",
     serial((0, "ok", [[A, 1, 1], [A, 1, 2]]), (1, "ok", [[R, 1, [1]]])),
     "G1b",
     serial((0, "ok", [[A, 1, 1], [A, 1, 2]]), (1, "ok", [[R, 1, [1, 2]]]))),
    ("internal: a txn missing its own append",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[A, 1, 2], [R, 1, [1]]]),
            (2, "ok", [[R, 1, [1, 2]]])),
     "internal",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[A, 1, 2], [R, 1, [1, 2]]]),
            (2, "ok", [[R, 1, [1, 2]]]))),
    ("internal: a reread that changed",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, []], [R, 1, [1]]])),
     "internal",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1]], [R, 1, [1]]]))),
    ("duplicate elements",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1, 1]]])),
     "duplicate-elements",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1]]]))),
    ("lost update: two txns read the same version and both append",
     txns((0, "invoke", [[R, 1, None], [A, 1, 2]]), (1, "invoke", [[R, 1, None], [A, 1, 3]]),
          (0, "ok", [[R, 1, []], [A, 1, 2]]), (1, "ok", [[R, 1, []], [A, 1, 3]]),
          (2, "invoke", [[R, 1, None]]), (2, "ok", [[R, 1, [2, 3]]])),
     "lost-update",
     txns((0, "invoke", [[R, 1, None], [A, 1, 2]]), (1, "invoke", [[R, 1, None], [A, 1, 3]]),
          (0, "ok", [[R, 1, []], [A, 1, 2]]), (1, "ok", [[R, 1, [2]], [A, 1, 3]]),
          (2, "invoke", [[R, 1, None]]), (2, "ok", [[R, 1, [2, 3]]]))),
    ("future read: a read holding the txn's own later append",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1, 2]], [A, 1, 2]])),
     "future-read",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1]], [A, 1, 2]]))),
    ("incompatible orders",
     serial((0, "ok", [[A, 1, 1], [A, 2, 1]]), (1, "ok", [[A, 1, 2]]),
            (2, "ok", [[R, 1, [2, 1]]]), (3, "ok", [[R, 1, [1, 2]]])),
     "incompatible-order",
     serial((0, "ok", [[A, 1, 1], [A, 2, 1]]), (1, "ok", [[A, 1, 2]]),
            (2, "ok", [[R, 1, [1, 2]]]), (3, "ok", [[R, 1, [1, 2]]]))),
    ("G1c: two txns each reading the other's append",
     txns((0, "invoke", [[A, 1, 1], [R, 2, None]]), (1, "invoke", [[A, 2, 1], [R, 1, None]]),
          (0, "ok", [[A, 1, 1], [R, 2, [1]]]), (1, "ok", [[A, 2, 1], [R, 1, [1]]])),
     "G1c",
     txns((0, "invoke", [[A, 1, 1], [R, 2, None]]), (1, "invoke", [[A, 2, 1], [R, 1, None]]),
          (0, "ok", [[A, 1, 1], [R, 2, []]]), (1, "ok", [[A, 2, 1], [R, 1, [1]]]))),
    ("G2-item: write skew",
     txns((0, "invoke", [[R, 1, None], [A, 2, 1]]), (1, "invoke", [[R, 2, None], [A, 1, 1]]),
          (0, "ok", [[R, 1, []], [A, 2, 1]]), (1, "ok", [[R, 2, []], [A, 1, 1]]),
          (2, "invoke", [[R, 1, None], [R, 2, None]]), (2, "ok", [[R, 1, [1]], [R, 2, [1]]])),
     "G2-item",
     txns((0, "invoke", [[R, 1, None], [A, 2, 1]]), (1, "invoke", [[R, 2, None], [A, 1, 1]]),
          (0, "ok", [[R, 1, []], [A, 2, 1]]), (1, "ok", [[R, 2, [1]], [A, 1, 1]]),
          (2, "invoke", [[R, 1, None], [R, 2, None]]), (2, "ok", [[R, 1, [1]], [R, 2, [1]]]))),
    ("G-single: a stale read after a realtime successor's append",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[A, 1, 2], [A, 2, 1]]),
            (2, "ok", [[R, 2, [1]], [R, 1, [1]]])),
     "G-single-item",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[A, 1, 2], [A, 2, 1]]),
            (2, "ok", [[R, 2, [1]], [R, 1, [1, 2]]]))),
]


@pytest.mark.parametrize(("name", "bad", "anomaly", "good"), TWINS, ids=[t[0] for t in TWINS])
def test_each_anomaly_defers_to_the_object_path(tmp_path: Path, name: str, bad: list[Op],
                                                anomaly: str, good: list[Op]) -> None:
    fast, full = both(bad, tmp_path)
    assert anomaly in full["stats"]["anomaly_counts"], full["stats"]["anomaly_counts"]
    assert full["valid"] is False
    assert fast is None
    fast, full = both(good, tmp_path)
    assert full["valid"] is True, full["anomalies"]
    assert fast == full


# Histories the fast path cannot vouch for although they may be valid: it
# defers, and the object path judges (and warns) as before.
DEFERRED = [
    ("a completion without its invoke",
     txns((0, "ok", [[A, 1, 1]]), (1, "invoke", [[R, 1, None]]), (1, "ok", [[R, 1, [1]]]))),
    ("a string key",
     serial((0, "ok", [[A, "x", 1]]), (1, "ok", [[R, "x", [1]]]))),
    ("an element nobody appended",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1, 9]]]))),
    ("an element appended twice",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[A, 1, 1]]), (2, "ok", [[R, 1, [1]]]))),
    ("every txn failed", serial((0, "fail", [[A, 1, 1]]), (1, "fail", [[A, 1, 2]]))),
    ("a process invoking twice",
     txns((0, "invoke", [[A, 1, 1]]), (0, "invoke", [[A, 1, 2]]), (0, "ok", [[A, 1, 2]]))),
    ("nothing ordered but realtime",
     serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[A, 2, 1]]))),
]


@pytest.mark.parametrize(("name", "ops"), DEFERRED, ids=[d[0] for d in DEFERRED])
def test_what_the_fast_path_cannot_vouch_for_is_deferred(tmp_path: Path, name: str,
                                                         ops: list[Op]) -> None:
    fast, _ = both(ops, tmp_path)
    assert fast is None


def test_the_mutant_corpus_agrees(tmp_path: Path) -> None:
    """tests/elle_mutants.py's 120 histories with planted faults (short,
    swapped, repeated, aborted, dropped and emptied reads; stale reads),
    each under 3 models: the fast path answers only where the object path
    finds nothing, and then as it does."""
    from tests.elle_mutants import CASES, MODELS, mutant

    answered = deferred = 0
    for seed in range(CASES):
        ops = mutant(seed)
        for model in MODELS:
            fast, full = both(ops, tmp_path, model)
            if full["stats"]["anomaly_counts"]:
                assert fast is None, (seed, model, full["stats"]["anomaly_counts"])
                deferred += 1
            elif fast is not None:
                assert fast == full, (seed, model)
                answered += 1
    assert answered >= 30 and deferred >= 30, (answered, deferred)


def test_a_read_of_nil_is_an_empty_read_either_way(tmp_path: Path) -> None:
    ops = serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 2, None], [R, 1, [1]]]),
                 (2, "ok", [[A, 2, 1]]))
    fast, full = both(ops, tmp_path)
    assert full["valid"] is True
    assert fast == full


def test_a_history_over_the_memory_budget_is_left_to_the_object_path(tmp_path: Path) -> None:
    """The object path refuses it (unknown, nothing built); the fast path,
    whose estimate of its size is never below the object path's, defers."""
    ops = serial_history(2000, rng=random.Random(5))
    path = _write(ops, tmp_path / "history.msgpack")
    assert fast_check(read_txn_ops(path), memory_limit_mb=1) is None
    assert elle.check(read_history(path).ops, memory_limit_mb=1)["valid"] == "unknown"
    assert fast_check(read_txn_ops(path), memory_limit_mb=64) is not None


def test_what_the_reader_refuses_is_never_judged(tmp_path: Path) -> None:
    """A NaN in an ok txn's invoke (whose value neither path judges): the
    reader refuses the history, so the fast path must not answer."""
    from checkers.history import HistoryError

    ops = serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1]]]))
    ops[0].value = [[A, 1, float("nan")]]
    path = _write(ops, tmp_path / "h.msgpack")
    with pytest.raises(HistoryError):
        read_history(path)
    assert read_txn_ops(path) is None


def test_an_op_near_the_readers_limits_is_left_to_the_object_path(tmp_path: Path) -> None:
    # one read of 300k elements (~1.2 MB, near MAX_CONTAINER_LEN bytes),
    # appended 5000 a txn
    steps = [(p, "ok", [[A, 1, e] for e in range(p * 5000, (p + 1) * 5000)]) for p in range(60)]
    ops = serial(*steps, (60, "ok", [[R, 1, list(range(300_000))]]))
    path = _write(ops, tmp_path / "h.msgpack")
    assert fast_check(read_txn_ops(path)) is None
    # and with a read of 30k, the same history is judged
    ops = serial(*steps[:6], (60, "ok", [[R, 1, list(range(30_000))]]))
    assert fast_check(read_txn_ops(_write(ops, tmp_path / "h.msgpack"))) is not None


def _with_nemesis(ops: list[Op], every: int, value: Any) -> list[Op]:
    """`ops` with a nemesis invoke and info after every `every` ops."""
    out: list[Op] = []
    for i, op in enumerate(ops):
        out.append(op)
        if i % every == every - 1:
            out.append(Op(0, 0, "nemesis", "invoke", "start-partition", value, node="n1"))
            out.append(Op(0, 0, "nemesis", "info", "start-partition", value))
    for i, op in enumerate(out):
        op.index = i
    return out


def test_nemesis_ops_are_left_out_as_the_object_path_leaves_them(tmp_path: Path) -> None:
    ops = serial_history(3000, keys=10, concurrency=10, p_fail=0.02, p_info=0.02,
                         rng=random.Random(8))
    ops = _with_nemesis(ops, 97, {"nodes": ["n1", "n2"], "grudge": {"n1": ["n3"]}})
    for model in ("strict-serializable", "read-committed"):
        fast, full = both(ops, tmp_path, model)
        assert full["valid"] is True
        assert fast == full
    stale = serial_history(3000, keys=10, concurrency=10, p_stale=0.01, rng=random.Random(8))
    fast, full = both(_with_nemesis(stale, 97, None), tmp_path)
    assert full["valid"] is False and fast is None


def test_a_nemesis_value_the_reader_refuses_is_never_judged(tmp_path: Path) -> None:
    from checkers.history import HistoryError

    ops = _with_nemesis(serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1]]])), 2,
                        {"delay": float("inf")})
    path = _write(ops, tmp_path / "h.msgpack")
    with pytest.raises(HistoryError):
        read_history(path)
    assert read_txn_ops(path) is None


def test_a_client_op_that_is_not_a_txn_is_not_read_as_one(tmp_path: Path) -> None:
    ops = serial((0, "ok", [[A, 1, 1]]), (1, "ok", [[R, 1, [1]]]))
    ops += [Op(len(ops), 0, 2, "invoke", "read", None), Op(len(ops) + 1, 0, 2, "ok", "read", 1)]
    assert read_txn_ops(_write(ops, tmp_path / "h.msgpack")) is None


def test_elles_unit_histories_with_int_keys_agree(tmp_path: Path) -> None:
    """Elle's own list-append unit-test histories (tests/data), their keys
    made ints and each completion recorded alone given an invoke just before
    it (the fast path defers on lone completions): wherever the fast path
    answers it answers as the object path, and it defers on every history
    with an anomaly."""
    from tests.checkers.test_elle_unit_histories import DATA, history

    judged = 0
    for case in DATA["cases"]:
        if case["workload"] != "list-append":
            continue
        ops = _paired(history(case))
        for op in ops:
            op.value = [[f, "xyztu".index(k), v] for f, k, v in op.value]
        for check in case["checks"]:
            model = check["model"] or "strict-serializable"
            fast, full = both(ops, tmp_path, model)
            if full["stats"]["anomaly_counts"]:
                assert fast is None, case["name"]
            elif fast is not None:
                judged += 1
                assert fast == full, case["name"]
    assert judged >= 1


def _paired(ops: list[Op]) -> list[Op]:
    out: list[Op] = []
    open_: set[Any] = set()
    for op in ops:
        if op.type == "invoke":
            open_.add(op.process)
        elif op.process in open_:
            open_.discard(op.process)
        else:
            out.append(Op(0, 0, op.process, "invoke", "txn",
                          [[f, k, None if f == "r" else v] for f, k, v in op.value]))
        out.append(op)
    for i, op in enumerate(out):
        op.index = op.time = i
    return out


def test_check_elle_prints_the_same_verdict_either_way(tmp_path: Path, capsys: Any,
                                                       monkeypatch: Any) -> None:
    from harness.commands import check_elle

    ops = serial_history(2000, keys=10, concurrency=10, p_fail=0.02, p_info=0.02,
                         rng=random.Random(4))
    path = _write(ops, tmp_path / "history.msgpack")
    verdicts = []
    for threshold in (0, 1 << 40):  # the fast path first; the object path alone
        monkeypatch.setattr(check_elle, "FAST_FROM_BYTES", threshold)
        assert main(["check-elle", str(path), "--model", "serializable"]) == 0
        verdicts.append(_comparable(json.loads(capsys.readouterr().out)))
    assert verdicts[0] == verdicts[1]
