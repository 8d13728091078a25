"""The list-append checker finds a whole history's wr/rw/ww edges by array
lookups, and the edges of the txns in cycles again read by read, with their
evidence. Both ways must give the same edges, on sane histories and on ones
with every planted fault (unread, failed and indeterminate appends, reads
ending in their own appends, reads that disagree)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from checkers.elle.graph import EdgeLists, _data_edges
from checkers.elle.simulate import serial_history
from checkers.elle.txns import transactions
from checkers.elle.versions import index_writers, infer_orders
from tests.elle_mutants import CASES, mutant


def both_ways(ops) -> tuple[Counter, Counter]:
    txns, _ = transactions(ops)
    versions = index_writers(txns)
    infer_orders(txns, versions)
    by_arrays, by_reads = EdgeLists(evidence=False), EdgeLists(evidence=True)
    _data_edges(by_arrays, txns, versions, by_arrays=True)
    _data_edges(by_reads, txns, versions)
    assert by_reads.evidence is not None and len(by_reads.evidence) == len(by_reads.src)
    return (Counter(zip(by_arrays.src, by_arrays.dst, by_arrays.kind, strict=True)),
            Counter(zip(by_reads.src, by_reads.dst, by_reads.kind, strict=True)))


@pytest.mark.parametrize("seed", range(0, CASES, 3))
def test_array_edges_are_the_read_by_read_edges_on_faulty_histories(seed: int) -> None:
    arrays, reads = both_ways(mutant(seed))
    assert arrays == reads


@pytest.mark.parametrize("seed", range(6))
def test_array_edges_are_the_read_by_read_edges_on_larger_histories(seed: int) -> None:
    rng = random.Random(seed)
    ops = serial_history(2000, keys=5, concurrency=8, max_writes_per_key=30, p_fail=0.1,
                         p_info=0.1, p_stale=0.05 * (seed % 2), rng=rng)
    arrays, reads = both_ways(ops)
    assert sum(reads.values()) > 1000
    assert arrays == reads


def test_most_reads_take_the_array_lookups(monkeypatch) -> None:
    # Else the comparisons above would compare the read-by-read way with itself.
    from checkers.elle import graph

    txns, _ = transactions(serial_history(2000, rng=random.Random(2)))
    versions = index_writers(txns)
    infer_orders(txns, versions)
    calls = []
    real = graph._read_edges
    monkeypatch.setattr(graph, "_read_edges", lambda *a: calls.append(1) or real(*a))
    _data_edges(EdgeLists(evidence=False), txns, versions, by_arrays=True)
    reads = sum(len(t.read_mops) for t in txns)
    assert reads > 1000 and len(calls) < reads / 5
