"""Contradictory read orders in list-append: two reads of one key whose
orders disagree ([1 2] and [2 1]) cannot both be prefixes of one list, which
only grows at its end. Elle reports them as `:incompatible-order`
(elle.list-append's incompatible-orders) and counts it as an aborted read
(G1a): read committed and everything above it is ruled out, read uncommitted
is not. The twins read compatible prefixes ([1] and [1 2]) and are valid.

Elle still orders such a key by its longest read (its `append-index` takes
the longest of `sorted-values`, prefixes or not) and infers ww, wr and rw
edges from that order; a read that contradicts it is placed by the element it
saw last (Elle's `read-index`). So does faultline: the cycles those edges make
are reported beside the incompatible order. The twins of that rule
(`longest_read_ordered`) are one history in which the longest read's order
closes a G1c, as in Elle's own "contradictory read orders" test, and the same
history with that read reversed, whose order closes none.

The key's order is what the array path and the read-by-read path of the
edge builder both stand on (tests/checkers/test_elle_edge_paths.py), so each history
here is also held to both paths giving the same edges."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkers import elle
from checkers.elle.kinds import RW, WR, WW
from tests.checkers.test_elle_anomalies import History
from tests.checkers.test_elle_edge_paths import both_ways


def disagreeing_in_order(fixed: bool) -> History:
    """One read after the other, each after both appends completed."""
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["append", "x", 2]])
    h.txn(3, [["r", "x", [1, 2]]])
    h.txn(4, [["r", "x", [1, 2] if fixed else [2, 1]]])
    return h


def disagreeing_concurrently(fixed: bool) -> History:
    """All four txns overlap: no realtime order to lean on."""
    h = History()
    h.concurrent((1, [["append", "x", 1]]), (2, [["append", "x", 2]]),
                 (3, [["r", "x", [1] if fixed else [2, 1]]]), (4, [["r", "x", [1, 2]]]))
    return h


def disagreeing_inside_longer_reads(fixed: bool) -> History:
    """Three elements, the disagreement in the middle, other keys untouched:
    [1 2 3] against [1 3 2], and a read of y beside it."""
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "y", 1]]), (2, [["append", "x", 2]]),
                 (3, [["append", "x", 3]]))
    h.txn(4, [["r", "x", [1, 2, 3]], ["r", "y", [1]]])
    h.txn(5, [["r", "x", [1, 2, 3] if fixed else [1, 3, 2]], ["r", "y", [1]]])
    return h


def longest_read_ordered(cyclic: bool) -> History:
    """All five txns overlap (no process or realtime order). T1 appends x 1
    and reads y = [1], which T3 appended with x 3; x is read as [1 3] and, the
    longest read, [1 2 3] (or, when not `cyclic`, [3 2 1]). By [1 2 3], T1 ww
    T2 ww T3 wr T1 is a G1c (Elle's cycle); by [3 2 1] the ww edges run T3 ->
    T2 -> T1, with T3's wr to T1: no cycle. Lengths differ, so Elle and
    faultline pick the same longest read."""
    h = History()
    h.concurrent((1, [["append", "x", 1], ["r", "y", [1]]]), (2, [["append", "x", 2]]),
                 (3, [["append", "x", 3], ["append", "y", 1]]), (4, [["r", "x", [1, 3]]]),
                 (5, [["r", "x", [1, 2, 3] if cyclic else [3, 2, 1]]]))
    return h


CASES = [disagreeing_in_order, disagreeing_concurrently, disagreeing_inside_longer_reads]
# What else the edges of the longest read's order show: reads that ran after
# the appends they missed, in realtime (with tied lengths the longest read is
# the first in invoke order; Elle's pick among a tie is its set's order)
CYCLES = {disagreeing_in_order: {"G-single-item-realtime"}, disagreeing_concurrently: set(),
          disagreeing_inside_longer_reads: {"G-single-item-realtime"}}
# the two reads each quotes: the key's longest read (the first of that length
# in invoke order) first, then the one that is not its prefix
QUOTED = {disagreeing_in_order: [[1, 2], [2, 1]], disagreeing_concurrently: [[2, 1], [1, 2]],
          disagreeing_inside_longer_reads: [[1, 2, 3], [1, 3, 2]]}


@pytest.mark.parametrize("make", CASES)
def test_reads_in_contradictory_orders_are_an_incompatible_order(
        make: Callable[[bool], History]) -> None:
    v = elle.check(make(False).ops)
    found = [a for a in v["anomalies"] if a["type"] == "incompatible-order"]
    assert {a["type"] for a in v["anomalies"]} == {"incompatible-order"} | CYCLES[make]
    assert len(found) == 1 and found[0]["key"] == "x"
    assert found[0]["reads"] == QUOTED[make]
    assert v["valid"] is False
    models = v["stats"]["models"]
    # as Elle: G1a, so read committed and everything stronger is out...
    assert v["stats"]["not"] == ["read-committed"]
    assert models["read-committed"]["valid"] is False
    assert models["strict-serializable"]["valid"] is False
    # ...and read uncommitted, which allows aborted reads, is not
    assert models["read-uncommitted"]["valid"] is True
    assert v["stats"]["possible"] == ["strong-read-uncommitted"]


def test_the_longest_reads_order_gives_the_edges_and_its_g1c() -> None:
    v = elle.check(longest_read_ordered(True).ops)
    assert v["valid"] is False
    assert set(v["stats"]["anomaly_counts"]) == {"incompatible-order", "G1c"}
    [g1c] = [a for a in v["anomalies"] if a["type"] == "G1c"]
    # Elle's cycle [t3 t1 t2 t3]: T3 wr T1 (y 1), T1 ww T2 (x 1 then 2), T2 ww
    # T3 (x 2 then 3); the ww steps exist only by the longest read's order
    assert [(st["from"], st["to"], st["kind"], st["evidence"]) for st in g1c["steps"]] == [
        (2, 0, "wr", ("y", 1)), (0, 1, "ww", ("x", 1, 2)), (1, 2, "ww", ("x", 2, 3))]
    assert v["stats"]["not"] == ["read-committed"]
    # read committed is out already by the incompatible order (G1a); the G1c
    # alone rules out everything from read committed up, so the same boundary
    assert v["stats"]["models"]["read-uncommitted"]["valid"] is True


def test_a_longest_read_whose_order_has_no_cycle_is_only_an_incompatible_order() -> None:
    v = elle.check(longest_read_ordered(False).ops)
    assert v["valid"] is False
    assert set(v["stats"]["anomaly_counts"]) == {"incompatible-order"}
    assert v["stats"]["not"] == ["read-committed"]


@pytest.mark.parametrize("cyclic", [True, False])
def test_edges_of_a_contradicted_key_follow_its_longest_read(cyclic: bool) -> None:
    """Txn ids: T1..T5 are 0..4. [1 2 3] gives ww 0->1->2; [3 2 1] gives ww
    2->1->0, and the read [1 3] (not a prefix) saw 3, first in that order,
    so it missed 2: rw 3->1. Either way it saw T3's 3 last: wr 2->3."""
    arrays, reads = both_ways(longest_read_ordered(cyclic).ops)
    assert arrays == reads
    ww = {(a, b) for a, b, kind in reads if kind == WW}
    rw = {(a, b) for a, b, kind in reads if kind == RW}
    wr = {(a, b) for a, b, kind in reads if kind == WR}
    if cyclic:
        assert ww == {(0, 1), (1, 2)}
        assert rw == set()
        assert wr == {(2, 0), (2, 3), (2, 4)}
    else:
        assert ww == {(2, 1), (1, 0)}
        assert rw == {(3, 1)}
        assert wr == {(2, 0), (2, 3), (0, 4)}


@pytest.mark.parametrize("make", CASES)
def test_reads_that_are_prefixes_of_one_order_are_valid(
        make: Callable[[bool], History]) -> None:
    v = elle.check(make(True).ops)
    assert v["anomalies"] == []
    assert v["valid"] is True
    assert all(r["valid"] is True for r in v["stats"]["models"].values())


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("make", CASES)
def test_both_edge_paths_agree_on_contradictory_and_compatible_reads(
        make: Callable[[bool], History], fixed: bool) -> None:
    arrays, reads = both_ways(make(fixed).ops)
    assert arrays == reads
    # the reads gave edges at all (wr from the appends they saw last)
    assert any(kind for _, _, kind in reads)


def test_an_element_only_a_contradicting_read_saw_comes_after_the_order() -> None:
    """x read as [1 2] (the longest) and as [3]: 3 is not in the order, so,
    like an append no read saw, it came after the order's last element (ww
    T2 -> T3, and the reader of [1 2] missed it: rw T4 -> T3; Elle's
    previously-appended-element of an unindexed append is the order's last).
    The reader of [3] saw T3's append (wr T3 -> T5) but nothing is known to
    follow 3, so it has no rw edge (none of Elle's appends comes after 3)."""
    h = History()
    h.concurrent((1, [["append", "x", 1]]), (2, [["append", "x", 2]]),
                 (3, [["append", "x", 3]]), (4, [["r", "x", [1, 2]]]),
                 (5, [["r", "x", [3]]]))
    arrays, reads = both_ways(h.ops)
    assert arrays == reads
    assert {(a, b, kind) for a, b, kind in reads} == {
        (0, 1, WW), (1, 2, WW), (1, 3, WR), (3, 2, RW), (2, 4, WR)}
    v = elle.check(h.ops)
    assert set(v["stats"]["anomaly_counts"]) == {"incompatible-order"}
