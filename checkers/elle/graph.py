"""The dependency graph between transactions. Each edge has a kind saying why
the source must come before the target, and for data dependencies the
evidence (key and elements) that the explanations quote:

- ww: the target appended the next element after the source's, to some key,
  or appended an element no read saw after the source's last read one;
- wr: the target read a list ending in the source's element;
- rw: the source read a list that stops just before the target's element
  (an anti-dependency: it missed the target's append), or read the whole
  list while the target's append, which no read saw, came later;
- process: the same client process ran the source and then the target;
- realtime: the source completed before the target was invoked.

Failed txns are not nodes: they did not happen. Info txns may have happened;
they are nodes, and get data edges only where their appends were observed.

Two representations, because a sane history's graph is large and acyclic:
`Edges` holds every edge as flat integer arrays (networkx takes ~10x as long
and ~5x the memory to build and search a 100k-txn graph), whose strongly
connected components are found without building any graph object. Only the
txns in a component of more than one become a networkx DiGraph, the graph of
record that the cycle search walks and the explanations quote.

A large history's work is done by numpy's array operations, and its
components by scipy's sparse-graph routines in C: a key's order lists its
elements' writers, and a read, being a prefix of it, saw what the slot at its
length holds and missed the next live one (`_edges_by_arrays`; reads that end
in their own appends, missed only unread ones, or are of a key whose reads
disagree go the long way). A history
of fewer than `ARRAYS_FROM_TXNS` txns is judged in pure Python (read by read,
Tarjan's algorithm over the edge arrays), which costs less than importing
numpy (~0.1 s) and scipy (~0.3 s), a large part of what a command checking
one history pays; unless numpy is loaded already, when the arrays pay from
`ARRAYS_LOADED_FROM_TXNS` txns on (the verdict is the same either way).
The txns of cycles get their data edges again read by read, with the
evidence the explanations quote (`_read_edges`); tests hold the ways equal.

Realtime order is encoded for the component search with one barrier node per
completion: each completed txn points to its completion's barrier, barriers
point to the next, and a barrier points to every txn invoked after it and
before the next completion. A txn then reaches another through barriers
exactly when it completed before the other was invoked: two edges per txn
instead of one per pair of concurrent txns. The graph of record gets real
realtime edges between its own txns.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any

from checkers.elle.kinds import ALL, KIND_NAMES, PROCESS, REALTIME, RW, WR, WW
from checkers.elle.txns import FAIL, OK, Txn
from checkers.elle.versions import Versions, own_suffix_start

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np

# A node id: a txn's or a barrier's (two per txn at most), 4 bytes.
_NODE = "i"
assert array(_NODE).itemsize == 4

# Marks the evidence of an edge to an append no read saw.
UNREAD = "unread"


# Histories of at least this many txns are judged with numpy and scipy (see
# the module's docstring); smaller ones never import them...
ARRAYS_FROM_TXNS = 15_000
# ...but use numpy from this many if some other part of the process loaded it.
ARRAYS_LOADED_FROM_TXNS = 2_000


def _large(n_txns: int) -> bool:
    return n_txns >= ARRAYS_FROM_TXNS or (n_txns >= ARRAYS_LOADED_FROM_TXNS
                                          and "numpy" in sys.modules)


@dataclass
class Edges:
    """Every edge of the graph: `src[i] -> dst[i]` for `kind[i]`. Nodes below
    `n_txns` are txn ids, the rest realtime barriers. The data edges' evidence
    is not kept: most edges are in no cycle, and the few that are get theirs
    from `data_edges`, run again (as Elle explains a cycle's edges once it has
    found the cycle)."""

    src: array
    dst: array
    kind: array
    data_edges: Callable[[EdgeLists], None]
    n_txns: int
    n_nodes: int
    n_data: int   # the data edges come first, then the process edges, then realtime
    large: bool   # judged with numpy (see `_large`)

    def counts(self) -> dict[str, int]:
        """Distinct txn pairs per edge kind (realtime: pairs in the barrier
        encoding, whose closure is the realtime order)."""
        # Every edge has one kind bit, so one pass dedupes all kinds at once;
        # barrier edges are unique by construction and need none.
        if not self.large:
            # (process edges are unique too: one to each txn from the one before)
            nd = self.n_data
            per_kind = Counter(k for _, _, k in set(zip(self.src[:nd], self.dst[:nd],
                                                         self.kind[:nd], strict=True)))
            per_kind.update(self.kind[nd:])
            return {name: per_kind[bit] for bit, name in KIND_NAMES.items() if per_kind[bit]}
        import numpy as np

        src, dst, kind = _views(self)
        rt = kind == REALTIME
        other = ~rt
        codes = np.sort((src[other].astype(np.int64) * self.n_nodes
                         + dst[other]) * 32 + kind[other])
        codes = codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if codes.size else codes
        per_kind = np.bincount(codes % 32, minlength=32)
        per_kind[REALTIME] = int(rt.sum())
        return {name: int(per_kind[bit]) for bit, name in KIND_NAMES.items() if per_kind[bit]}

    def components(self, kinds: int) -> list[list[int]]:
        """Txn ids of each strongly connected component of more than one txn
        in the graph of the edges with one of `kinds`, each in ascending
        order, ordered by their first (so by the edges, not their order)."""
        if not self.large:
            if kinds & ALL == ALL:
                src, dst = self.src, self.dst
            else:
                sel = [i for i, k in enumerate(self.kind) if k & kinds]
                src, dst = [self.src[i] for i in sel], [self.dst[i] for i in sel]
            labels = tarjan_labels(self.n_nodes, src, dst)
            members: dict[int, list[int]] = {}
            for node in range(self.n_txns):
                members.setdefault(labels[node], []).append(node)
            return sorted((c for c in members.values() if len(c) > 1), key=lambda c: c[0])
        import numpy as np

        src, dst, kind = _views(self)
        sel = (kind & kinds) != 0
        if not sel.any():
            return []
        labels = scc_labels(self.n_nodes, src[sel], dst[sel])[:self.n_txns]
        sizes = np.bincount(labels)
        big = np.flatnonzero(sizes > 1)
        if big.size == 0:
            return []
        members = np.flatnonzero(np.isin(labels, big))
        order = np.argsort(labels[members], kind="stable")
        members = members[order]
        cuts = np.flatnonzero(np.diff(labels[members])) + 1
        return sorted((c.tolist() for c in np.split(members, cuts)), key=lambda c: c[0])


def _views(edges: Edges) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    return (np.frombuffer(edges.src, dtype=np.int32), np.frombuffer(edges.dst, dtype=np.int32),
            np.frombuffer(edges.kind, dtype=np.int8))


# Up to this many edges, finding components in Python costs less than
# importing scipy's sparse graphs (~0.3 s: it brings numpy.testing, f2py and
# linalg along), which a command checking one small history pays in full.
SCIPY_FROM_EDGES = 100_000


def scc_labels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A strongly connected component label for each of nodes 0..n-1 of the
    graph of edges src[i] -> dst[i]: by scipy's sparse-graph routine for a
    large graph, else by `tarjan_labels`."""
    import numpy as np

    if len(src) < SCIPY_FROM_EDGES:
        order = np.argsort(src, kind="stable")
        starts = np.searchsorted(src[order], np.arange(n + 1)).tolist()
        return np.array(_tarjan(n, starts, dst[order].tolist()), dtype=np.int64)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    return connected_components(m, directed=True, connection="strong")[1]


def tarjan_labels(n: int, src: Sequence[int], dst: Sequence[int]) -> list[int]:
    """Tarjan's algorithm over the edges sorted into CSR lists (a counting
    sort by source)."""
    starts = [0] * (n + 1)
    for u in src:
        starts[u + 1] += 1
    for i in range(n):
        starts[i + 1] += starts[i]
    targets = [0] * len(src)
    fill = starts[:-1]
    for u, v in zip(src, dst, strict=True):
        targets[fill[u]] = v
        fill[u] += 1
    return _tarjan(n, starts, targets)


def _tarjan(n: int, starts: list[int], targets: list[int]) -> list[int]:
    """Tarjan's algorithm, iterative: node u's successors are
    targets[starts[u]:starts[u + 1]]."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    labels = [0] * n
    stack: list[int] = []
    count = label = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = count
        count += 1
        stack.append(root)
        on_stack[root] = True
        work = [root]               # the DFS path
        next_edge = [starts[root]]  # per node on it, its next edge to follow
        while work:
            node = work[-1]
            i, end = next_edge[-1], starts[node + 1]
            while i < end:
                v = targets[i]
                i += 1
                if index[v] < 0:
                    break
                if on_stack[v] and index[v] < low[node]:
                    low[node] = index[v]
            else:
                work.pop()
                next_edge.pop()
                if work and low[node] < low[work[-1]]:
                    low[work[-1]] = low[node]
                if low[node] == index[node]:
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        labels[w] = label
                        if w == node:
                            break
                    label += 1
                continue
            next_edge[-1] = i
            index[v] = low[v] = count
            count += 1
            stack.append(v)
            on_stack[v] = True
            work.append(v)
            next_edge.append(starts[v])
    return labels


class EdgeLists:
    """Edges appended to C arrays (4 bytes an edge end and 1 its kind, where
    a list of ints costs ~36), viewed as numpy arrays once at the end. With
    `evidence`, data edges also keep theirs: `evidence[i]` belongs to edge i."""

    def __init__(self, evidence: bool = True, readers: set[int] | None = None) -> None:
        self.src = array(_NODE)
        self.dst = array(_NODE)
        self.kind = array("b")
        self.evidence: list[Any] | None = [] if evidence else None
        # With `readers`, only edges from or to them are wanted: a source
        # may leave out the wr and rw edges of other txns' reads.
        self.readers = readers

    def add(self, u: int, v: int, kind: int, evidence: Any = None) -> None:
        if u == v:
            return
        if self.evidence is not None:
            self.evidence.append(evidence)
        self.src.append(u)
        self.dst.append(v)
        self.kind.append(kind)


def dependency_edges(txns: list[Txn], versions: Versions) -> Edges:
    return edges_with(txns, lambda edges: _data_edges(edges, txns, versions))


def edges_with(txns: list[Txn], data_edges: Callable[[EdgeLists], None]) -> Edges:
    """Every edge: the data edges `data_edges` adds (without evidence), then
    process and realtime order."""
    edges = EdgeLists(evidence=False)
    data_edges(edges)
    n_data = len(edges.src)
    _process_edges(edges, txns)
    large = _large(len(txns))
    barriers = _realtime_barriers(edges, txns, large)
    return Edges(edges.src, edges.dst, edges.kind, data_edges, len(txns), len(txns) + barriers,
                 n_data, large)


def record_graph(txns: list[Txn], edges: Edges, members: Iterable[int]) -> nx.DiGraph:
    """The networkx graph of `members` (txn ids) and the edges among them, each
    with `kinds` (a bitmask) and the first evidence seen per data kind."""
    nodes = list(members)
    succ: dict[int, dict[int, dict[str, Any]]] = {}
    if nodes:
        inside = bytearray(edges.n_nodes)
        for i in nodes:
            inside[i] = 1
        # The data edges again, this time with their evidence, read by read
        # (so in an order that does not depend on how `edges` found them).
        data = EdgeLists(readers=set(nodes))
        edges.data_edges(data)
        assert data.evidence is not None
        for u, v, kind, ev in zip(data.src, data.dst, data.kind, data.evidence, strict=True):
            if inside[u] and inside[v]:
                d = succ.setdefault(u, {}).setdefault(v, {"kinds": 0})
                d["kinds"] |= kind
                if ev is not None:
                    d.setdefault(KIND_NAMES[kind], ev)
        nd = edges.n_data  # (the process edges follow the data edges)
        for u, v, kind in zip(edges.src[nd:], edges.dst[nd:], edges.kind[nd:], strict=True):
            if kind != PROCESS:
                break
            if inside[u] and inside[v]:
                d = succ.setdefault(u, {}).setdefault(v, {"kinds": 0})
                d["kinds"] |= PROCESS
    rt = EdgeLists()
    realtime_edges(rt, [txns[i] for i in sorted(nodes)])
    for u, v in zip(rt.src, rt.dst, strict=True):
        d = succ.setdefault(u, {}).setdefault(v, {"kinds": 0})
        d["kinds"] |= REALTIME
    # Imported here: ~0.15 s, which a history without a cycle never needs.
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from((u, v, d) for u, out in succ.items() for v, d in out.items())
    return g


def dependency_graph(txns: list[Txn], versions: Versions) -> nx.DiGraph:
    """The whole graph as networkx, realtime edges included (for tests and
    small histories; the checker builds only the cyclic part)."""
    return record_graph(txns, dependency_edges(txns, versions),
                        (t.id for t in txns if t.status != FAIL))


def _data_edges(g: EdgeLists, txns: list[Txn], versions: Versions,
                by_arrays: bool | None = None) -> None:
    """The ww edges along each key's order, then each read's wr and rw edges:
    without evidence, for a large history (or if `by_arrays`), by array
    lookups, else element by element and read by read."""
    # The committed writer of each element, per key (failed txns did not happen).
    live = versions.live
    # (-1: nobody, or only a failed txn, appended it)
    writers_of = {k: list(map(live.get(k, {}).get, order, repeat(-1, len(order))))
                  for k, order in versions.order.items()}
    # following[k]: the position and writer of each element of k's order
    # that was appended by a txn that may have happened, when some elements
    # were not (else the element at a position is its own next writer).
    following: dict[Any, list[tuple[Any, int] | None]] = {}
    for k, writers in writers_of.items():
        if -1 in writers:  # an element nobody, or only a failed txn, appended
            order = versions.order[k]
            nxt: list[tuple[Any, int] | None] = [None] * (len(order) + 1)
            after: tuple[Any, int] | None = None
            for i in range(len(order) - 1, -1, -1):
                if writers[i] >= 0:
                    after = (order[i], writers[i])
                nxt[i] = after
            following[k] = nxt
    unread = versions.unread
    # What a read of a key with an order needs, found with one lookup: its
    # live writers, order and length, next live (element, writer) per
    # position (None when every element has one) and unread appends.
    per_key = {k: (live.get(k, {}), order, len(order), following.get(k), unread.get(k, ()))
               for k, order in versions.order.items()}
    if by_arrays is None:
        by_arrays = g.evidence is None and _large(len(txns))
    if by_arrays:
        _edges_by_arrays(g, txns, versions, per_key, writers_of)
        return
    for k, writers in writers_of.items():
        # Each committed writer is followed (ww) by the next one, skipping
        # elements nobody (or a failed txn) appended: those are reported
        # elsewhere and order nothing.
        prev_e = prev_w = None
        for e, w in zip(versions.order[k], writers, strict=True):
            if w < 0:
                continue
            if prev_w is not None and prev_w != w:
                g.add(prev_w, w, WW, (k, prev_e, e))
            prev_e, prev_w = e, w
        if prev_w is not None:
            for e, w in unread.get(k, ()):
                if w != prev_w:
                    g.add(prev_w, w, WW, (k, prev_e, e, UNREAD))
    readers = g.readers
    for t in txns:
        if readers is None or t.id in readers:
            for _, k, r in t.read_mops:
                _read_edges(g, t, k, r, versions, per_key.get(k))


_KeyReads = tuple[dict[Any, int], list, int, list | None, Any]


def _read_edges(g: EdgeLists, t: Txn, k: Any, r: list, versions: Versions,
                info: _KeyReads | None) -> None:
    """The wr edge to what read `r` (of key `k`, by txn `t`) saw last, and the
    rw edge to the next live append it missed (or to every unread append,
    if it missed none that was read)."""
    tid = t.id
    if info is None:  # not reached: every key read has an order (its longest read)
        return
    lk, order, n, nxt, unread_k = info
    end = len(r)
    last_writer = None
    if end:
        last_writer = lk.get(r[-1])
        if last_writer == tid:
            end = own_suffix_start(t, k, r, versions)
            last_writer = lk.get(r[end - 1]) if end else None
        if last_writer is not None:
            g.add(last_writer, tid, WR, (k, r[end - 1]))
    seen = r[end - 1] if end else None
    position = versions.position.get(k)
    if position is not None and order[:len(r)] != r:
        # A read that contradicts the key's order missed what follows, in
        # the order, the element it saw last (Elle's read-index is by the last
        # element); one the order lacks is followed by nothing known.
        if end:
            if seen not in position:
                return
            end = position[seen] + 1
    if end < n:
        if nxt is None:
            e = order[end]
            w = lk[e]
        else:
            missed = nxt[end]
            w = None
            if missed is not None:
                e, w = missed
        if w is not None:
            # A read stopping inside one txn's appends is an intermediate
            # read (G1b) and, as Elle has it, an anti-dependency on that txn
            # too: with the wr edge, a G-single-item cycle.
            if w != tid:
                g.add(tid, w, RW, (k, seen, e))
            return
    elif end > n:
        return
    # It saw every committed element read: it missed every unread append.
    for e, w in unread_k:
        if w != tid:
            g.add(tid, w, RW, (k, seen, e, UNREAD))


def _edges_by_arrays(g: EdgeLists, txns: list[Txn], versions: Versions,
                     per_key: dict[Any, _KeyReads],
                     writers_of: dict[Any, list[int]]) -> None:
    """The ww edges and every read's `_read_edges`, as array operations. Per
    key, slot i holds the live writer of the order's i-th element (slot 0,
    before the first, none) and of the first live element at or after i.
    Consecutive live writers of a key give the ww edges. A read of a key with
    an order is a prefix of it, so its length alone says what it saw last
    (wr) and what it missed (rw). Reads that end in their own txn's appends,
    that missed only unread appends, or of a key whose reads disagree take
    `_read_edges`."""
    import numpy as np

    base: dict[Any, int] = {}
    wr_at: list[int] = []
    unread_keys: list[bool] = []
    for k, writers in writers_of.items():
        base[k] = len(wr_at)
        wr_at.append(-1)  # an empty read saw nothing
        wr_at += writers
        unread_k = per_key[k][4]
        unread_keys.append(bool(unread_k))
        if unread_k:
            live_writers = [w for w in writers if w >= 0]
            if live_writers:  # the key's last live writer precedes each unread append
                for _, w in unread_k:
                    g.add(live_writers[-1], w, WW)
    wr_of = np.array(wr_at, dtype=np.int64)
    n = len(wr_of)
    starts = np.zeros(n, dtype=np.int64)
    starts[list(base.values())] = 1
    key_of = np.cumsum(starts) - 1
    live_slots = np.flatnonzero(wr_of >= 0)
    a, b = live_slots[:-1], live_slots[1:]
    ww = (key_of[a] == key_of[b]) & (wr_of[a] != wr_of[b])
    _extend(g, wr_of[a[ww]], wr_of[b[ww]], WW)
    # The first live slot after each slot, if of the same key: what a read
    # that long missed.
    after = np.full(n + 1, n, dtype=np.int64)
    after[live_slots] = live_slots
    after = np.minimum.accumulate(after[::-1])[::-1][1:]
    clipped = np.minimum(after, n - 1)
    rw_of = np.where((after < n) & (key_of[clipped] == key_of), wr_of[clipped], -1)
    unread_of = np.array(unread_keys, dtype=bool)[key_of]
    incompatible = versions.incompatible
    slots: list[int] = []
    readers: list[int] = []
    mops: list[Sequence[Any]] = []
    for t in txns:
        reads = t.read_mops
        if not reads:
            continue
        tid = t.id
        for m in reads:
            b0 = base.get(m[1])
            if b0 is None or m[1] in incompatible:
                _read_edges(g, t, m[1], m[2], versions, per_key.get(m[1]))
                continue
            # Every read of a key whose reads agree is a prefix of its
            # order (the longest), so the slot is the key's own.
            slots.append(b0 + len(m[2]))
            readers.append(tid)
            mops.append(m)
    if not slots:
        return
    at = np.array(slots, dtype=np.int64)
    tids = np.array(readers, dtype=np.int64)
    wr = wr_of[at]
    rw = rw_of[at]
    exact = (wr == tids) | ((rw < 0) & unread_of[at])
    sel = ~exact & (wr >= 0)
    _extend(g, wr[sel], tids[sel], WR)
    sel = ~exact & (rw >= 0) & (rw != tids)
    _extend(g, tids[sel], rw[sel], RW)
    for i in np.flatnonzero(exact).tolist():
        _, k, r = mops[i]
        _read_edges(g, txns[readers[i]], k, r, versions, per_key[k])


def _extend(g: EdgeLists, src: np.ndarray, dst: np.ndarray, kind: int) -> None:
    import numpy as np

    g.src.frombytes(src.astype(np.int32).tobytes())
    g.dst.frombytes(dst.astype(np.int32).tobytes())
    g.kind.frombytes(np.full(len(src), kind, dtype=np.int8).tobytes())


def _process_edges(g: EdgeLists, txns: list[Txn]) -> None:
    # txns are in invoke order already
    last: dict[Any, int] = {}
    src, dst, kind = g.src, g.dst, g.kind
    for t in txns:
        if t.status == FAIL:
            continue
        prev = last.get(t.process)
        if prev is not None:
            src.append(prev)
            dst.append(t.id)
            kind.append(PROCESS)
        last[t.process] = t.id


def _realtime_barriers(g: EdgeLists, txns: list[Txn], by_arrays: bool) -> int:
    """Realtime order as barrier nodes (see the module's docstring); returns
    how many barriers it made, numbered from len(txns)."""
    base = len(txns)
    live = [t for t in txns if t.status != FAIL]    # txns that may have happened
    done = [t for t in live if t.status == OK]
    if not done:
        return 0
    if by_arrays:
        _barrier_arrays(g, base, live, done)
        return len(done)
    done.sort(key=lambda t: t.completion.index)     # type: ignore[union-attr]
    completions = [t.completion.index for t in done]  # type: ignore[union-attr]
    n = len(done)
    # Each done txn to its completion's barrier, each barrier to the next...
    g.src.extend([t.id for t in done])
    g.dst.extend(range(base, base + n))
    g.src.extend(range(base, base + n - 1))
    g.dst.extend(range(base + 1, base + n))
    # ...and the last barrier before each txn's invoke to the txn.
    for t in live:
        before = bisect_left(completions, t.invoke.index)
        if before:
            g.src.append(base + before - 1)
            g.dst.append(t.id)
    g.kind.extend(repeat(REALTIME, len(g.src) - len(g.kind)))
    return n


def _barrier_arrays(g: EdgeLists, base: int, live: list[Txn], done: list[Txn]) -> None:
    """`_realtime_barriers`' edges, in the same order, by array operations."""
    import numpy as np

    completed = [t.completion.index for t in done]  # type: ignore[union-attr]
    completions = np.array(completed, dtype=np.int64)
    order = np.argsort(completions, kind="stable")
    completions = completions[order]
    done_ids = np.array([t.id for t in done], dtype=np.int64)[order]
    barriers = base + np.arange(len(done), dtype=np.int64)
    invokes = np.array([t.invoke.index for t in live], dtype=np.int64)
    live_ids = np.array([t.id for t in live], dtype=np.int64)
    before = np.searchsorted(completions, invokes, side="left")
    after = before > 0
    src = np.concatenate([done_ids, barriers[:-1], base + before[after] - 1])
    dst = np.concatenate([barriers, barriers[1:], live_ids[after]])
    g.src.frombytes(src.astype(np.int32).tobytes())
    g.dst.frombytes(dst.astype(np.int32).tobytes())
    g.kind.frombytes(np.full(len(src), REALTIME, dtype=np.int8).tobytes())


def realtime_edges(g: EdgeLists, txns: list[Txn]) -> None:
    """Realtime order without its O(n^2) transitive closure: keep the frontier
    of completed txns that no completed txn is yet known to follow. A txn
    follows everything in the frontier at its invoke; when it completes, it
    replaces those in the frontier, since anything invoked later reaches them
    through it. Each txn gets about as many edges as there were concurrent txns."""
    events: list[tuple[int, int, Txn]] = []
    for t in txns:
        if t.status == FAIL:
            continue
        events.append((t.invoke.index, 0, t))
        if t.status == OK:
            events.append((t.completion.index, 1, t))
    events.sort(key=lambda e: (e[0], e[1]))
    frontier: set[int] = set()
    before: dict[int, tuple[int, ...]] = {}
    for _, completes, t in events:
        if not completes:
            snapshot = tuple(frontier)
            if t.status == OK:
                before[t.id] = snapshot
            else:  # an info txn, if it happened, happened after its invoke; it never completes
                for u in snapshot:
                    g.add(u, t.id, REALTIME)
            continue
        snapshot = before.pop(t.id)
        for u in snapshot:
            g.add(u, t.id, REALTIME)
        frontier.difference_update(snapshot)
        frontier.add(t.id)
