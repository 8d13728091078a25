"""Consistency levels per ack (Redpanda raft recovery RFC): checkers judge a
`quorum` ack as a promise and a `leader`/`none` ack as no promise at all."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from checkers import durability, elle, linearizability
from checkers.acks import as_promised, relaxed
from checkers.datatypes import REGISTERS
from checkers.history import Op


class H:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def call(self, process: int, f: str, value: Any, result: Any = "same", typ: str = "ok",
             level: str | None = None, key: Any = None) -> None:
        t = len(self.ops) * 1_000_000
        self.ops.append(Op(len(self.ops), t, process, "invoke", f, value, key))
        done = value if result == "same" else result
        self.ops.append(Op(len(self.ops), t + 1, process, typ, f, done, key, level=level))


def lost_register_write(level: str | None) -> list[Op]:
    """w1 acked, w2 acked at `level`, then a read that still sees 1: w2 was lost."""
    h = H()
    h.call(0, "write", 1)
    h.call(1, "write", 2, level=level)
    h.call(0, "read", None, result=1)
    return h.ops


def test_op_level_round_trips_and_a_bad_level_is_refused():
    op = Op(3, 10, 1, "ok", "write", 5, level="leader")
    assert Op.from_map(op.to_map()) == op
    assert "level" not in Op(3, 10, 1, "ok", "write", 5).to_map()
    with pytest.raises(ValueError, match="level"):
        Op.from_map(op.to_map() | {"level": "eventually"})


def test_relaxed_acks_become_indeterminate_quorum_acks_stay():
    ops = lost_register_write("leader")
    promised = as_promised(ops)
    assert [o.type for o in promised] == ["invoke", "ok", "invoke", "info", "invoke", "ok"]
    assert promised[3].error == "acked-at-leader"
    assert as_promised(lost_register_write("quorum")) == lost_register_write("quorum")
    assert not relaxed(replace(ops[3], type="fail"))


@pytest.mark.parametrize("level, valid", [(None, False), ("quorum", False),
                                          ("leader", True), ("none", True)])
def test_linearizability_judges_only_quorum_acks(level, valid):
    v = linearizability.check(lost_register_write(level), model="cas-register")
    assert v["valid"] is valid, v


def put(v: int) -> dict:
    return {"op": "put", "key": "r", "value": v, "rid": v}


def dumps_with(*values: int) -> dict[str, dict]:
    entries = [{"offset": i, "epoch": 1, "committed": True, "digest": "0", "payload": put(v)}
               for i, v in enumerate(values)]
    return {"n1": {"node": "n1", "log_start_offset": 0, "log_end_offset": len(entries),
                   "high_watermark": len(entries), "epoch": 1, "epochs": [[1, 0]],
                   "entries": entries}}


@pytest.mark.parametrize("level", ["leader", "none"])
def test_durability_counts_relaxed_losses_without_an_anomaly(level):
    v = durability.check(lost_register_write(level), dumps_with(1), REGISTERS)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["relaxed_acks"] == {level: {"acked": 1, "lost": 1}}


def test_durability_flags_a_lost_quorum_write():
    v = durability.check(lost_register_write("quorum"), dumps_with(1), REGISTERS)
    assert v["valid"] is False
    assert [a["type"] for a in v["anomalies"]] == ["lost-write"]
    assert "relaxed_acks" not in v["stats"]


def test_durability_counts_relaxed_writes_that_survived():
    v = durability.check(lost_register_write("leader"), dumps_with(1, 2), REGISTERS)
    assert v["stats"]["relaxed_acks"] == {"leader": {"acked": 1, "lost": 0}}


def test_elle_list_append_read_then_lost_relaxed_append_is_not_an_anomaly():
    # An acked append missing from a later read, though invoked after its ack:
    # with a quorum ack Elle finds the read-before-write cycle (strict
    # serializability); acked at leader, the append may have been lost.
    def history(level: str | None) -> list[Op]:
        h = H()
        h.call(0, "txn", [["append", "x", 1]])
        h.call(1, "txn", [["append", "x", 2]], level=level)
        h.call(0, "txn", [["r", "x", None]], result=[["r", "x", [1]]])
        h.call(1, "txn", [["append", "x", 3]])
        h.call(0, "txn", [["r", "x", None]], result=[["r", "x", [1, 3]]])
        return h.ops

    assert elle.check(history("leader"))["valid"] is True
    quorum = elle.check(history(None))
    assert quorum["valid"] is not True, quorum
