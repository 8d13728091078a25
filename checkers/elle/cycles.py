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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checkers.elle.kinds import ALL, DATA, KIND_NAMES, PROCESS, REALTIME, RW, WR, WW

if TYPE_CHECKING:
    import networkx as nx

UNBOUNDED = 1 << 30


@dataclass(frozen=True)
class CycleSpec:
    name: str
    first: int          # kind the first edge must be taken as
    rest: int           # kinds the other edges may be taken as
    min_rw: int
    max_rw: int
    need: int = 0       # a kind some other edge must be taken as
    second: int = 0     # a kind the second edge must be taken as, if any
    nonadjacent: bool = False   # no two rw edges in a row (first and last included)
    # the cycle type whose presence (found anywhere) makes this search
    # redundant: every model prohibiting this type prohibits that one
    skip_if: str = ""

    @property
    def allowed(self) -> int:
        return self.first | self.rest


_P, _RT = PROCESS, REALTIME
def _variants(base: tuple[CycleSpec, ...]) -> tuple[CycleSpec, ...]:
    """The -process and -realtime forms of each base spec: they may also use
    process (and realtime) order, and must use it somewhere."""
    out = list(base)
    for bit, suffix, extra in ((_P, "-process", _P), (_RT, "-realtime", _P | _RT)):
        for s in base:
            first = s.first if s.first != WW else bit
            out.append(CycleSpec(
                s.name + suffix, first, s.rest | extra, s.min_rw, s.max_rw,
                need=0 if first == bit else bit, second=s.second,
                nonadjacent=s.nonadjacent,
                skip_if=s.skip_if + suffix if s.skip_if else ""))
    return tuple(out)


# Where it can, a spec starts from an rw or wr edge and leaves rw out of the
# rest: then the rest edges form a near-DAG in a mostly sane history, and the
# topological pruning in `_find` discards almost every candidate at once.
# G-nonadjacent-item's rest leaves rw out too: each of its rw edges rides on
# the edge before it (`_find_nonadjacent`). A G2-item cycle has two rw edges
# in a row: it starts with them.
SPECS: tuple[CycleSpec, ...] = _variants((
    CycleSpec("G0", WW, WW, 0, 0),
    CycleSpec("G1c", WR, WW | WR, 0, 0),
    CycleSpec("G-single-item", RW, WW | WR, 1, 1),
    CycleSpec("G-nonadjacent-item", RW, WW | WR, 2, UNBOUNDED, nonadjacent=True,
              skip_if="G-single-item"),
    CycleSpec("G2-item", RW, DATA, 2, UNBOUNDED, second=RW),
))


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
    """A cycle's anomaly type, as Elle names item cycles: by its rw edges,
    none (G0, or G1c with a wr edge), one (G-single-item), several none of
    them next to another, the last edge counting as before the first
    (G-nonadjacent-item), or some two in a row (G2-item); then -realtime if
    it needs realtime order, else -process if it needs process order."""
    kinds = [k for _, _, k in steps]
    rw = kinds.count(RW)
    if rw == 0:
        base = "G1c" if WR in kinds else "G0"
    elif rw == 1:
        base = "G-single-item"
    elif any(k == RW and kinds[i - 1] == RW for i, k in enumerate(kinds)):
        base = "G2-item"
    else:
        base = "G-nonadjacent-item"
    if REALTIME in kinds:
        return base + "-realtime"
    if PROCESS in kinds:
        return base + "-process"
    return base


def _labels(mask: int, allowed: int) -> list[int]:
    """The kinds an edge may be taken as, weakest claim first. Process and
    realtime order count only on edges that are nothing more (no data
    dependency, and for realtime no process order), so a cycle is only called
    -process or -realtime when it needs that order."""
    out = [k for k in (WW, WR) if mask & allowed & k]
    if mask & allowed & PROCESS and not mask & _NEEDS_PURE[PROCESS]:
        out.append(PROCESS)
    if mask & allowed & REALTIME and not mask & _NEEDS_PURE[REALTIME]:
        out.append(REALTIME)
    if mask & allowed & RW:
        out.append(RW)
    return out


# `_labels` of every mask, per set of allowed kinds, made when first asked
# for: the search asks once per edge it follows.
_LABELS: dict[int, list[list[int]]] = {}


def _label_table(allowed: int) -> list[list[int]]:
    table = _LABELS.get(allowed)
    if table is None:
        table = _LABELS[allowed] = [_labels(mask, allowed) for mask in range(ALL + 1)]
    return table


Adjacency = dict[int, list[tuple[int, int]]]   # txn -> [(successor, kinds bitmask)]
SearchAll = Callable[[list[Adjacency], float], list["SearchResult"]]
# `find_cycles` or a stand-in with its signature and results.
CycleSearch = Callable[["nx.DiGraph", float], "SearchResult"]


def _adjacency(g: nx.DiGraph, nodes: set[int]) -> Adjacency:
    succ = g.succ
    return {u: [(v, d["kinds"]) for v, d in succ[u].items() if v in nodes] for u in nodes}


def _restrict(adj: Adjacency, allowed: int, nodes: set[int]) -> Adjacency:
    return {u: [(v, m) for v, m in adj[u] if m & allowed and v in nodes] for u in nodes}


def _components(adj: Adjacency, kinds: int = -1) -> list[set[int]]:
    """The strongly connected components of more than one node over the
    edges with one of `kinds`."""
    return [set(c) for c in _sccs(adj, kinds) if len(c) > 1]


def _sccs(adj: Adjacency, kinds: int = -1) -> list[list[int]]:
    """The strongly connected components of the edges with one of `kinds`, in
    a topological order of the graph they condense it to (Tarjan's
    algorithm, iterative, straight over the adjacency lists: building a
    networkx graph for each search took longer than the searches)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    for root in adj:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(adj[root]))]
        while work:
            node, successors = work[-1]
            for v, mask in successors:
                if not mask & kinds:
                    continue
                if v not in index:
                    index[v] = low[v] = len(index)
                    stack.append(v)
                    on_stack.add(v)
                    work.append((v, iter(adj[v])))
                    break
                if v in on_stack and index[v] < low[node]:
                    low[node] = index[v]
            else:
                work.pop()
                if work and low[node] < low[work[-1][0]]:
                    low[work[-1][0]] = low[node]
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    out.append(comp)
    out.reverse()  # Tarjan finishes a component after all it reaches
    return out


def _shortest_back(adj: Adjacency, order: dict[int, int],
                   spec: CycleSpec, start: int, goal: int,
                   clock: _Clock) -> list[tuple[int, int, int]] | None:
    """The shortest path start -> goal completing a cycle that began with the
    edge goal -> start, as a breadth-first search over (txn, rw edges so far,
    needed kind seen) states."""
    rw_cap = max(spec.min_rw, 1)
    s0 = (start, int(spec.first == RW), spec.first == spec.need)
    parent: dict[tuple[int, int, bool], tuple[tuple[int, int, bool], int] | None] = {s0: None}
    queue = deque([s0])
    rest, need, second = spec.rest, spec.need, spec.second
    labels = _label_table(rest)
    limit = order[goal]
    while queue:
        state = queue.popleft()
        clock.tick()
        node, rw, seen = state
        for v, mask in adj[node]:
            if order[v] > limit:  # past the goal's component: no way back to it
                continue
            for kind in labels[mask]:
                if second and state is s0 and kind != second:
                    continue
                nrw = rw + (kind == RW)
                if nrw > spec.max_rw:
                    continue
                nxt = (v, min(nrw, rw_cap), seen or kind == need)
                if nxt in parent:
                    continue
                parent[nxt] = (state, kind)
                if v == goal:
                    if nxt[1] >= spec.min_rw and (nxt[2] or not need):
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


def _rest_order(adj: Adjacency, rest: int) -> dict[int, int]:
    """Each node's position in a topological order of the strongly connected
    components of the graph of `rest` edges. A path of rest edges from x to y
    needs order[x] <= order[y]; that one comparison rules out most candidate
    first edges, and bounds each search to the region that can lead back."""
    return {n: i for i, comp in enumerate(_sccs(adj, rest)) for n in comp}


def _find(adj: Adjacency, spec: CycleSpec, clock: _Clock) -> Cycle | None:
    order = _rest_order(adj, spec.rest)
    candidates = []
    first = spec.first
    labels = _label_table(first)
    for u, vs in adj.items():
        for v, mask in vs:
            if order[v] > order[u] or first not in labels[mask]:
                continue
            candidates.append((order[u] - order[v], u, v))
    # Edges inside one component of rest edges surely lead back: try them first.
    candidates.sort(key=lambda c: c[0])
    for _, u, v in candidates:
        clock.check()
        back = _shortest_back(adj, order, spec, v, u, clock)
        if back is None:
            continue
        steps = [(u, v, spec.first), *back]
        nodes = [a for a, _, _ in steps]
        if len(set(nodes)) != len(nodes) or classify(steps) != spec.name:
            continue
        return Cycle(spec.name, steps)
    return None


# An edge of the graph `_find_nonadjacent` walks: (to, kind of its first
# hop, the txn its rw hop leaves from or -1 if it has none).
_Hop = tuple[int, int, int]


def _extension(adj: Adjacency, first: int) -> dict[int, list[_Hop]]:
    """Elle's sequential extension A u A;rw of the edges `first` allows (A):
    every A edge, and every A edge followed by an rw edge as one hop. A
    cycle whose rw edges are never adjacent is a cycle of hops, each rw edge
    riding on the edge before it, and every cycle of hops is one with none
    adjacent (or a shorter walk: checked once found)."""
    labels = _label_table(first)
    out: dict[int, list[_Hop]] = {}
    for u, vs in adj.items():
        hops: dict[tuple[int, int, bool], int] = {}
        for v, mask in vs:
            for kind in labels[mask]:
                hops.setdefault((v, kind, False), -1)
                for w, m2 in adj[v]:
                    if m2 & RW and w != u:
                        hops.setdefault((w, kind, True), v)
        out[u] = [(w, kind, mid) for (w, kind, _), mid in hops.items()]
    return out


def _find_nonadjacent(adj: Adjacency, spec: CycleSpec, clock: _Clock) -> Cycle | None:
    """A cycle of at least two rw edges, no two in a row: a breadth-first
    search over the extension graph's hops, from each hop that ends in an rw
    edge, for the shortest way back with one more such hop."""
    ext = _extension(adj, spec.rest)
    comps = _sccs({u: [(w, 1) for w, _, _ in hops] for u, hops in ext.items()})
    comp_of = {n: i for i, c in enumerate(comps) if len(c) > 1 for n in c}
    need = spec.need
    for u, hops in ext.items():
        cu = comp_of.get(u)
        if cu is None:
            continue
        for w, kind, mid in hops:
            if mid < 0 or comp_of.get(w) != cu:
                continue
            clock.check()
            back = _hops_back(ext, comp_of, cu, w, u, int(kind == need), need, clock)
            if back is None:
                continue
            steps: list[tuple[int, int, int]] = []
            for a, b, k, m in [(u, w, kind, mid), *back]:
                steps += [(a, b, k)] if m < 0 else [(a, m, k), (m, b, RW)]
            nodes = [a for a, _, _ in steps]
            if len(set(nodes)) != len(nodes) or classify(steps) != spec.name:
                continue
            return Cycle(spec.name, steps)
    return None


def _hops_back(ext: dict[int, list[_Hop]], comp_of: dict[int, int], comp: int,
               start: int, goal: int, seen0: int, need: int, clock: _Clock
               ) -> list[tuple[int, int, int, int]] | None:
    """The fewest hops start -> goal, inside one component of the extension
    graph, with at least one rw hop and, if `need`, a hop first taken as it
    (unless the first hop of the cycle was); as (from, to, kind, rw from)."""
    s0 = (start, 0, bool(seen0) or not need)
    parent: dict[tuple[int, int, bool], tuple[tuple[int, int, bool], _Hop] | None] = {s0: None}
    queue = deque([s0])
    while queue:
        state = queue.popleft()
        clock.tick()
        node, rw, seen = state
        for hop in ext[node]:
            v, kind, mid = hop
            if comp_of.get(v) != comp:
                continue
            nxt = (v, min(rw + (mid >= 0), 1), seen or kind == need)
            if nxt in parent:
                continue
            parent[nxt] = (state, hop)
            if v == goal:
                if nxt[1] and nxt[2]:
                    steps = []
                    at = nxt
                    while parent[at] is not None:
                        prev, (to, k, m) = parent[at]
                        steps.append((prev[0], to, k, m))
                        at = prev
                    steps.reverse()
                    return steps
                continue
            queue.append(nxt)
    return None


def find_cycles(g: nx.DiGraph, budget_s: float, specs: tuple[CycleSpec, ...] = SPECS,
                max_per_spec: int = 10) -> SearchResult:
    """Up to `max_per_spec` cycles of each spec, at most one per component of
    the edges that spec may use."""
    started = time.monotonic()
    result = SearchResult()
    clock = _Clock(budget_s)
    components = cyclic_components(g)
    result.components = len(components)
    result.largest_component = max((len(c) for c in components), default=0)
    adjacencies = [component_adjacency(g, comp) for comp in components]
    subs: list[dict[int, list[Adjacency]]] = [{} for _ in adjacencies]
    for i, spec in enumerate(specs):
        if _redundant(spec, result.cycles):
            continue
        try:
            found = 0
            for adj, sub in zip(adjacencies, subs, strict=True):
                if found >= max_per_spec:
                    break
                if not sub:
                    _prime(adj, sub, specs)
                found += _spec_cycles(adj, spec, clock, max_per_spec - found, result.cycles,
                                      sub)
        except _OutOfTime:
            result.undecided = [s.name for s in specs[i:]]
            break
    result.seconds = time.monotonic() - started
    return result


def _redundant(spec: CycleSpec, found: list[Cycle]) -> bool:
    """Whether a cycle already found makes searching for `spec` pointless:
    every model that prohibits it prohibits the found one (a G-single-item
    cycle is a G-nonadjacent-item one as far as any model is concerned)."""
    return bool(spec.skip_if) and any(c.type == spec.skip_if for c in found)


def _prime(adj: Adjacency, subs: dict[int, list[Adjacency]],
           specs: tuple[CycleSpec, ...]) -> None:
    """`_spec_cycles`' components for every set of edges `specs` may use,
    the largest sets first: a set of edges whose graph has none leaves none
    to any of its subsets, which are then not searched."""
    for allowed in sorted({s.allowed for s in specs}, key=lambda a: -a.bit_count()):
        if any(not parts and allowed & ~known == 0 for known, parts in subs.items()):
            subs[allowed] = []
        else:
            subs[allowed] = [_restrict(adj, allowed, c) for c in _components(adj, allowed)]


def _spec_cycles(adj: Adjacency, spec: CycleSpec, clock: _Clock, limit: int,
                 out: list[Cycle], subs: dict[int, list[Adjacency]] | None = None) -> int:
    """Up to `limit` cycles of `spec` in one component, one per component of
    the edges the spec may use, appended to `out` as found (a search cut
    short keeps them); returns how many. `subs` keeps those components per
    set of usable edges, for the next spec that may use the same."""
    found = 0
    parts = None if subs is None else subs.get(spec.allowed)
    if parts is None:
        # (most specs find no component: only those found are copied out)
        parts = [_restrict(adj, spec.allowed, sub) for sub in _components(adj, spec.allowed)]
        if subs is not None:
            subs[spec.allowed] = parts
    for part in parts:
        clock.check()
        cycle = (_find_nonadjacent if spec.nonadjacent else _find)(part, spec, clock)
        if cycle is not None:
            out.append(cycle)
            found += 1
            if found >= limit:
                break
    return found


# --- the same search, one strongly connected component at a time --------------
# A cycle never leaves its component, so the components can be searched apart
# (on other machines) and the results merged into what `find_cycles` returns.


def cyclic_components(g: nx.DiGraph) -> list[set[int]]:
    """The components of more than one txn, in the order `find_cycles` searches them."""
    return [set(c) for c in _sccs(_adjacency(g, set(g))) if len(c) > 1]


def component_adjacency(g: nx.DiGraph, component: set[int]) -> Adjacency:
    """A component's edges as the search walks them; their order decides which
    of several equally short cycles is found, so a copy must keep it."""
    return _adjacency(g, component)


def search_component(adj: Adjacency, budget_s: float, specs: tuple[CycleSpec, ...] = SPECS,
                     max_per_spec: int = 10) -> SearchResult:
    """`find_cycles` on one component, given as `component_adjacency` gave it."""
    started = time.monotonic()
    result = SearchResult(components=1, largest_component=len(adj))
    clock = _Clock(budget_s)
    subs: dict[int, list[Adjacency]] = {}
    _prime(adj, subs, specs)
    for i, spec in enumerate(specs):
        if _redundant(spec, result.cycles):
            continue
        try:
            _spec_cycles(adj, spec, clock, max_per_spec, result.cycles, subs)
        except _OutOfTime:
            result.undecided = [s.name for s in specs[i:]]
            break
    result.seconds = time.monotonic() - started
    return result


def merge_searches(parts: list[SearchResult], specs: tuple[CycleSpec, ...] = SPECS,
                   max_per_spec: int = 10) -> SearchResult:
    """Per-component results, in `cyclic_components` order, as one `find_cycles`
    result: spec by spec, the first `max_per_spec` cycles across components
    (each part holds its component's first ones). Only a search cut short by
    its budget can differ: each component had the whole budget to itself."""
    merged = SearchResult(components=len(parts),
                          largest_component=max((p.largest_component for p in parts), default=0),
                          seconds=sum(p.seconds for p in parts))
    undecided = {name for p in parts for name in p.undecided}
    for spec in specs:
        if _redundant(spec, merged.cycles):
            continue
        of_spec = [c for p in parts for c in p.cycles if c.type == spec.name]
        merged.cycles += of_spec[:max_per_spec]
    merged.undecided = [s.name for s in specs if s.name in undecided]
    return merged


def find_cycles_by_component(g: nx.DiGraph, budget_s: float,
                             search_all: SearchAll | None = None) -> SearchResult:
    """`find_cycles`, each component searched apart by `search_all` (given the
    components' adjacencies and the budget, it returns their results in
    order); by default one after another here."""
    adjacencies = [component_adjacency(g, c) for c in cyclic_components(g)]
    if search_all is None:
        parts = [search_component(adj, budget_s) for adj in adjacencies]
    else:
        parts = search_all(adjacencies, budget_s)
    return merge_searches(parts)


def edge_evidence(g: nx.DiGraph, u: int, v: int, kind: int) -> Any:
    """The key and elements behind a data edge, as the graph recorded them."""
    return g.edges[u, v].get(KIND_NAMES[kind])


def families(g: nx.DiGraph, component: set[int], kinds: int) -> list[str]:
    """The anomaly families a cycle inside `component`, over `kinds`, may belong
    to, judged by the edge kinds it has inside."""
    present = 0
    for u in component:
        for v, d in g.succ[u].items():
            if v in component:
                present |= d["kinds"] & kinds
    bases = []
    if present & WW:
        bases.append("G0")
    if present & WR:
        bases.append("G1c")
    if present & RW:
        bases += ["G-single-item", "G-nonadjacent-item", "G2-item"]
    out = list(bases)
    for bit, suffix in ((PROCESS, "-process"), (REALTIME, "-realtime")):
        if present & bit:
            out += [b + suffix for b in bases]
    return out
