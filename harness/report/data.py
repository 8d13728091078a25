"""The numbers a run report draws, computed from a run's pieces: op counts,
throughput and latency binned by time, fault windows, leader changes.

Pure functions over already-loaded data (`harness.report.page` does the reading).
Everything is binned by time, so a history of a million ops becomes a few
hundred numbers: the report stays small and fast whatever the run's size.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from checkers.availability import HEALED_BY, fault_windows
from checkers.coverage import EVENTS, OBSERVED, observed_leaders, who_led
from checkers.elections import leader_elections
from checkers.faults import CUT, KILL, PAUSE, named
from checkers.history import NEMESIS, Op, noop_reason, pair_ops
from checkers.outcomes import OUTCOMES, outcome
from nemesis.label import fault_label, links_text
from nemesis.label import node_order as _node_order

NS = 1_000_000_000
# Bin widths (seconds) a reader can count in; the smallest giving at most
# MAX_BINS bins over the run is used.
NICE_BINS_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300,
               600, 1800, 3600)
MAX_BINS = 200
# What a node span says a node was (its colour follows, harness.report.svg).
DOWN_STATE, PAUSED_STATE, CUT_OFF_STATE = "down", "paused", "cut off"
# A node that lost some links but still reaches a majority (a bridge's halves).
LINKS_CUT_STATE = "links cut"
CUT_FAULTS = named(CUT)
PERCENTILES = (50, 95, 99, 100)


@dataclass
class FaultWindow:
    f: str
    start: int           # ns since run start
    end: int
    nodes: list[str]
    label: str           # "kill n3", "partition isolate-leader n1 | n2 n3"
    value: Any = None    # what the nemesis recorded (invoke merged with completion)


@dataclass
class NodeSpan:
    """A stretch of time one node spent harmed by a fault."""
    node: str
    state: str           # "down", "paused", "cut off" (or another fault's name)
    f: str               # the fault that did it
    start: int           # ns since run start
    end: int
    detail: str          # for the tooltip: the fault's label and what exactly


@dataclass
class FailingOp:
    """An op a checker could not fit, placed on the timeline and linked to its view."""
    time: int            # ns since run start (the op's invoke)
    label: str
    href: str


@dataclass
class LeaderChange:
    time: int            # ns since run start
    node: str
    epoch: int | None    # None: observed by polling the adapter, which names no epoch
    first: bool          # the run's first election: a start, not a change


@dataclass
class Timeline:
    bin_ns: int
    end: int                                       # ns; the plot spans 0..end
    counts: dict[str, list[int]]                   # outcome -> completions per bin
    latency_ms: dict[int, list[float | None]]      # percentile -> per bin (ok ops)
    faults: list[FaultWindow] = field(default_factory=list)
    leaders: list[LeaderChange] = field(default_factory=list)
    marks: list[tuple[int, str]] = field(default_factory=list)   # (ns, what happened)
    nodes: list[str] = field(default_factory=list)               # one lane each
    node_spans: list[NodeSpan] = field(default_factory=list)
    failing: list[FailingOp] = field(default_factory=list)
    # Where the leaders come from (checkers.coverage): "events", "observed"
    # (the harness polled the adapter's leader()), None: nothing says.
    leader_source: str | None = None

    @property
    def bins(self) -> int:
        return len(self.counts["ok"])


def op_counts(ops: list[Op]) -> dict[str, Counter[str]]:
    """f -> outcome (ok, refused, error, info) -> number of client completions."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for op in ops:
        if op.process != NEMESIS and outcome(op.type, op.f, op.error) in OUTCOMES:
            out[str(op.f)][outcome(op.type, op.f, op.error)] += 1
    return dict(sorted(out.items()))


def bin_width_ns(span_ns: int) -> int:
    for s in NICE_BINS_S:
        if span_ns / (s * NS) <= MAX_BINS:
            return int(s * NS)
    return int(span_ns / MAX_BINS) + 1


def timeline(ops: list[Op], events: dict[str, list[dict[str, Any]]],
             run: dict[str, Any]) -> Timeline:
    """Throughput and latency per time bin, with the faults and leader changes."""
    start_monotonic_ns = run.get("start_monotonic_ns")
    times = [op.time for op in ops if isinstance(op.time, int) and op.time >= 0]
    end = max(times, default=0)
    faults, noops = fault_list(ops, end)
    leaders = leader_list(events, start_monotonic_ns, end)
    # Event lines measure elections even when none happened in the history.
    source = EVENTS if leaders or any(events.values()) else None
    if source is None:
        leaders = observed_leader_list(run, end)
        source = OBSERVED if who_led({}, run)[1] else None
    bin_ns = bin_width_ns(max(end, 1))
    n = end // bin_ns + 1
    counts = {o: [0] * n for o in OUTCOMES}
    lat: list[list[int]] = [[] for _ in range(n)]
    client = [op for op in ops if op.process != NEMESIS and isinstance(op.time, int)
              and op.time >= 0]
    for inv, done in pair_ops(client):
        what = outcome(done.type, done.f, done.error) if done is not None else None
        if done is None or what not in OUTCOMES:
            continue
        b = done.time // bin_ns
        counts[what][b] += 1
        if done.type == "ok" and done.time >= inv.time:
            lat[b].append(done.time - inv.time)
    latency_ms = {p: [_percentile(sorted(xs), p) for xs in lat] for p in PERCENTILES}
    marks = list(noops)
    workload_end = workload_end_ns(run)
    if workload_end is not None and 0 < workload_end < end:
        marks.append((workload_end, "workload ends: all healed, recovery, final reads"))
    names = node_names_of(run, faults, events)
    return Timeline(bin_ns, end, counts, latency_ms, faults, leaders, marks, names,
                    node_spans(faults, names), leader_source=source)


def node_names_of(run: dict[str, Any], faults: list[FaultWindow],
                  events: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The run's nodes: run.json's, else the config's count, else whatever was seen."""
    nodes = run.get("nodes")
    if isinstance(nodes, dict) and nodes:
        return sorted(map(str, nodes), key=_node_order)
    config = run.get("config")
    count = config.get("nodes") if isinstance(config, dict) else None
    if type(count) is int and 0 < count <= 64:
        return [f"n{i}" for i in range(1, count + 1)]
    seen = {n for w in faults for n in w.nodes} | set(events)
    return sorted(seen, key=_node_order)


def lost_peers(cut: Any, nodes: list[str]) -> dict[str, list[str]]:
    """Pure: each node that lost a link under `cut` (directed pairs; a link cut
    either way counts), with the peers it lost."""
    lost: dict[str, set[str]] = {n: set() for n in nodes}
    for pair in cut if isinstance(cut, list) else []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            a, b = map(str, pair)
            if a in lost and b in lost:
                lost[a].add(b)
                lost[b].add(a)
    return {n: sorted(peers, key=_node_order) for n, peers in lost.items() if peers}


def cut_off(cut: Any, nodes: list[str]) -> dict[str, list[str]]:
    """Pure: each node that cannot reach a majority (itself included) under
    `cut`, with the peers it lost."""
    majority = len(nodes) // 2 + 1
    return {n: peers for n, peers in lost_peers(cut, nodes).items()
            if len(nodes) - len(peers) < majority}


def node_spans(faults: list[FaultWindow], nodes: list[str]) -> list[NodeSpan]:
    """Which node was down, paused, cut off from a majority or lost some links,
    and when."""
    out = []
    for w in faults:
        value = w.value if isinstance(w.value, dict) else {}
        if w.f in CUT_FAULTS:
            isolated = cut_off(value.get("cut"), nodes)
            cut = c if isinstance(c := value.get("cut"), list) else []
            for node, peers in lost_peers(value.get("cut"), nodes).items():
                state = CUT_OFF_STATE if node in isolated else LINKS_CUT_STATE
                reach = ("cannot reach a majority" if node in isolated
                         else "still reaches a majority")
                own = [p for p in cut if isinstance(p, (list, tuple)) and node in map(str, p)]
                out.append(NodeSpan(node, state, w.f, w.start, w.end,
                                    f"{w.label}; its links cut: {links_text(own)}; "
                                    f"lost {' '.join(peers)}, {reach}"))
            continue
        hit = {KILL.name: value.get("killed"), PAUSE.name: value.get("paused")}.get(w.f)
        targets = hit if isinstance(hit, list) else w.nodes
        state = {KILL.name: DOWN_STATE, PAUSE.name: PAUSED_STATE}.get(w.f, w.f)
        for node in targets:
            out.append(NodeSpan(str(node), state, w.f, w.start, w.end, w.label))
    return out


def workload_end_ns(run: dict[str, Any]) -> int | None:
    """When the nemesis stopped and the cluster was left to recover, in history time."""
    offset = run.get("schedule_offset_ns")
    config = run.get("config")
    limit = config.get("time_limit") if isinstance(config, dict) else None
    if type(offset) is not int or not isinstance(limit, (int, float)) or isinstance(limit, bool):
        return None
    return offset + int(limit * NS)


def _percentile(xs: list[int], p: int) -> float | None:
    if not xs:
        return None
    i = min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))
    return xs[i] / 1e6


def fault_list(ops: list[Op], end: int) -> tuple[list[FaultWindow], list[tuple[int, str]]]:
    """Each fault from inject to heal (availability's windows), labelled, and
    the faults that changed nothing (a shape cutting no link, a kill of a node
    already down) as marks: they are not drawn as active faults.

    The label reads the completion too: a fault aimed at "the leader" only
    learns which node that was when it is applied.
    """
    nemesis = [op for op in ops if op.process == NEMESIS and isinstance(op.time, int)]
    applied = {(inv.f, inv.time): _merged(inv.value, done.value if done else None)
               for inv, done in pair_ops(nemesis)}
    faults, _ = fault_windows(nemesis, end)
    noops = [(max(0, t), f"no-op: {fault_label(str(f), value)} ({noop_reason(value)})")
             for (f, t), value in applied.items()
             if f not in HEALED_BY and noop_reason(value) is not None]
    out = []
    for w in faults:
        value = applied.get((w["f"], w["start"]), w["value"])
        label = fault_label(str(w["f"]), value)
        nodes = value.get("nodes") if isinstance(value, dict) else None
        nodes = [str(n) for n in nodes] if isinstance(nodes, list) else []
        out.append(FaultWindow(str(w["f"]), max(0, w["start"]), max(w["start"], w["end"]),
                               nodes, label, value))
    return out, noops


def _merged(invoked: Any, applied: Any) -> Any:
    if isinstance(invoked, dict) and isinstance(applied, dict):
        return {**invoked, **applied}
    return applied if isinstance(applied, dict) else invoked


def leader_list(events: dict[str, list[dict[str, Any]]], start_monotonic_ns: int | None,
                end: int) -> list[LeaderChange]:
    """Elections in history time; the first one before the history started is kept
    (flagged `first`) so the plot can say who led at the start."""
    if type(start_monotonic_ns) is not int:
        return []
    elections = [e for e in leader_elections(events) if type(e["t"]) is int]
    out = []
    for i, e in enumerate(elections):
        t = e["t"] - start_monotonic_ns
        if t <= end:
            out.append(LeaderChange(max(0, t), str(e["node"]), e["epoch"], i == 0))
    # Before the history began only the latest election matters: who led at time 0.
    early = [c for c in out if c.time == 0]
    return early[-1:] + [c for c in out if c.time > 0]


def observed_leader_list(run: dict[str, Any], end: int) -> list[LeaderChange]:
    """run.json `leaders` (the harness's poll of the adapter) as leader changes:
    each node seen leading after another (a spell with no leader is not one)."""
    out: list[LeaderChange] = []
    for t, node in observed_leaders(run):
        if node is None or t > end or (out and out[-1].node == node):
            continue
        out.append(LeaderChange(max(0, t), node, None, not out))
    return out


@dataclass
class RunReport:
    """Everything `harness.report.html.render` shows; any piece may be missing
    (an imported or crashed run), and the page says so instead of failing."""
    run_id: str
    run: dict[str, Any]                       # run.json, {} when missing
    verdicts: dict[str, Any] | None           # verdicts.json, None when never judged
    counts: dict[str, Counter[str]]
    timeline: Timeline | None                 # None without a history
    links: list[tuple[str, str]]              # (relative href, label), files that exist
    notes: list[str] = field(default_factory=list)   # what was missing or torn
