"""Contradictory read orders in list-append: two reads of one key whose
orders disagree ([1 2] and [2 1]) cannot both be prefixes of one list, which
only grows at its end. Elle reports them as `:incompatible-order`
(elle.list-append's incompatible-orders) and counts it as an aborted read
(G1a): read committed and everything above it is ruled out, read uncommitted
is not. The twins read compatible prefixes ([1] and [1 2]) and are valid.

The key's order is what the array path and the read-by-read path of the
edge builder both stand on (tests/checkers/test_elle_edge_paths.py), so each history
here is also held to both paths giving the same edges."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkers import elle
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


CASES = [disagreeing_in_order, disagreeing_concurrently, disagreeing_inside_longer_reads]
# the two reads each quotes: the key's longest read (the first of that length
# in invoke order) first, then the one that is not its prefix
QUOTED = {disagreeing_in_order: [[1, 2], [2, 1]], disagreeing_concurrently: [[2, 1], [1, 2]],
          disagreeing_inside_longer_reads: [[1, 2, 3], [1, 3, 2]]}


@pytest.mark.parametrize("make", CASES)
def test_reads_in_contradictory_orders_are_an_incompatible_order(
        make: Callable[[bool], History]) -> None:
    v = elle.check(make(False).ops)
    found = [a for a in v["anomalies"] if a["type"] == "incompatible-order"]
    assert {a["type"] for a in v["anomalies"]} == {"incompatible-order"}
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
