"""The dependency graph between transactions, a networkx DiGraph whose nodes
are txn ids. Each edge carries `kinds`, a bitmask of why the source must come
before the target, and for data dependencies the evidence (key and elements)
that the explanations quote:

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
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from checkers.elle.kinds import KIND_NAMES, PROCESS, REALTIME, RW, WR, WW
from checkers.elle.txns import FAIL, OK, Txn
from checkers.elle.versions import Versions, own_suffix_start

# Marks the evidence of an edge to an append no read saw.
UNREAD = "unread"


class _Edges:
    """Edges gathered in plain dicts (u -> v -> attributes) and handed to
    networkx in one call: much cheaper than a lookup through its views per edge."""

    def __init__(self) -> None:
        self.succ: dict[int, dict[int, dict[str, Any]]] = {}

    def add(self, u: int, v: int, kind: int, evidence: Any = None) -> None:
        if u == v:
            return
        out = self.succ.get(u)
        if out is None:
            out = self.succ[u] = {}
        d = out.get(v)
        if d is None:
            d = out[v] = {"kinds": kind}
        else:
            d["kinds"] |= kind
        if evidence is not None:
            d.setdefault(KIND_NAMES[kind], evidence)


def dependency_graph(txns: list[Txn], versions: Versions) -> nx.DiGraph:
    edges = _Edges()
    _data_edges(edges, txns, versions)
    _process_edges(edges, txns)
    _realtime_edges(edges, txns)
    g = nx.DiGraph()
    g.add_nodes_from(t.id for t in txns if t.status != FAIL)
    g.add_edges_from((u, v, d) for u, out in edges.succ.items() for v, d in out.items())
    return g


def _committed_writer(txns: list[Txn], versions: Versions, k: Any, e: Any) -> int | None:
    w = versions.writer.get((k, e))
    if w is None or txns[w].status == FAIL:
        return None
    return w


def _data_edges(g: _Edges, txns: list[Txn], versions: Versions) -> None:
    # Each key's successive writers, skipping elements nobody (or a failed txn)
    # appended; those are reported elsewhere and order nothing.
    writers_in_order: dict[Any, list[tuple[Any, int]]] = {}
    for k, order in versions.order.items():
        seq: list[tuple[Any, int]] = []
        for e in order:
            w = _committed_writer(txns, versions, k, e)
            if w is not None:
                if seq and seq[-1][1] != w:
                    g.add(seq[-1][1], w, WW, (k, seq[-1][0], e))
                seq.append((e, w))
        writers_in_order[k] = seq
        if seq:
            last_e, last_w = seq[-1]
            for e, w in versions.unread.get(k, ()):
                if w != last_w:
                    g.add(last_w, w, WW, (k, last_e, e, UNREAD))
    for t in txns:
        for k, r in t.reads():
            end = own_suffix_start(t, k, r, versions)
            last_writer = None
            if end:
                last_writer = _committed_writer(txns, versions, k, r[end - 1])
                if last_writer is not None:
                    g.add(last_writer, t.id, WR, (k, r[end - 1]))
            order = versions.order.get(k)
            if order is None:
                continue
            seen = r[end - 1] if end else None
            for i in range(end, len(order)):
                e = order[i]
                w = _committed_writer(txns, versions, k, e)
                if w is None:
                    continue
                # The read stopping inside one txn's appends is an intermediate
                # read (G1b), not an anti-dependency on that txn.
                if w != t.id and w != last_writer:
                    g.add(t.id, w, RW, (k, seen, e))
                break
            else:  # it saw every element read: it missed every unread append
                for e, w in versions.unread.get(k, ()):
                    if w != t.id and w != last_writer:
                        g.add(t.id, w, RW, (k, seen, e, UNREAD))


def _process_edges(g: _Edges, txns: list[Txn]) -> None:
    last: dict[Any, int] = {}
    for t in sorted((t for t in txns if t.status != FAIL), key=lambda t: t.invoke.index):
        prev = last.get(t.process)
        if prev is not None:
            g.add(prev, t.id, PROCESS)
        last[t.process] = t.id


def _realtime_edges(g: _Edges, txns: list[Txn]) -> None:
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
