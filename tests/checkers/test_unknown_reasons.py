"""Every built-in checker that cannot decide says why in `stats.reason`, so a
gate or a report never prints a checker name with an empty reason (issue 14,
finding 1: `durability: ` with nothing after it)."""

from __future__ import annotations

from typing import Any

from checkers import availability, divergence, durability, elections, stats
from checkers.datatypes import REGISTERS
from checkers.history import Op
from checkers.linearizability import check as check_lin
from harness.results.gate import first_detail
from nodes.raft.checkers import invariants


def ops(*events: tuple) -> list[Op]:
    return [Op(i, i * 1_000_000, p, t, f, v) for i, (p, t, f, v) in enumerate(events)]


WRITE_READ = ops((0, "invoke", "write", 1), (0, "ok", "write", 1),
                 (1, "invoke", "read", None), (1, "ok", "read", 1))
# Sixteen concurrent writes then an impossible read: no search ends in 50 ms.
HARD = ops(*[(p, "invoke", "write", p) for p in range(16)],
           *[(p, "ok", "write", p) for p in range(16)],
           (16, "invoke", "read", None), (16, "ok", "read", -1))


def undecided() -> dict[str, dict[str, Any]]:
    return {
        "durability, register without log dumps": durability.check(WRITE_READ, None, REGISTERS),
        "divergence, no dumps": divergence.check({}),
        "elections, no event lines": elections.check({"n1": []}),
        "invariants, no start time": invariants.check(WRITE_READ, {"n1": []}, {}),
        "availability, leader limits without events": availability.check(
            WRITE_READ, None, {}, {"max_quiet_leader_changes": 0}),
        "linearizability, out of time": check_lin(HARD, time_limit=0.05),
        "linearizability, ill-formed": check_lin(ops((0, "ok", "write", 1))),
        "stats, no client ops": stats.check([]),
    }


def test_every_undecided_verdict_says_why() -> None:
    for what, v in undecided().items():
        assert v["valid"] == "unknown", what
        reason = v["stats"].get("reason")
        assert isinstance(reason, str) and reason.strip(), what
        assert first_detail(v) != "the checker gave no reason", what


def test_decided_verdicts_carry_no_reason() -> None:
    dumps_less = durability.check(ops((0, "invoke", "read", None), (0, "ok", "read", None)),
                                  None, REGISTERS)
    assert dumps_less["valid"] is True and "reason" not in dumps_less["stats"]
    assert check_lin(WRITE_READ)["valid"] is True
    assert "reason" not in check_lin(WRITE_READ)["stats"]


def test_per_key_verdicts_folded_by_spark_keep_the_reason() -> None:
    from checkers.registry import merge_key_verdicts
    per_key = {"k1": check_lin(WRITE_READ), "k2": check_lin(HARD, time_limit=0.05)}
    folded = merge_key_verdicts(per_key)
    assert folded["valid"] == "unknown"
    assert folded["stats"]["reason"].startswith("1 of 2 key(s) undecided: search incomplete")
