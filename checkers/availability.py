"""Availability: when could clients not get anything done, and why, and how
often did leadership move?

The figures are always reported in stats: windows with no successful op longer
than `gap_s`, matched against the nemesis faults active at the time; elections
and leader changes, split into those during a fault, those within `settle_s`
after a heal (with no fault active: KIP-996's disruptive server), and quiet ones.
The verdict is invalid when a limit is exceeded. Configured limits:

    max_unavailable_s            longest allowed window with no successful op
    max_leader_changes_per_heal  leader changes in one heal's settle window
    max_quiet_leader_changes     leader changes with no fault and no recent heal

and, derived from the run itself and always in force: `unexplained-unavailable`,
a window with no fault in force at any point of it longer than op timeout +
one election (2 x election timeout + fetch timeout, from the nodes' start
lines) + a grace for a loaded machine, less the time every op in flight was
sent to a node that was out (its process exited and did not come back: a
final read pinned to it); and two which excuse only what
a fault actually took away (`checkers.impairment`: the nodes and links each
fault takes, by its row in `checkers.faults`, against the voters):

- `unavailable-while-healthy`: within a window, the stretch not excused may
  last at most op timeout + failover + a grace for a loaded machine.
  Excused: time without a connected quorum of voters (a majority of voters
  starved by pressure counts as none; a starved minority, the leader's node
  among it or not, takes nothing); time the leader was
  down or cut from a majority (from the nodes' Leader events; a system
  without them: the failover after any fault that took a node or link, as it
  may have been the leader); each excuse runs on for failover + op timeout
  after it ends (one election plus its retries); after a heal too when the
  system says a rejoining node may depose a healthy leader; and time when
  every op in flight had been sent to a node a fault had taken (the
  client's own node).
- `unavailable-while-healthy-summed`: the unexcused stretches of the windows
  not flagged otherwise, added up over the run, may last no longer than one
  stretch may: a correct cluster has nothing to recover from while no fault
  takes anything, so it does not stall often and briefly between the faults
  that excuse the rest (the stretches are in `unexcused_unavailable_s`).
- `leader-change-while-healthy`: a leader lost (it resigned, its process
  restarted with no fault, or another was elected) although, for a failover
  before, there was no trouble: a quorum connected, the leader of the moment
  up and linked both ways with a majority (no leader at all: an election's
  aftermath, in which a rival may still depose the new one), and (when a
  rejoining node may disrupt) nothing came back. A leader that stepped down
  in its own epoch (or whose process restarted) is excused only by its own
  state or the quorum's, never by an aftermath elsewhere. Judged only where the nodes
  print Leader events.

The failover and recovery bounds come from the run's own timers: run.json
`timers` (the system declares them from its node options, `nodes.db.Timers`),
else the election and fetch timeouts on the nodes' start lines, else a
generic default; stats say which. Only time in which some client op was
outstanding, or between tries less than `gap_s` apart, counts: the recovery
pause before the final reads issues nothing by design and is never
"unavailable".

A "leader change" is any election after the first: a node re-elected in a new
epoch still interrupted service.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from checkers.elections import leader_elections
from checkers.faults import CUT, DEGRADED, DOWN, OTHER_CLUSTER, VOTERS, healed_by
from checkers.history import NEMESIS, Op, client_ops, collector_paused, noop_reason, pair_ops
from checkers.impairment import Impairment, StateLines, started_by, timeline
from checkers.verdict import Verdict, verdict
from nodes.events import FOLLOWER_ROLE, LEADER_ROLE, ROLE, START, VoteLoss

DEFAULTS = {"gap_s": 2.0, "settle_s": 5.0}
DERIVED_GRACE_S = 2.0
# A trigger may stop a node's disk a moment before its fault op is recorded.
LEAD_S = 1.0
# When neither run.json nor the nodes say: slow enough for any system we know.
GENERIC_TIMERS = {"failover_s": 10.0, "recovery_s": 30.0, "rejoin_s": 10.0,
                  "rejoin_disrupts": True,
                  "source": "generic default (no timers in run.json or start lines)"}
# How long after its heal a node's start line may come and still be its boot.
BOOT_WAIT_FAILOVERS = 3
# Rounds of election a correct failover may need, for timers read off the
# nodes' start lines (a run from before run.json had `timers`); what
# nodes.db.FAILOVER_ELECTION_ROUNDS says for the adapters, which the checkers
# sit below.
START_LINE_ELECTION_ROUNDS = 3
LEADER_LIMITS = ("max_leader_changes_per_heal", "max_quiet_leader_changes")
# Every threshold a run may set (`--threshold K=V`).
THRESHOLDS = (*DEFAULTS, "max_unavailable_s", *LEADER_LIMITS)
# Faults that stay in force until a later op undoes them; all others last as
# long as their own invoke..completion.
HEALED_BY = healed_by(DOWN, CUT, VOTERS, OTHER_CLUSTER, DEGRADED)
LASTING = frozenset(f for faults in HEALED_BY.values() for f in faults)
MAX_LISTED = 50
NS = 1_000_000_000


@collector_paused()   # millions of small acyclic objects: its passes free nothing
def check(history: list[Op], events: dict[str, list[dict]] | None, run: dict,
          thresholds: dict | None = None,
          exits: list[dict[str, Any]] | None = None,
          vote_loss: tuple[VoteLoss, ...] = ()) -> Verdict:
    """`exits`: the harness's records of node processes that exited with no
    kill of its own (`checkers.rundir.load_exits`); such a node is out from
    then on, as if a fault had killed it. `vote_loss`: the lines by which the
    systems' voters say they lost, and regained, the state their votes rest
    on (`state_lines`)."""
    configured = (run.get("config") or {}).get("thresholds") or {}
    limits = {**DEFAULTS, **configured, **(thresholds or {})}
    end = max((op.time for op in history), default=0)
    faults, heals = fault_windows(history, end)
    timers = run_timers(run, events)
    op_timeout = float((run.get("config") or {}).get("op_timeout") or 1.0)
    unhealthy_limit = round(op_timeout + timers["failover_s"] + DERIVED_GRACE_S, 3)
    derived = derived_limit_s(events, run)
    # A node or link that comes back counts as back only once its process
    # booted (its start line, where it prints one) and it found its leader.
    impairment = timeline(history, cluster_nodes(run, history, events), voters_of(run),
                          end, rejoin_ns=int(timers["rejoin_s"] * NS),
                          started=start_lines(events, run.get("start_monotonic_ns")),
                          boot_wait_ns=int(BOOT_WAIT_FAILOVERS * timers["failover_s"] * NS),
                          exited=exit_times(exits, run.get("start_monotonic_ns")),
                          state_lines=state_lines(events, run.get("start_monotonic_ns"),
                                                  vote_loss))
    # A node a fault left without its voting state keeps that fault in force.
    faults = [_state_held(f, impairment) for f in faults]
    gaps = unavailable_windows(history, int(limits["gap_s"] * NS), faults)
    elections = ([e for e in leader_elections(events) if type(e["t"]) is int]
                 if events is not None and type(run.get("start_monotonic_ns")) is int else None)
    leaders = (None if elections is None else
               leader_track(elections, events or {}, run["start_monotonic_ns"]))

    stats: dict[str, Any] = {"thresholds": limits, "faults": len(faults), "heals": len(heals),
                             "timers": timers, "max_unexplained_unavailable_s": derived,
                             "max_unhealthy_unavailable_s": unhealthy_limit,
                             **({} if derived is not None else {"why_no_unexplained_limit": (
                                 "the nodes print no start lines with their election and "
                                 "fetch timeouts; a window with no fault in force is held "
                                 "to max_unhealthy_unavailable_s instead")}),
                             # Nodes out past their restart: a fault took their voting state.
                             "voting_state_lost": [
                                 {"node": o["node"], "f": o["f"], "from_s": _s(o["start"]),
                                  "until_s": _s(o["end"])}
                                 for o in impairment.state_out][:MAX_LISTED]}
    idle_ns = int(limits["gap_s"] * NS)
    own_out = _union(own_nodes_out(history, impairment.out_spans, idle_ns))
    excuses = _union(excused_spans(impairment, leaders, timers, op_timeout) + own_out)
    stats.update(_gap_stats(gaps))
    # Only a process that exited and did not come back excuses a window with
    # no fault in force: a node the impairment counts out for want of a
    # leader (a cluster the run left stuck) is the outage itself.
    gone = exited_spans(history, exit_times(exits, run.get("start_monotonic_ns")),
                        start_lines(events, run.get("start_monotonic_ns")) or {})
    unexplained = _unexplained_anomalies(
        gaps, derived, _union(own_nodes_out(history, _spans_of(gone), idle_ns)))
    flagged = {(a["start_s"], a["end_s"]) for a in unexplained}
    unflagged = [g for g in gaps if (g["start_s"], g["end_s"]) not in flagged]
    per_window = _unhealthy_gap_anomalies(unflagged, excuses, unhealthy_limit)
    flagged |= {(a["start_s"], a["end_s"]) for a in per_window}
    summed, stretches = _summed_unhealthy(
        [g for g in gaps if (g["start_s"], g["end_s"]) not in flagged], excuses, unhealthy_limit)
    stats["unexcused_unavailable_s"] = _s(sum(y - x for x, y in stretches))
    anomalies = _gap_anomalies(gaps, limits) + unexplained + per_window + summed
    if leaders is None:
        stats["leader_changes_judged"] = ("no: " + ("no node events" if events is None else
                                                    "run.json has no start_monotonic_ns"))
    else:
        changes_while_healthy = healthy_leader_losses(leaders, impairment, timers, end)
        stats["leader_changes_while_healthy"] = len(changes_while_healthy)
        anomalies += changes_while_healthy[:MAX_LISTED]

    unknown = False
    if events is None or type(run.get("start_monotonic_ns")) is not int:
        stats["leadership"] = None
        stats["why_no_leadership"] = ("no node events" if events is None else
                                      "run.json has no start_monotonic_ns")
        unknown = any(k in limits for k in LEADER_LIMITS)
        if unknown:
            stats["reason"] = f"leader-change limits set, but {stats['why_no_leadership']}"
    else:
        assert elections is not None
        changes = leader_changes(elections, run["start_monotonic_ns"], faults, heals,
                                 int(limits["settle_s"] * NS))
        stats["elections"] = len(elections)
        stats.update(_leadership_stats(changes, heals))
        anomalies += _leadership_anomalies(changes, heals, limits)

    if anomalies:
        return verdict(False, anomalies, stats)
    return verdict("unknown" if unknown else True, [], stats)


def _s(ns: int | None) -> float | None:
    return None if ns is None else round(ns / NS, 3)


# --- faults ----------------------------------------------------------------------


def _nodes(value: Any) -> set[str] | None:
    """The nodes a nemesis op names, or None when it names none (= all of them)."""
    nodes = value.get("nodes") if isinstance(value, dict) else None
    if isinstance(nodes, list) and nodes:
        return {n for n in nodes if isinstance(n, str)}
    return None


def fault_windows(history: list[Op], run_end: int) -> tuple[list[dict], list[dict]]:
    """Each fault with the time it was in force, and each heal (when it completed)."""
    faults: list[dict] = []
    heals: list[dict] = []
    open_faults: list[dict] = []
    for inv, done in pair_ops(op for op in history if op.process == NEMESIS):
        if done is not None and noop_reason(done.value):
            continue  # it changed nothing: neither a fault nor a heal
        finished = done.time if done is not None else run_end
        if inv.f in HEALED_BY:
            healed = _nodes(inv.value)
            heals.append({"f": inv.f, "value": inv.value, "time": finished})
            for fault in [f for f in open_faults if f["f"] in HEALED_BY[inv.f]]:
                if healed is None or fault["nodes"] is None or fault["nodes"] & healed:
                    fault["end"] = finished
                    open_faults.remove(fault)
            continue
        fault = {"f": inv.f, "value": inv.value, "start": inv.time,
                 "end": finished, "nodes": _nodes(inv.value)}
        faults.append(fault)
        if inv.f in LASTING:
            fault["end"] = None
            open_faults.append(fault)
    for fault in open_faults:
        fault["end"] = run_end
    return faults, heals


def _state_held(fault: dict, imp: Impairment) -> dict:
    """The fault, in force until the last node it left without its voting
    state showed it back."""
    ends = [o["end"] for o in imp.state_out if o["f"] == fault["f"]
            and o["start"] == fault["start"]]
    return dict(fault, end=max([fault["end"], *ends]))


def _fault_ref(fault: dict) -> dict:
    return {"f": fault["f"], "value": fault["value"], "start_s": _s(fault["start"]),
            "end_s": _s(fault["end"])}


def active_at(faults: list[dict], t: int) -> list[dict]:
    return [f for f in faults if f["start"] <= t <= f["end"]]


# --- timers and nodes ------------------------------------------------------------


def run_timers(run: dict, events: dict[str, list[dict]] | None) -> dict[str, Any]:
    """The failover and recovery bounds this run is judged by: run.json `timers`
    (declared by the system), else the nodes' start lines (election and fetch
    timeouts: noticing, then up to START_LINE_ELECTION_ROUNDS rounds of at most twice the
    election timeout), else a generic default."""
    declared = run.get("timers")
    if isinstance(declared, dict) and all(
            isinstance(declared.get(k), int | float) for k in ("failover_s", "recovery_s")):
        failover = float(declared["failover_s"])
        rejoin = declared.get("rejoin_s")
        return {"failover_s": failover, "recovery_s": float(declared["recovery_s"]),
                "rejoin_s": float(rejoin) if isinstance(rejoin, int | float) else failover,
                "rejoin_disrupts": declared.get("rejoin_disrupts") is not False,
                "source": str(declared.get("source") or "run.json")}
    from_lines = start_line_timers_ms(events)
    if from_lines is None:
        return dict(GENERIC_TIMERS)
    election, fetch = from_lines
    failover = round((fetch + START_LINE_ELECTION_ROUNDS * 2 * election) / 1000, 3)
    return {"failover_s": failover, "recovery_s": 3 * failover, "rejoin_s": failover,
            "rejoin_disrupts": True,
            "source": "the nodes' start lines (election and fetch timeouts)"}


def start_line_timers_ms(events: dict[str, list[dict]] | None) -> tuple[int, int] | None:
    """The longest election and fetch timeouts the nodes' start lines report."""
    election = fetch = None
    for evs in (events or {}).values():
        for ev in evs:
            if ev.get("event") == START.name and type(ev.get("election_timeout_ms")) is int \
                    and type(ev.get("fetch_timeout_ms")) is int:
                election = max(election or 0, ev["election_timeout_ms"])
                fetch = max(fetch or 0, ev["fetch_timeout_ms"])
    return None if election is None or fetch is None else (election, fetch)


def derived_limit_s(events: dict[str, list[dict]] | None, run: dict) -> float | None:
    """The longest window with no fault in force at all a correct cluster can
    cause: one election (2 x election timeout + fetch timeout, from the
    nodes' start lines) after an op timeout, plus a grace; None when the
    nodes did not report their timers."""
    from_lines = start_line_timers_ms(events)
    if from_lines is None:
        return None
    election, fetch = from_lines
    op_timeout = float((run.get("config") or {}).get("op_timeout") or 1.0)
    return round(op_timeout + (2 * election + fetch) / 1000 + DERIVED_GRACE_S, 3)


def exit_times(exits: list[dict[str, Any]] | None, start_ns: Any) -> dict[str, list[int]]:
    """node -> history times of its process's recorded exits."""
    out: dict[str, list[int]] = {}
    if type(start_ns) is not int:
        return out
    for record in exits or []:
        at = record.get("monotonic_ns")
        if isinstance(record.get("node"), str) and type(at) is int:
            out.setdefault(record["node"], []).append(at - start_ns)
    return out


def start_lines(events: dict[str, list[dict]] | None, start_ns: Any
                ) -> dict[str, list[int]] | None:
    """Each node's start lines, in history time; None without events."""
    if events is None or type(start_ns) is not int:
        return None
    return {node: sorted(ev["t"] - start_ns for ev in evs
                         if ev.get("event") == START.name and type(ev.get("t")) is int)
            for node, evs in events.items()}


def state_lines(events: dict[str, list[dict]] | None, start_ns: Any,
                vote_loss: tuple[VoteLoss, ...]) -> StateLines | None:
    """What each node's lines say of its voting state (`StateLines`); None
    without events. Back: its system's line saying it votes again, or a
    Leader line; where its system declares no such lines, a Follower line
    naming a leader counts too (it found the quorum again)."""
    if events is None or type(start_ns) is not int:
        return None
    back: dict[str, list[int]] = {}
    lost: dict[str, list[int]] = {}
    for node, evs in events.items():
        for ev in evs:
            kind, t = ev.get("event"), ev.get("t")
            if type(t) is not int:
                continue
            if any(kind == v.lost.name and ev.get("what") == v.what for v in vote_loss):
                lost.setdefault(node, []).append(t - start_ns)
            elif (any(kind == v.regained.name for v in vote_loss)
                  or (kind == ROLE.name and (ev.get("role") == LEADER_ROLE or (
                      not vote_loss and ev.get("role") == FOLLOWER_ROLE
                      and ev.get("leader") is not None)))):
                back.setdefault(node, []).append(t - start_ns)
    return StateLines({n: sorted(ts) for n, ts in back.items()},
                      {n: sorted(ts) for n, ts in lost.items()} if vote_loss else None)


def cluster_nodes(run: dict, history: list[Op],
                  events: dict[str, list[dict]] | None) -> list[str]:
    """The run's nodes: run.json `nodes`, else every node with event lines or
    named by a nemesis op."""
    nodes = run.get("nodes")
    if isinstance(nodes, dict) and nodes:
        return sorted(nodes)
    named: set[str] = set(events or {})
    for op in history:
        if op.process == NEMESIS:
            named |= _nodes(op.value) or set()
            for pair in (op.value or {}).get("cut") or [] if isinstance(op.value, dict) else []:
                named |= {x for x in pair if isinstance(x, str)}
    return sorted(named)


def voters_of(run: dict) -> list[str] | None:
    """The bootstrap voters when the run named some (KIP-853 observers), else None: all."""
    voters = ((run.get("config") or {}).get("node_options") or {}).get("voters")
    return [v for v in voters if isinstance(v, str)] if isinstance(voters, list) else None


# --- what the faults took away ----------------------------------------------------


def leader_track(elections: list[dict], events: dict[str, list[dict]],
                 start_ns: int) -> list[dict]:
    """Each leadership in history time: node, epoch, from (elected), to (it
    left the role, or the next leader was elected; None: to the end)."""
    out = []
    for i, e in enumerate(elections):
        begin = e["t"] - start_ns
        nxt = elections[i + 1]["t"] - start_ns if i + 1 < len(elections) else None
        left = None
        by_itself = False
        for ev in events.get(e["node"], []):
            t = ev.get("t")
            if type(t) is not int or t - start_ns <= begin:
                continue
            if nxt is not None and t - start_ns > nxt:
                break
            if ev.get("event") == START.name or (ev.get("event") == ROLE.name
                                              and ev.get("role") != LEADER_ROLE):
                left = t - start_ns
                # In its own epoch it stepped down, or its process restarted:
                # its own doing, not a rival's higher epoch.
                by_itself = ev.get("event") == START.name or ev.get("epoch") == e["epoch"]
                break
        ends = [x for x in (left, nxt) if x is not None]
        resigned = left is not None and (nxt is None or left < nxt)
        out.append({"node": e["node"], "epoch": e["epoch"], "from": begin,
                    "to": min(ends) if ends else None, "resigned": resigned,
                    "by_itself": resigned and by_itself})
    return out


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def trouble_spans(imp: Impairment, leaders: list[dict] | None) -> list[tuple[int, int]]:
    """When faults had taken what a correct cluster needs to serve: a connected
    quorum of voters, or (when whom it leads is known) a leader able to reach a
    majority. With the leader unknown, any fault that took something may have
    taken it: its first instant counts (the failover after it is the excuse)."""
    spans = [(seg.start, seg.end) for seg in imp.segments if not imp.quorum_ok(seg)]
    if leaders is None:
        spans += [(take["start"], take["start"]) for take in imp.takes]
    else:
        for seg in imp.segments:
            for x, y, leader in _leader_pieces(leaders, seg.start, seg.end):
                if leader is None or not imp.leader_ok(leader, seg):
                    spans.append((x, y))
    return _union(spans)


def excused_spans(imp: Impairment, leaders: list[dict] | None, timers: dict[str, Any],
                  op_timeout: float) -> list[tuple[int, int]]:
    """When a correct cluster may fail to serve: trouble, and a failover plus an
    op timeout after it (one election and its retries; clients waiting out an
    op sent to what was lost)."""
    after = int((timers["failover_s"] + op_timeout) * NS)
    lead = int(LEAD_S * NS)
    spans = [(a - lead, b + after) for a, b in trouble_spans(imp, leaders)]
    if timers["rejoin_disrupts"]:
        spans += [(h, h + after) for h in imp.heals]
    return _union(spans)


OutSpans = Callable[[str, int, int], list[tuple[int, int]]]


def own_nodes_out(history: list[Op], out_spans: OutSpans, idle_ns: int = 0
                  ) -> list[tuple[int, int]]:
    """When every client op in flight had been sent to a node that was out
    (`out_spans(node, a, b)`: the parts of [a, b) it was out; a sticky
    client's own node, or a node picked just before it went down): nobody
    was asking a node that could answer. An op counts on past its
    completion until the next op is sent, if that comes within `idle_ns`
    (the pause before a retry is the same demand): a client that tries a
    dead node every 0.2 s asks nothing of the others between its tries."""
    pairs = pair_ops(client_ops(history))
    sent = sorted(inv.time for inv, _ in pairs)
    in_flight: list[tuple[int, int]] = []
    asking: list[tuple[int, int]] = []
    for inv, done in pairs:
        finished = done.time if done is not None else inv.time
        if idle_ns:
            i = bisect.bisect_right(sent, finished)
            if i < len(sent) and sent[i] - finished <= idle_ns:
                finished = sent[i]
        in_flight.append((inv.time, finished))
        node = inv.node or (done.node if done is not None else None)
        out = out_spans(node, inv.time, finished) if node is not None else []
        asking += _minus([(inv.time, finished)], out)
    return _minus(_union(in_flight), _union(asking))


def exited_spans(history: list[Op], exited: dict[str, list[int]],
                 started: dict[str, list[int]]) -> dict[str, list[tuple[int, int]]]:
    """node -> when its process was gone by its own exit (`exit_times`):
    from each exit until its next start line, the next nemesis op that
    started it (`impairment.started_by`: not a squeeze's heal that only names
    it), or its next answer, whichever comes first (the run's end if none)."""
    end = max((op.time for op in history), default=0)
    back: dict[str, list[int]] = {n: list(ts) for n, ts in started.items()}
    for op in history:
        if op.type == "invoke":
            continue
        if op.process == NEMESIS:
            for n in started_by(op.f, op.value):
                back.setdefault(n, []).append(op.time)
        elif op.type == "ok" and op.node is not None:
            back.setdefault(op.node, []).append(op.time)
    out: dict[str, list[tuple[int, int]]] = {}
    for node, times in exited.items():
        returns = sorted(back.get(node, []))
        for t in sorted(times):
            i = bisect.bisect_right(returns, t)
            out.setdefault(node, []).append((t, returns[i] if i < len(returns) else end))
    return {n: _union(spans) for n, spans in out.items()}


def _spans_of(by_node: dict[str, list[tuple[int, int]]]) -> OutSpans:
    def out_spans(node: str, a: int, b: int) -> list[tuple[int, int]]:
        return [(max(a, x), min(b, y)) for x, y in by_node.get(node, ()) if x < b and y > a]
    return out_spans


def _minus(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of `spans` outside `holes` (both sorted and disjoint), in one sweep."""
    out = []
    j = 0
    for a, b in spans:
        cursor = a
        while j < len(holes) and holes[j][1] <= cursor:
            j += 1
        k = j
        while k < len(holes) and holes[k][0] < b:
            x, y = holes[k]
            if x > cursor:
                out.append((cursor, x))
            cursor = max(cursor, y)
            k += 1
        if cursor < b:
            out.append((cursor, b))
    return out


def _leader_pieces(leaders: list[dict], a: int, b: int) -> list[tuple[int, int, str | None]]:
    """[a, b) cut where the leader changes, each piece with its leader (None: none)."""
    cuts = sorted({a, b} | {x for ld in leaders for x in (ld["from"], ld["to"])
                            if x is not None and a < x < b})
    out = []
    for x, y in zip(cuts, cuts[1:], strict=False):
        holder = [ld for ld in leaders if ld["from"] <= x and (ld["to"] is None or ld["to"] > x)]
        out.append((x, y, holder[-1]["node"] if holder else None))
    return out


def healthy_leader_losses(leaders: list[dict], imp: Impairment, timers: dict[str, Any],
                          end: int) -> list[dict]:
    """Leaders lost although, for a failover before, there was no trouble (a
    lost quorum, a leader taken or missing: the aftermath of an election, in
    which a rival candidate may still depose the new leader)."""
    window = int(timers["failover_s"] * NS) + int(LEAD_S * NS)
    trouble = trouble_spans(imp, leaders)
    anomalies = []
    for ld in leaders:
        lost = ld["to"]
        if lost is None or lost <= 0 or lost > end:
            continue   # still leading, or lost before the clients started or after they stopped
        a = lost - window
        if ld["by_itself"]:
            # A leader that stepped down by itself answers for itself: only
            # its own state or the quorum's excuse it, not an election's
            # aftermath elsewhere.
            segs = imp.overlapping(a, lost)
            if any(not imp.quorum_ok(s) or not imp.leader_ok(ld["node"], s) for s in segs):
                continue
        elif any(x < lost and y > a for x, y in trouble):
            continue
        if timers["rejoin_disrupts"] and any(a <= h <= lost for h in imp.heals):
            continue
        segs = imp.overlapping(a, lost)
        anomalies.append({
            "type": "leader-change-while-healthy", "node": ld["node"], "epoch": ld["epoch"],
            "how": ("stepped down in its own epoch" if ld["by_itself"] else
                    "resigned" if ld["resigned"] else "another was elected"),
            "time_s": _s(lost), "led_from_s": _s(ld["from"]),
            "no_trouble_since_s": _s(max(a, 0)), "failover_s": timers["failover_s"],
            "in_force": [{"from_s": _s(max(s.start, a)), "out": sorted(s.out),
                          "cut": len(s.cut),
                          **({"starved": sorted(s.starved)} if s.starved else {})}
                         for s in segs if s.out or s.cut or s.starved]})
    return anomalies


# --- windows with no successful op -----------------------------------------------


def demand_spans(ops: list[Op], idle_ns: int) -> list[tuple[int, int]]:
    """When clients were asking: [invoke, completion] spans of client ops, merged
    across pauses of at most `idle_ns`. A client retrying ops that fail at once
    is still asking between its tries; only a longer silence (the recovery
    pause before the final reads) is time nobody asked."""
    spans = sorted((inv.time, done.time if done is not None else inv.time)
                   for inv, done in pair_ops(ops))
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + idle_ns:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def unavailable_windows(history: list[Op], gap_ns: int, faults: list[dict]) -> list[dict]:
    ops = client_ops(history)
    if not ops:
        return []
    oks = sorted(op.time for op in ops if op.type == "ok")
    marks = [min(op.time for op in ops)] + oks + [max(op.time for op in ops)]
    demand = demand_spans(ops, gap_ns)
    pieces = []
    for a, b in zip(marks, marks[1:], strict=False):
        if b - a <= gap_ns:
            continue
        # Only the parts of the gap in which some client op was outstanding.
        pieces += [(max(a, x), min(b, y)) for x, y in demand if x < b and y > a]
    gaps = []
    for a, b in pieces:
        if b - a > gap_ns:
            during = [f for f in faults if f["start"] <= b and f["end"] >= a]
            gaps.append({"start_s": _s(a), "end_s": _s(b), "duration_s": _s(b - a),
                         "faults": [_fault_ref(f) for f in during],
                         "explained": bool(during)})
    return gaps


def _gap_stats(gaps: list[dict]) -> dict[str, Any]:
    return {
        "gap_count": len(gaps),
        "longest_gap_s": max((g["duration_s"] for g in gaps), default=0.0),
        "unavailable_s": round(sum(g["duration_s"] for g in gaps), 3),
        "unexplained_gaps": sum(1 for g in gaps if not g["explained"]),
        "gaps": gaps[:MAX_LISTED],
    }


def _unhealthy_gap_anomalies(gaps: list[dict], excuses: list[tuple[int, int]],
                             limit: float) -> list[dict]:
    """Windows whose longest stretch nothing excuses outlasts `limit`."""
    out = []
    for g in gaps:
        a, b = int(g["start_s"] * NS), int(g["end_s"] * NS)
        stretches = _uncovered(a, b, excuses)
        longest = max(((y - x), x, y) for x, y in stretches) if stretches else (0, a, a)
        if longest[0] > limit * NS:
            out.append(dict(g, type="unavailable-while-healthy", limit_s=limit,
                            unexcused_s=_s(longest[0]),
                            unexcused=[_s(longest[1]), _s(longest[2])]))
    return out


def _summed_unhealthy(gaps: list[dict], excuses: list[tuple[int, int]], limit: float
                      ) -> tuple[list[dict], list[tuple[int, int]]]:
    """Windows each within `limit`, whose unexcused stretches add up past it:
    a correct cluster has nothing to recover from while nothing is taken, so
    over a run its healthy outages do not sum to more than one may last (a
    bug that stalls often, briefly, between the faults that excuse the rest).
    Also every stretch, for the stats."""
    per_gap = [_uncovered(int(g["start_s"] * NS), int(g["end_s"] * NS), excuses) for g in gaps]
    stretches = [st for pieces in per_gap for st in pieces if st[1] > st[0]]
    total = sum(y - x for x, y in stretches)
    if total <= limit * NS:
        return [], stretches
    windows = sum(1 for pieces in per_gap if any(y > x for x, y in pieces))
    return [{"type": "unavailable-while-healthy-summed", "limit_s": limit,
             "unexcused_s": _s(total), "windows": windows,
             "stretches": [[_s(x), _s(y)] for x, y in stretches][:MAX_LISTED],
             "start_s": _s(stretches[0][0]), "end_s": _s(stretches[-1][1])}], stretches


def _uncovered(a: int, b: int, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of [a, b] no span covers; `spans` sorted and disjoint (`_union`)."""
    out, cursor = [], a
    # Spans ending before a cannot matter: start at the first that might.
    for i in range(max(bisect.bisect_left(spans, (a, a)) - 1, 0), len(spans)):
        x, y = spans[i]
        if x >= b:
            break
        if y <= cursor:
            continue
        if x > cursor:
            out.append((cursor, x))
        cursor = max(cursor, y)
    if cursor < b:
        out.append((cursor, b))
    return out


def _unexplained_anomalies(gaps: list[dict], limit: float | None,
                           own_out: list[tuple[int, int]]) -> list[dict]:
    """Windows with no fault in force whose longest stretch in which some
    client asked a node that could answer outlasts `limit`. Time in which
    every op in flight was sent to a node that was out (`own_nodes_out`: one
    whose process exited and never came back, a final read pinned to it) is
    no outage of the cluster: nobody asked it anything it could answer."""
    if limit is None:
        return []
    out = []
    for g in gaps:
        if g["explained"] or g["duration_s"] <= limit:
            continue
        a, b = int(g["start_s"] * NS), int(g["end_s"] * NS)
        stretches = _uncovered(a, b, own_out)
        longest = max((y - x for x, y in stretches), default=0)
        if longest > limit * NS:
            out.append(dict(g, type="unexplained-unavailable", limit_s=limit,
                            **({} if longest == b - a else {"asking_a_node_out_s": _s(
                                (b - a) - sum(y - x for x, y in stretches))})))
    return out


def _gap_anomalies(gaps: list[dict], limits: dict) -> list[dict]:
    limit = limits.get("max_unavailable_s")
    if limit is None:
        return []
    return [dict(g, type="unavailable", limit_s=limit) for g in gaps
            if g["duration_s"] > limit]


# --- leadership ------------------------------------------------------------------


def leader_changes(elections: list[dict], start_ns: int, faults: list[dict],
                   heals: list[dict], settle_ns: int) -> list[dict]:
    """Every election after the first, in history time, with what was going on.

    `elections` as from `checkers.elections.leader_elections` (event time `t`).
    """
    changes = []
    for prev, e in zip(elections, elections[1:], strict=False):
        t = e["t"] - start_ns
        during = active_at(faults, t)
        recent = [i for i, h in enumerate(heals) if h["time"] <= t <= h["time"] + settle_ns]
        when = "during-fault" if during else "after-heal" if recent else "quiet"
        changes.append({"time_s": _s(t), "time": t, "node": e["node"], "epoch": e["epoch"],
                        "previous": {"node": prev["node"], "epoch": prev["epoch"]},
                        "when": when, "faults": [_fault_ref(f) for f in during],
                        "heal": recent[-1] if recent and not during else None})
    return changes


def _per_heal(changes: list[dict], heals: list[dict]) -> list[tuple[dict, list[dict]]]:
    return [(h, [c for c in changes if c["when"] == "after-heal" and c["heal"] == i])
            for i, h in enumerate(heals)]


def _leadership_stats(changes: list[dict], heals: list[dict]) -> dict[str, Any]:
    per_heal = [len(cs) for _, cs in _per_heal(changes, heals)]
    return {
        "leader_changes": len(changes),
        "leader_node_changes": sum(1 for c in changes if c["node"] != c["previous"]["node"]),
        "leader_changes_during_fault": sum(1 for c in changes if c["when"] == "during-fault"),
        "leader_changes_after_heal": sum(1 for c in changes if c["when"] == "after-heal"),
        "quiet_leader_changes": sum(1 for c in changes if c["when"] == "quiet"),
        "max_leader_changes_per_heal": max(per_heal, default=0),
        "leader_change_list": [
            dict(_brief(c), when=c["when"], faults=c["faults"],
                 heal_s=_s(heals[c["heal"]]["time"]) if c["heal"] is not None else None)
            for c in changes[:MAX_LISTED]],
    }


def _leadership_anomalies(changes: list[dict], heals: list[dict],
                          limits: dict) -> list[dict]:
    anomalies = []
    per_heal_limit = limits.get("max_leader_changes_per_heal")
    if per_heal_limit is not None:
        for heal, cs in _per_heal(changes, heals):
            if len(cs) > per_heal_limit:
                anomalies.append({"type": "leader-changes-after-heal",
                                  "heal": {"f": heal["f"], "value": heal["value"],
                                           "time_s": _s(heal["time"])},
                                  "count": len(cs), "limit": per_heal_limit,
                                  "changes": [_brief(c) for c in cs]})
    quiet_limit = limits.get("max_quiet_leader_changes")
    quiet = [c for c in changes if c["when"] == "quiet"]
    if quiet_limit is not None and len(quiet) > quiet_limit:
        anomalies.append({"type": "quiet-leader-changes", "count": len(quiet),
                          "limit": quiet_limit, "changes": [_brief(c) for c in quiet]})
    return anomalies


def _brief(change: dict) -> dict:
    return {"time_s": change["time_s"], "node": change["node"], "epoch": change["epoch"],
            "previous": change["previous"]}
