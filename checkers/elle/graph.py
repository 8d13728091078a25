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
`Edges` holds every edge as flat integer arrays, and scipy's sparse-graph
routines find its strongly connected components in C (networkx takes ~10x as
long and ~5x the memory to build and search a 100k-txn graph); a small graph's
are found in Python, which costs less than importing scipy. Only the txns
in a component of more than one become a networkx DiGraph, the graph of
record that the cycle search walks and the explanations quote.

Realtime order is encoded for the component search with one barrier node per
completion: each completed txn points to its completion's barrier, barriers
point to the next, and a barrier points to every txn invoked after it and
before the next completion. A txn then reaches another through barriers
exactly when it completed before the other was invoked: two edges per txn
instead of one per pair of concurrent txns. The graph of record gets real
realtime edges between its own txns.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from checkers.elle.kinds import KIND_NAMES, PROCESS, REALTIME, RW, WR, WW
from checkers.elle.txns import FAIL, OK, Txn
from checkers.elle.versions import Versions, own_suffix_start

if TYPE_CHECKING:
    import networkx as nx

# A node id: a txn's or a barrier's (two per txn at most), 4 bytes.
_NODE = "i"
assert array(_NODE).itemsize == 4

# Marks the evidence of an edge to an append no read saw.
UNREAD = "unread"


@dataclass
class Edges:
    """Every edge of the graph: `src[i] -> dst[i]` for `kind[i]`. Nodes below
    `n_txns` are txn ids, the rest realtime barriers. The data edges' evidence
    is not kept: most edges are in no cycle, and the few that are get theirs
    from `data_edges`, run again (as Elle explains a cycle's edges once it has
    found the cycle)."""

    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    data_edges: Callable[[EdgeLists], None]
    n_txns: int
    n_nodes: int

    def counts(self) -> dict[str, int]:
        """Distinct txn pairs per edge kind (realtime: pairs in the barrier
        encoding, whose closure is the realtime order)."""
        # Every edge has one kind bit, so one sort dedupes all kinds at once;
        # barrier edges are unique by construction and need none.
        rt = self.kind == REALTIME
        other = ~rt
        codes = np.sort((self.src[other].astype(np.int64) * self.n_nodes
                         + self.dst[other]) * 32 + self.kind[other])
        codes = codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if codes.size else codes
        per_kind = np.bincount(codes % 32, minlength=32)
        per_kind[REALTIME] = int(rt.sum())
        return {name: int(per_kind[bit]) for bit, name in KIND_NAMES.items() if per_kind[bit]}

    def components(self, kinds: int) -> list[np.ndarray]:
        """Txn ids of each strongly connected component of more than one txn
        in the graph of the edges with one of `kinds`."""
        sel = (self.kind & kinds) != 0
        if not sel.any():
            return []
        labels = scc_labels(self.n_nodes, self.src[sel], self.dst[sel])[:self.n_txns]
        sizes = np.bincount(labels)
        big = np.flatnonzero(sizes > 1)
        if big.size == 0:
            return []
        members = np.flatnonzero(np.isin(labels, big))
        order = np.argsort(labels[members], kind="stable")
        members = members[order]
        cuts = np.flatnonzero(np.diff(labels[members])) + 1
        return np.split(members, cuts)


# Up to this many edges, finding components in Python costs less than
# importing scipy's sparse graphs (~0.3 s: it brings numpy.testing, f2py and
# linalg along), which a command checking one small history pays in full.
SCIPY_FROM_EDGES = 100_000


def scc_labels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A strongly connected component label for each of nodes 0..n-1 of the
    graph of edges src[i] -> dst[i]: by scipy's sparse-graph routine for a
    large graph, else by `tarjan_labels`."""
    if len(src) < SCIPY_FROM_EDGES:
        return tarjan_labels(n, src, dst)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    return connected_components(m, directed=True, connection="strong")[1]


def tarjan_labels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Tarjan's algorithm, iterative, over the edges sorted into CSR lists."""
    order = np.argsort(src, kind="stable")
    targets = dst[order].tolist()
    starts = np.searchsorted(src[order], np.arange(n + 1)).tolist()
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
    return np.array(labels, dtype=np.int64)


class EdgeLists:
    """Edges appended to C arrays (4 bytes an edge end and 1 its kind, where
    a list of ints costs ~36), viewed as numpy arrays once at the end. With
    `evidence`, data edges also keep theirs: `evidence[i]` belongs to edge i."""

    def __init__(self, evidence: bool = True) -> None:
        self.src = array(_NODE)
        self.dst = array(_NODE)
        self.kind = array("b")
        self.evidence: list[Any] | None = [] if evidence else None

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
    _process_edges(edges, txns)
    barriers = _realtime_barriers(edges, txns)
    return Edges(np.frombuffer(edges.src, dtype=np.int32),
                 np.frombuffer(edges.dst, dtype=np.int32),
                 np.frombuffer(edges.kind, dtype=np.int8), data_edges, len(txns),
                 len(txns) + barriers)


def record_graph(txns: list[Txn], edges: Edges, members: Iterable[int]) -> nx.DiGraph:
    """The networkx graph of `members` (txn ids) and the edges among them, each
    with `kinds` (a bitmask) and the first evidence seen per data kind."""
    nodes = np.fromiter(members, dtype=np.int64)
    succ: dict[int, dict[int, dict[str, Any]]] = {}
    if nodes.size:
        inside = np.zeros(edges.n_nodes, dtype=bool)
        inside[nodes] = True
        sel = np.flatnonzero(inside[edges.src] & inside[edges.dst])
        for u, v, kind in zip(edges.src[sel].tolist(), edges.dst[sel].tolist(),
                              edges.kind[sel].tolist(), strict=True):
            d = succ.setdefault(u, {}).setdefault(v, {"kinds": 0})
            d["kinds"] |= kind
        # The data edges again, this time with their evidence.
        data = EdgeLists()
        edges.data_edges(data)
        assert data.evidence is not None
        for u, v, kind, ev in zip(data.src, data.dst, data.kind, data.evidence, strict=True):
            if ev is not None and inside[u] and inside[v]:
                succ[u][v].setdefault(KIND_NAMES[kind], ev)
    rt = EdgeLists()
    realtime_edges(rt, [txns[i] for i in sorted(nodes.tolist())])
    for u, v in zip(rt.src, rt.dst, strict=True):
        d = succ.setdefault(u, {}).setdefault(v, {"kinds": 0})
        d["kinds"] |= REALTIME
    # Imported here: ~0.15 s, which a history without a cycle never needs.
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes.tolist())
    g.add_edges_from((u, v, d) for u, out in succ.items() for v, d in out.items())
    return g


def dependency_graph(txns: list[Txn], versions: Versions) -> nx.DiGraph:
    """The whole graph as networkx, realtime edges included (for tests and
    small histories; the checker builds only the cyclic part)."""
    return record_graph(txns, dependency_edges(txns, versions),
                        (t.id for t in txns if t.status != FAIL))


def _data_edges(g: EdgeLists, txns: list[Txn], versions: Versions) -> None:
    # The committed writer of each element, per key (failed txns did not happen).
    live = versions.live
    src, dst, kind, evidence = g.src, g.dst, g.kind, g.evidence
    # The hot loops append to the arrays inline (see EdgeLists.add): per key
    # first, per read after.
    # following[k]: the position and writer of each element of k's order
    # that was appended by a txn that may have happened, when some elements
    # were not (else the element at a position is its own next writer).
    following: dict[Any, list[tuple[Any, int] | None]] = {}
    for k, order in versions.order.items():
        lk = live.get(k, {})
        writers = [lk.get(e) for e in order]
        if None in writers:  # an element nobody, or only a failed txn, appended
            nxt: list[tuple[Any, int] | None] = [None] * (len(order) + 1)
            after: tuple[Any, int] | None = None
            for i in range(len(order) - 1, -1, -1):
                if writers[i] is not None:
                    after = (order[i], writers[i])
                nxt[i] = after
            following[k] = nxt
        # Each committed writer is followed (ww) by the next one, skipping
        # elements nobody (or a failed txn) appended: those are reported
        # elsewhere and order nothing.
        prev_e = prev_w = None
        for e, w in zip(order, writers, strict=True):
            if w is None:
                continue
            if prev_w is not None and prev_w != w:
                if evidence is not None:
                    evidence.append((k, prev_e, e))
                src.append(prev_w)
                dst.append(w)
                kind.append(WW)
            prev_e, prev_w = e, w
        if prev_w is not None:
            for e, w in versions.unread.get(k, ()):
                if w != prev_w:
                    g.add(prev_w, w, WW, (k, prev_e, e, UNREAD))
    unread = versions.unread
    # What a read of a key with an order needs, found with one lookup: its
    # live writers, order and length, next live (element, writer) per
    # position (None when every element has one) and unread appends.
    per_key = {k: (live.get(k, {}), order, len(order), following.get(k), unread.get(k, ()))
               for k, order in versions.order.items()}
    for t in txns:
        reads = t.read_mops
        if not reads:
            continue
        tid = t.id
        for _, k, r in reads:
            info = per_key.get(k)
            if info is None:  # no order: its reads disagree; only what each saw last
                lk = live.get(k) or {}
                end = len(r)
                last_writer = lk.get(r[-1]) if end else None
                if last_writer == tid:
                    end = own_suffix_start(t, k, r, versions)
                    last_writer = lk.get(r[end - 1]) if end else None
                if last_writer is not None:
                    if evidence is not None:
                        evidence.append((k, r[end - 1]))
                    src.append(last_writer)
                    dst.append(tid)
                    kind.append(WR)
                continue
            lk, order, n, nxt, unread_k = info
            end = len(r)
            if end:
                last_writer = lk.get(r[-1])
                if last_writer == tid:
                    end = own_suffix_start(t, k, r, versions)
                    last_writer = lk.get(r[end - 1]) if end else None
                if last_writer is not None:
                    if evidence is not None:
                        evidence.append((k, r[end - 1]))
                    src.append(last_writer)
                    dst.append(tid)
                    kind.append(WR)
            else:
                last_writer = None
            if end < n:
                if nxt is None:
                    e = order[end]
                    w = lk[e]
                else:
                    missed = nxt[end]
                    if missed is None:
                        w = None
                    else:
                        e, w = missed
                if w is not None:
                    # The read stopping inside one txn's appends is an
                    # intermediate read (G1b), not an anti-dependency on that txn.
                    if w != tid and w != last_writer:
                        if evidence is not None:
                            evidence.append((k, r[end - 1] if end else None, e))
                        src.append(tid)
                        dst.append(w)
                        kind.append(RW)
                    continue
            elif end > n:
                continue
            # It saw every committed element read: it missed every unread append.
            for e, w in unread_k:
                if w != tid and w != last_writer:
                    g.add(tid, w, RW, (k, r[end - 1] if end else None, e, UNREAD))


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


def _realtime_barriers(g: EdgeLists, txns: list[Txn]) -> int:
    """Realtime order as barrier nodes (see the module's docstring); returns
    how many barriers it made, numbered from len(txns)."""
    base = len(txns)
    live = [t for t in txns if t.status != FAIL]    # txns that may have happened
    done = [t for t in live if t.status == OK]
    if not done:
        return 0
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
    return len(done)


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
