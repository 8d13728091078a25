"""Finding and classifying dependency cycles.

A cycle can only live inside one strongly connected component, so the search
starts from the SCCs of the whole graph and never looks at the (usually
acyclic) rest. Within a component, each anomaly is a `CycleSpec`: which edge
kinds the cycle may use, which kind its first edge must have, and how many rw
edges it needs. For every edge that may start such a cycle, a breadth-first
search over (txn, rw edges used, wr seen) states finds the shortest way back,
so the cycles reported are short enough to read. Searches are ordered from the
cheapest and most damning (G0) to realtime ones, and all run against one time
budget; when it runs out, the specs not yet finished are reported undecided.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from checkers.elle.kinds import DATA, KIND_NAMES, PROCESS, REALTIME, RW, WR, WW

UNBOUNDED = 1 << 30


@dataclass(frozen=True)
class CycleSpec:
    name: str
    first: int          # kind the first edge must be taken as
    rest: int           # kinds the other edges may be taken as
    min_rw: int
    max_rw: int
    need_wr: bool = False

    @property
    def allowed(self) -> int:
        return self.first | self.rest


_P, _RT = PROCESS, REALTIME
SPECS: tuple[CycleSpec, ...] = (
    CycleSpec("G0", WW, WW, 0, 0),
    CycleSpec("G1c", WR, WW | WR, 0, 0),
    CycleSpec("G-single", RW, WW | WR, 1, 1),
    CycleSpec("G2-item", RW, DATA, 2, UNBOUNDED),
    # Process and realtime variants start from an edge that is only process
    # (or only realtime) order, so the cycle genuinely needs that order.
    CycleSpec("G0-process", _P, WW | _P, 0, 0),
    CycleSpec("G1c-process", _P, WW | WR | _P, 0, 0, need_wr=True),
    CycleSpec("G-single-process", _P, DATA | _P, 1, 1),
    CycleSpec("G2-item-process", _P, DATA | _P, 2, UNBOUNDED),
    CycleSpec("G0-realtime", _RT, WW | _P | _RT, 0, 0),
    CycleSpec("G1c-realtime", _RT, WW | WR | _P | _RT, 0, 0, need_wr=True),
    CycleSpec("G-single-realtime", _RT, DATA | _P | _RT, 1, 1),
    CycleSpec("G2-item-realtime", _RT, DATA | _P | _RT, 2, UNBOUNDED),
)


@dataclass
class Cycle:
    type: str
    steps: list[tuple[int, int, int]]   # (from txn, to txn, the kind this edge is taken as)


@dataclass
class SearchResult:
    cycles: list[Cycle] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)   # spec names the budget cut short
    components: int = 0
    largest_component: int = 0
    seconds: float = 0.0


# What an edge starting a process (realtime) variant must not also be.
_NEEDS_PURE = {PROCESS: DATA, REALTIME: DATA | PROCESS}


class _OutOfTime(Exception):
    pass


class _Clock:
    def __init__(self, budget_s: float) -> None:
        self.deadline = time.monotonic() + budget_s
        self.ticks = 0

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise _OutOfTime

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks & 1023 == 0:
            self.check()


def classify(steps: Iterable[tuple[int, int, int]]) -> str:
    kinds = [k for _, _, k in steps]
    rw = kinds.count(RW)
    if rw == 0:
        base = "G1c" if WR in kinds else "G0"
    else:
        base = "G-single" if rw == 1 else "G2-item"
    if REALTIME in kinds:
        return base + "-realtime"
    if PROCESS in kinds:
        return base + "-process"
    return base


def _labels(mask: int) -> list[int]:
    """The kinds an edge can be taken as, weakest claim first: an edge that is
    both ww and realtime is read as ww, so a cycle is only called realtime when
    it needs to be."""
    out = []
    for k in (WW, WR, PROCESS, REALTIME, RW):
        if mask & k:
            out.append(k)
    return out


def _adjacency(g: nx.DiGraph, nodes: set[int], allowed: int) -> dict[int, list[tuple[int, int]]]:
    succ = g.succ
    return {u: [(v, d["kinds"]) for v, d in succ[u].items()
                if v in nodes and d["kinds"] & allowed] for u in nodes}


def _components(adj: dict[int, list[tuple[int, int]]]) -> list[set[int]]:
    h = nx.DiGraph()
    h.add_nodes_from(adj)
    h.add_edges_from((u, v) for u, vs in adj.items() for v, _ in vs)
    return [c for c in nx.strongly_connected_components(h) if len(c) > 1]


def _shortest_back(adj: dict[int, list[tuple[int, int]]], spec: CycleSpec, start: int,
                   goal: int, first_kind: int, clock: _Clock) -> list[tuple[int, int, int]] | None:
    """The shortest path start -> goal completing a cycle that began goal -> start."""
    rw_cap = max(spec.min_rw, 1)
    s0 = (start, int(first_kind == RW), first_kind == WR)
    parent: dict[tuple[int, int, bool], tuple[tuple[int, int, bool], int] | None] = {s0: None}
    queue = deque([s0])
    rest = spec.rest
    while queue:
        state = queue.popleft()
        clock.tick()
        node, rw, wr = state
        for v, mask in adj[node]:
            for kind in _labels(mask & rest):
                nrw = rw + (kind == RW)
                if nrw > spec.max_rw:
                    continue
                nxt = (v, min(nrw, rw_cap), (wr or kind == WR) if spec.need_wr else False)
                if nxt in parent:
                    continue
                parent[nxt] = (state, kind)
                if v == goal:
                    if nxt[1] >= spec.min_rw and (nxt[2] or not spec.need_wr):
                        return _path(parent, nxt)
                    continue  # through the goal would not be a simple cycle
                queue.append(nxt)
    return None


def _path(parent: dict, end: tuple) -> list[tuple[int, int, int]]:
    steps = []
    state = end
    while parent[state] is not None:
        prev, kind = parent[state]
        steps.append((prev[0], state[0], kind))
        state = prev
    steps.reverse()
    return steps


def _find(adj: dict[int, list[tuple[int, int]]], spec: CycleSpec, clock: _Clock) -> Cycle | None:
    for u, vs in adj.items():
        for v, mask in vs:
            if not mask & spec.first:
                continue
            # A process/realtime variant must start from an edge that is nothing
            # but that order, or it would just rediscover a data cycle.
            if mask & _NEEDS_PURE.get(spec.first, 0):
                continue
            clock.check()
            back = _shortest_back(adj, spec, v, u, spec.first, clock)
            if back is None:
                continue
            steps = [(u, v, spec.first), *back]
            nodes = [a for a, _, _ in steps]
            if len(set(nodes)) != len(nodes) or classify(steps) != spec.name:
                continue
            return Cycle(spec.name, steps)
    return None


def find_cycles(g: nx.DiGraph, budget_s: float, specs: tuple[CycleSpec, ...] = SPECS,
                max_per_spec: int = 10) -> SearchResult:
    """Up to `max_per_spec` cycles of each spec, at most one per component of
    the edges that spec may use."""
    started = time.monotonic()
    result = SearchResult()
    clock = _Clock(budget_s)
    components = [c for c in nx.strongly_connected_components(g) if len(c) > 1]
    result.components = len(components)
    result.largest_component = max((len(c) for c in components), default=0)
    for i, spec in enumerate(specs):
        try:
            found = 0
            for comp in components:
                if found >= max_per_spec:
                    break
                for sub in _components(_adjacency(g, comp, spec.allowed)):
                    clock.check()
                    cycle = _find(_adjacency(g, sub, spec.allowed), spec, clock)
                    if cycle is not None:
                        result.cycles.append(cycle)
                        found += 1
                        if found >= max_per_spec:
                            break
        except _OutOfTime:
            result.undecided = [s.name for s in specs[i:]]
            break
    result.seconds = time.monotonic() - started
    return result


def edge_evidence(g: nx.DiGraph, u: int, v: int, kind: int) -> Any:
    """The key and elements behind a data edge, as the graph recorded them."""
    return g.edges[u, v].get(KIND_NAMES[kind])
