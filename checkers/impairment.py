"""What the faults of a run took away from the cluster, moment by moment.

Read off the nemesis ops of a history, by what each fault declares it takes
(`checkers.faults.FaultOp.takes`): nodes (down, paused, truncated, removed as
voters, re-formatted for another cluster), links (a partition's `cut` pairs,
directed), nodes starved (counted against a quorum only), nothing (a trigger:
what it fires is recorded as its own op), or, for a fault with no row,
anything. The result is a timeline of segments, each
with the nodes out and the links cut, from which availability asks: was a
quorum of the voters connected, and could a given leader reach one?

A fault starts counting at its invoke (a trigger may freeze a node's disk a
moment before its op is recorded: availability widens by `LEAD_S`), and a
lasting one ends at the completion of the heal that names its nodes, plus
the time the node takes to come back (`timeline`).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from checkers.faults import (
    DISK,
    FAULT_OPS,
    KILL,
    LINKS,
    NODES,
    NODES_DURING_OP,
    NOTHING,
    OTHER_CLUSTER,
    STARVED,
    WAITED_FOR_LEADER,
)
from checkers.history import NEMESIS, Op, noop_reason, pair_ops

# The f of every op that heals a known fault.
HEALS = {op.heal_f for op in FAULT_OPS.values()}
# The heals that start the processes of the nodes they name: a kill's, a
# faulty disk's, and whatever puts a node back into its own cluster.
STARTS_NODES = {KILL.heal_f, DISK.heal_f} | {
    op.heal_f for op in FAULT_OPS.values() if op.effect == OTHER_CLUSTER}


@dataclass
class Segment:
    """[start, end) of history time with one state of the cluster."""

    start: int
    end: int
    out: frozenset[str]                  # nodes taken away
    cut: frozenset[tuple[str, str]]      # directed links cut
    anything: bool                       # an unmodelled fault in force: anything may be gone
    starved: frozenset[str] = frozenset()  # nodes starved: up, but no help to a quorum


@dataclass
class Impairment:
    """The run's timeline, and the instants something came back (heals)."""

    nodes: list[str]
    voters: list[str]
    segments: list[Segment]
    heals: list[int] = field(default_factory=list)        # completions of heals that acted
    takes: list[dict[str, Any]] = field(default_factory=list)  # each fault: f, nodes, start
    # Each node a fault left without its voting state: node, f, start, end.
    state_out: list[dict[str, Any]] = field(default_factory=list)
    _start_cache: list[int] = field(default_factory=list, repr=False)

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def at(self, t: int) -> Segment:
        i = bisect.bisect_right(self._starts, t) - 1
        return self.segments[min(max(i, 0), len(self.segments) - 1)]

    def overlapping(self, a: int, b: int) -> list[Segment]:
        """The segments that meet [a, b] (in order; segments are consecutive)."""
        i = max(bisect.bisect_right(self._starts, a) - 1, 0)
        j = bisect.bisect_right(self._starts, b)
        return [s for s in self.segments[i:j] if s.end > a]

    def out_spans(self, node: str, a: int, b: int) -> list[tuple[int, int]]:
        """The parts of [a, b) in which `node` was out."""
        return [(max(a, s.start), min(b, s.end)) for s in self.overlapping(a, b)
                if node in s.out and min(b, s.end) > max(a, s.start)]

    @property
    def _starts(self) -> list[int]:
        if len(self._start_cache) != len(self.segments):
            self._start_cache = [s.start for s in self.segments]
        return self._start_cache

    def leader_ok(self, leader: str, seg: Segment) -> bool:
        """The leader is up and linked both ways with enough voters up to make a
        majority with itself (a leader only needs to reach its followers)."""
        if seg.anything or leader in seg.out:
            return False
        if not seg.out and not seg.cut:
            return True
        reach = sum(1 for v in self.voters if v != leader and v not in seg.out
                    and (leader, v) not in seg.cut and (v, leader) not in seg.cut)
        return reach + (1 if leader in self.voters else 0) >= self.majority

    def quorum_ok(self, seg: Segment) -> bool:
        """Some voter could lead: up, and linked both ways with enough voters up
        to make a majority (a candidate needs their votes, a leader their
        fetches; the followers need not reach each other). Starved voters
        count as out here: a quorum that needs them may not answer within an
        election's timers; a leader that has one without them keeps it."""
        if seg.anything:
            return False
        if seg.starved:
            seg = Segment(seg.start, seg.end, seg.out | seg.starved, seg.cut, False)
        if not seg.out and not seg.cut:
            return True
        return any(self.leader_ok(v, seg) for v in self.voters if v not in seg.out)


def named_nodes(value: Any) -> list[str] | None:
    """The nodes a fault op's value names (`nodes`), or None where it names none."""
    nodes = value.get("nodes") if isinstance(value, dict) else None
    if isinstance(nodes, list):
        return [n for n in nodes if isinstance(n, str)]
    return None


def acted_at(invoked: int, finished: int, value: Any) -> int:
    """When a fault op began to take anything: its invoke, or for a fault
    aimed at the leader that waited for one, that much later (it took
    nothing meanwhile: an outage while it waited is not its doing), never
    past its completion."""
    waited = value.get(WAITED_FOR_LEADER) if isinstance(value, dict) else None
    if not isinstance(waited, (int, float)) or isinstance(waited, bool) or waited <= 0:
        return invoked
    return min(invoked + int(waited * 1e9), max(finished, invoked))


def started_by(f: str, value: Any) -> list[str]:
    """The nodes a nemesis op started again: those named by a heal that starts
    the nodes it names (`STARTS_NODES`), and those its value says it
    `restarted` (a squeeze's heal restarting what the OOM killer took, a
    disk's heal, a removal's restart). A heal that names a node and starts
    nothing (a squeeze lifted) brings no exited process back."""
    started = set(named_nodes(value) or []) if f in STARTS_NODES else set()
    restarted = value.get("restarted") if isinstance(value, dict) else None
    if isinstance(restarted, list):
        started |= {n for n in restarted if isinstance(n, str)}
    return sorted(started)


def _cut(value: Any) -> list[tuple[str, str]] | None:
    cut = value.get("cut") if isinstance(value, dict) else None
    if isinstance(cut, list):
        return [(p[0], p[1]) for p in cut if isinstance(p, list | tuple) and len(p) == 2
                and all(isinstance(x, str) for x in p)]
    return None


def timeline(history: list[Op], nodes: list[str], voters: list[str] | None,
             run_end: int, rejoin_ns: int = 0,
             started: dict[str, list[int]] | None = None, boot_wait_ns: int = 0,
             exited: dict[str, list[int]] | None = None,
             state_lines: StateLines | None = None,
             ) -> Impairment:
    """The cluster's state between consecutive nemesis ops. What comes back (a
    node started or resumed, a link no longer cut) counts as back only
    `rejoin_ns` later: a node must find its leader. A node whose `start`
    line (history times in `started`) follows its heal, within
    `boot_wait_ns`, is back only from that line on: its process was still
    booting. A node whose process exited with no kill of the harness (history
    times in `exited`: a host fault's OOM kill, a crash) is out from that
    moment until its next start line, or, where it prints none, the next heal
    that starts it (`STARTS_NODES`). A node named by a fault that may take
    its voting state (`FaultOp.loses_state`) is out, past its restart, until
    its lines show it back (`state_lines`, `state_out_until`)."""
    # Each change: (time, order, kind, payload); applied in time order.
    changes: list[tuple[int, int, str, Any]] = []
    heals: list[int] = []
    takes: list[dict[str, Any]] = []
    state_out: list[dict[str, Any]] = []
    seq = 0
    healed_at: dict[str, list[int]] = {}    # node -> completions of heals that started it
    unknown_open = False     # an unmodelled fault in force until the next unmodelled op
    for inv, done in pair_ops(op for op in history if op.process == NEMESIS):
        value = done.value if done is not None and done.value is not None else inv.value
        if done is not None and noop_reason(done.value):
            continue  # it changed nothing
        finished = done.time if done is not None else run_end
        error = done is not None and done.error is not None
        row = FAULT_OPS.get(inv.f)
        seq += 1
        for n in started_by(inv.f, value):
            healed_at.setdefault(n, []).append(finished)
        if row is None and inv.f in HEALS:
            # A heal: the nodes it names come back (`start`, `resume`, ...);
            # `heal` removes every cut.
            heals.append(finished)
            changes.append((finished, seq, "heal", (inv.f, named_nodes(value))))
            if error:
                changes.append((inv.time, seq, "anything", (inv.f,)))
                changes.append((finished, seq + 1, "anything-over", (inv.f,)))
                seq += 1
            continue
        if row is None:
            # A plug-in's op: anything may be gone from it until the next such
            # op (its heal, presumably) completes.
            takes.append({"f": inv.f, "nodes": None, "start": inv.time})
            if not unknown_open:
                changes.append((inv.time, seq, "anything", ("plug-in",)))
            else:
                changes.append((finished, seq, "anything-over", ("plug-in",)))
                heals.append(finished)
            unknown_open = not unknown_open
            continue
        named = named_nodes(value) or named_nodes(inv.value)
        if row.takes == NOTHING and not error:
            continue
        begins = acted_at(inv.time, finished, value)
        if row.takes != STARVED or error:
            takes.append({"f": inv.f, "nodes": named, "start": begins})
        if error or (row.takes in (NODES, NODES_DURING_OP, STARVED) and not named):
            # It failed part way, or names nobody: anything while its op ran.
            changes.append((begins, seq, "anything", (inv.f,)))
            seq += 1
            changes.append((finished, seq, "anything-over", (inv.f,)))
        if row.takes == LINKS and not error:
            changes.append((begins, seq, "cut", (inv.f, _cut(value) or [])))
        elif row.takes == STARVED and named and not error:
            # Until its heal names them; not among `takes`: a leader starved
            # is no leader taken, so it excuses no failover where who led is
            # unknown.
            changes.append((begins, seq, "starve", (row.heal_f, named)))
        elif row.takes in (NODES, NODES_DURING_OP) and named:
            # What brings them back: the heal's f, or the end of its own op.
            tag = row.heal_f if row.takes == NODES else f"{inv.f}#{seq}"
            changes.append((begins, seq, "out", (tag, named)))
            if row.takes == NODES_DURING_OP:
                seq += 1
                changes.append((finished, seq, "back", (tag, named)))
            lines_of_state = state_lines if row.loses_state else None
            for node in named:
                if lines_of_state is None:
                    break
                until = state_out_until(lines_of_state, node, begins, finished, run_end,
                                        (started or {}).get(node, []))
                if until is not None:
                    seq += 1
                    changes.append((begins, seq, "out", (f"state#{seq}", [node])))
                    changes.append((until, seq, "regained", (f"state#{seq}", node)))
                    state_out.append({"f": inv.f, "node": node, "start": begins,
                                      "end": until})
    for node, times in sorted((exited or {}).items()):
        for t in sorted(times):
            seq += 1
            tag = f"exit#{seq}"
            back = min([x for x in (started or {}).get(node, []) if x > t]
                       or [x for x in healed_at.get(node, []) if x > t] or [run_end])
            changes.append((t, seq, "out", (tag, [node])))
            seq += 1
            changes.append((back, seq, "back", (tag, [node])))
    changes.sort(key=lambda c: (c[0], c[1]))

    out: dict[str, dict[str, int]] = {}   # node -> what brings it back -> since which change
    starved: dict[str, dict[str, int]] = {}   # the same, for nodes starved
    cut: dict[tuple[str, str], int] = {}  # link -> the change that cut it
    anything: set[str] = set()
    segments: list[Segment] = []
    start = min([0] + [c[0] for c in changes])
    pending = list(changes)
    heapq.heapify(pending)
    late = len(changes) + seq + 1        # sequence numbers of changes made while applying

    def close(t: int) -> None:
        nonlocal start
        if t > start or not segments:
            segments.append(Segment(start, max(t, start), frozenset(out), frozenset(cut),
                                    bool(anything), frozenset(starved)))
            start = max(t, start)

    def later(t: int, kind: str, payload: Any) -> None:
        nonlocal late
        late += 1
        heapq.heappush(pending, (t + rejoin_ns, late, kind, payload))

    def booted(node: str, t: int) -> int:
        """When the node, brought back at t, was up: its first start line after t."""
        lines = (started or {}).get(node, [])
        i = bisect.bisect_right(lines, t)
        return lines[i] if i < len(lines) and lines[i] <= t + boot_wait_ns else t

    def rejoin(t: int, tag: str, named: list[str] | None, since: int) -> None:
        if named is None:
            later(t, "rejoined", (tag, None, since))
            return
        for n in named:
            later(booted(n, t), "rejoined", (tag, [n], since))

    while pending:
        t, n_seq, kind, payload = heapq.heappop(pending)
        close(t)
        if kind in ("out", "starve"):
            tag, named = payload
            for n in named:
                (out if kind == "out" else starved).setdefault(n, {})[tag] = n_seq
        elif kind == "back":
            rejoin(t, payload[0], payload[1], n_seq)
        elif kind == "rejoined":
            tag, named, since = payload
            for held in (out, starved):
                for n in named if named is not None else list(held):
                    if held.get(n, {}).get(tag, since) < since:
                        del held[n][tag]
                        if not held[n]:
                            del held[n]
        elif kind == "regained":
            tag, node = payload
            out.get(node, {}).pop(tag, None)
            if node in out and not out[node]:
                del out[node]
        elif kind == "cut":
            # A partition replaces the whole cut: the links it no longer cuts
            # come back like healed ones.
            later(t, "uncut", n_seq)
            cut.update({pair: n_seq for pair in payload[1]})
        elif kind == "uncut":
            cut = {pair: since for pair, since in cut.items() if since >= payload}
        elif kind == "anything":
            anything.add(payload[0])
        elif kind == "anything-over":
            anything.discard(payload[0])
        elif kind == "heal":
            heal_f, named = payload
            if heal_f == FAULT_OPS["partition"].heal_f:
                later(t, "uncut", n_seq)   # what partitions before it cut
            rejoin(t, heal_f, named, n_seq)
    close(max(run_end, start))
    segments = [s for s in segments if s.end > s.start] or [
        Segment(0, max(run_end, 1), frozenset(), frozenset(), False)]
    return Impairment(sorted(nodes), sorted(voters or nodes), segments, heals, takes,
                      state_out)


@dataclass(frozen=True)
class StateLines:
    """What a node's own lines say about its voting state, in history time:
    `back`, when it showed it votes again (a line of its system's saying so,
    or one saying it leads; with no such line declared, following a known
    leader or leading); `lost`, when it said it found that state gone, or None
    where its system declares no such line (every fault that may take the
    state then counts as having taken it)."""

    back: dict[str, list[int]]
    lost: dict[str, list[int]] | None


def state_out_until(lines: StateLines, node: str, hit: int, op_end: int,
                    run_end: int, started: Sequence[int] = ()) -> int | None:
    """Until when a fault at `hit` (its op done at `op_end`) that may take
    `node`'s voting state keeps it out of the quorum: its first line showing
    it back after it lost the state (after the op, where its system says
    nothing of a loss), or the run's end. None when the node said nothing of a
    loss when it started again (its first start line after the op, in
    `started`) or before it was back: it kept its state."""
    back = lines.back.get(node, [])
    if lines.lost is None:
        since = op_end
    else:
        first_back = next((t for t in back if t > op_end), None)
        restart = next((t for t in started if t >= op_end), None)
        lost = next((t for t in lines.lost.get(node, []) if t >= hit), None)
        if (lost is None or (first_back is not None and first_back < lost)
                or (restart is not None and lost > restart)):
            return None
        since = lost
    return next((t for t in back if t > since), run_end)
