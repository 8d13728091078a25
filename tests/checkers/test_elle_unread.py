"""Committed appends that no read saw: lists only grow, so such an append came
after every element of its key's longest read. Hand-written histories where
that place closes a cycle, each with a twin where it does not."""

from __future__ import annotations

import sys
from pathlib import Path

from checkers import elle

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import History  # noqa: E402

# The five models these tests were written for; the rest of the lattice is
# tested in test_elle_lattice.py.
FIVE = ("read-committed", "repeatable-read", "snapshot-isolation", "serializable",
        "strict-serializable")


def models(h: History) -> dict:
    got = elle.check(h.ops)["stats"]["models"]
    return {m: got[m]["valid"] for m in FIVE}


def write_skew_unread(fixed: bool) -> History:
    """Each txn reads a key empty and appends to the other's key; nobody reads
    those appends. Fixed: the second txn saw the first one's append."""
    h = History()
    h.concurrent((1, [["r", "x", []], ["append", "y", 1]]),
                 (2, [["r", "y", [1] if fixed else []], ["append", "x", 1]]))
    return h


def test_write_skew_with_unread_appends_is_g2_item() -> None:
    v = elle.check(write_skew_unread(False).ops)
    assert [a["type"] for a in v["anomalies"]] == ["G2-item"]
    [a] = v["anomalies"]
    assert "no read saw" in a["explanation"]
    assert [s["kind"] for s in a["steps"]] == ["rw", "rw"]
    assert models(write_skew_unread(False)) == {
        "read-committed": True, "repeatable-read": False, "snapshot-isolation": True,
        "serializable": False, "strict-serializable": False}


def test_write_skew_twin_is_serializable() -> None:
    v = elle.check(write_skew_unread(True).ops)
    assert v["valid"] is True and v["anomalies"] == []


def g_single_closed_by_unread_append(fixed: bool) -> History:
    """T1 -rw-> T2 -wr-> T3 -ww-> T1: T1 missed T2's append to y, T3 saw T2's
    append to z, and T1's append to x, which no read saw, came after T3's.
    Fixed: T1 saw T2's append, so T2, T3, T1 is a serial order."""
    h = History()
    h.txn(2, [["append", "y", 1], ["append", "z", 1]])
    # T4 overlaps T1: reading x without T1's append is no stale read.
    h.concurrent((1, [["r", "y", [1] if fixed else []], ["append", "x", 2]]),
                 (3, [["r", "z", [1]], ["append", "x", 1]]),
                 (4, [["r", "x", [1]]]))
    return h


def test_g_single_closed_by_an_unread_append() -> None:
    v = elle.check(g_single_closed_by_unread_append(False).ops, model="serializable")
    assert v["valid"] is False
    types = {a["type"] for a in v["anomalies"]}
    assert "G-single-item" in types
    [a] = [a for a in v["anomalies"] if a["type"] == "G-single-item"]
    kinds = sorted(s["kind"] for s in a["steps"])
    assert kinds == ["rw", "wr", "ww"]
    ww = next(s for s in a["steps"] if s["kind"] == "ww")
    assert ww["evidence"][:3] == ["x", 1, 2] or tuple(ww["evidence"][:3]) == ("x", 1, 2)
    assert models(g_single_closed_by_unread_append(False))["snapshot-isolation"] is False


def test_g_single_twin_is_serializable() -> None:
    v = elle.check(g_single_closed_by_unread_append(True).ops)
    assert v["valid"] is True and v["anomalies"] == []


def test_unread_appends_are_not_ordered_among_themselves() -> None:
    # Two committed appends nobody read: either may have come first, so no
    # cycle through them, whatever else they did.
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "y", 2]]),
                 (2, [["append", "x", 2], ["append", "y", 1]]))
    v = elle.check(h.ops)
    # no edge at all: nothing to judge
    assert v["valid"] == "unknown" and v["anomalies"] == []
    assert "ww" not in v["stats"]["edges"]


def test_failed_and_indeterminate_unread_appends_give_no_edges() -> None:
    for end in ("fail", "info"):
        h = History()
        h.txn(1, [["r", "x", []], ["append", "y", 1]])
        h.invoke(2, [["r", "y", None], ["append", "x", 1]])
        getattr(h, end)(2)
        v = elle.check(h.ops)
        # a failed txn happened not at all: one txn left, nothing to judge
        assert v["valid"] is (True if end == "info" else "unknown"), end
        assert v["anomalies"] == [], end
        assert "rw" not in v["stats"]["edges"], end


def test_reads_of_a_prefix_miss_the_next_read_element_not_the_unread_ones() -> None:
    # T3 read x as [1]: it missed 2 (read by T4) and, through 2, the unread 3.
    # Its rw edge goes to 2's writer only; 3's writer follows 2's by ww.
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(3, [["r", "x", [1]]])
    h.txn(2, [["append", "x", 2]])
    h.txn(4, [["r", "x", [1, 2]]])
    h.txn(5, [["append", "x", 3]])
    v = elle.check(h.ops)
    assert v["valid"] is True
    assert v["stats"]["edges"]["rw"] == 2  # T3 -> T2, T4 -> T5
    assert v["stats"]["edges"]["ww"] == 2  # T1 -> T2, T2 -> T5
