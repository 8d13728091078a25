"""checkers.writes: the one extraction of what a history wrote, which durability
and node-state both judge by."""

from __future__ import annotations

from typing import Any

import pytest

from checkers import durability, node_state
from checkers.datatypes import LISTS, LOGS, REGISTER_TXNS, REGISTERS
from checkers.history import QUORUM, Op, client_ops, pair_ops
from checkers.writes import writes_of


def history(*calls: tuple[Any, ...]) -> list[Op]:
    """(f, value, key, completion type or None, completion level) per call, one
    after another, 1 s apart."""
    ops: list[Op] = []
    for process, (f, value, key, done, level) in enumerate(calls):
        ops.append(Op(len(ops), len(ops) * 10**9, process, "invoke", f, value, key))
        if done is not None:
            ops.append(Op(len(ops), len(ops) * 10**9, process, done, f, value, key, level=level))
    return ops


def writes(ops: list[Op], data: str) -> list[tuple[Any, Any, str]]:
    return [(w.key, w.value, w.status) for w in writes_of(pair_ops(client_ops(ops)), data)]


def test_registers_write_and_cas_write_reads_do_not() -> None:
    ops = history(("write", 1, "r", "ok", None), ("cas", [1, 2], "r", "fail", None),
                  ("read", None, "r", "ok", None), ("write", 3, "s", None, None))
    assert writes(ops, REGISTERS) == [("r", 1, "ok"), ("r", 2, "fail"), ("s", 3, "info")]


def test_txns_write_the_mops_of_their_data_type_only() -> None:
    txn = [["append", "k", 1], ["r", "k", None], ["w", "x", 7]]
    ops = history(("txn", txn, None, "ok", None))
    assert writes(ops, LISTS) == [("k", 1, "ok")]
    assert writes(ops, REGISTER_TXNS) == [("x", 7, "ok")]


def test_log_appends_write_their_value_to_their_log() -> None:
    ops = history(("append", ["l", 9], None, "ok", None), ("read", ["l", 0], None, "ok", None))
    assert writes(ops, LOGS) == [("l", 9, "ok")]


def test_an_ack_below_quorum_is_indeterminate_and_keeps_its_level() -> None:
    ops = history(("write", 1, "r", "ok", "leader"), ("write", 2, "r", "ok", QUORUM))
    [low, quorum] = writes_of(pair_ops(client_ops(ops)), REGISTERS)
    assert (low.status, low.level, low.acked) == ("info", "leader", None)
    assert (quorum.status, quorum.level) == ("ok", None)
    assert quorum.acked == quorum.completion.time and quorum.invoked == quorum.invoke.time


def test_malformed_values_write_nothing() -> None:
    ops = history(("cas", 5, "r", "ok", None), ("txn", "junk", None, "ok", None),
                  ("append", ["l"], None, "ok", None))
    for data in (REGISTERS, LISTS, LOGS):
        assert writes(ops, data) == []


@pytest.mark.parametrize("data", [REGISTERS, LISTS, LOGS])
def test_durability_and_node_state_judge_by_the_same_writes(data: str) -> None:
    """Both checkers use this extraction: a write the one counts, the other does too
    (durability's `writes` stat and node-state's `acknowledged_writes`)."""
    if data == REGISTERS:
        calls = [("write", 1, "r", "ok", None), ("write", 2, "r", "ok", "leader"),
                 ("cas", [1, 3], "r", "ok", None)]
    elif data == LISTS:
        calls = [("txn", [["append", "k", 1]], None, "ok", None),
                 ("txn", [["append", "k", 2], ["append", "k", 3]], None, "fail", None)]
    else:
        calls = [("append", ["l", 1], None, "ok", None), ("append", ["l", 2], None, None, None)]
    ops = history(*calls)
    acked = sum(s == "ok" for _, _, s in writes(ops, data))
    d = durability.check(ops, None, data)
    assert d["stats"]["writes"]["ok"] == acked
    if data != LOGS:   # node-state counts log acks from their offsets, not from writes
        states = {"n1": {"position": 1, "digest": "d", "keys": []}}
        n = node_state.check(states, ops, data)
        assert n["stats"]["acknowledged_writes"] == acked


def test_node_state_judges_register_txns_by_the_same_writes() -> None:
    """The one user of register-txn writes (durability has no rules for them):
    a quorum-acked txn's `w` must be on the nodes, a leader-acked one may be
    lost, and a value no txn wrote is flagged."""
    ops = history(("txn", [["w", "x", 7], ["r", "y", None]], None, "ok", None),
                  ("txn", [["w", "y", 8]], None, "ok", "leader"))
    assert writes(ops, REGISTER_TXNS) == [("x", 7, "ok"), ("y", 8, "info")]

    def judged(keys: list[list[Any]]) -> tuple[Any, list[str]]:
        states = {n: {"position": 1, "keys": keys} for n in ("n1", "n2")}
        v = node_state.check(states, ops, REGISTER_TXNS)
        assert v["stats"]["acknowledged_writes"] == 1
        return v["valid"], sorted({a["type"] for a in v["anomalies"]})

    assert judged([["x", 7], ["y", 8]]) == (True, [])
    assert judged([["x", 7]]) == (True, [])                # only the leader-acked write gone
    assert judged([["y", 8]]) == (False, ["stale-value"])  # the quorum-acked one gone
    assert judged([["x", 6]]) == (False, ["unwritten-value"])
    assert durability.check(ops, None, REGISTER_TXNS)["valid"] == "unknown"
