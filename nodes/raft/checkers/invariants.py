"""Protocol invariants the seeds promise, judged from node event lines and the
nemesis ops in the history. No threshold is set by hand: every time limit is
derived from the timers the nodes report in their `start` lines.

- `stranded-leader` (KIP-595 check quorum): a leader cut off from a majority
  resigns within its fetch timeout. Flagged when a node stays Leader while
  alive and cut off for longer than fetch timeout + how far its own timers
  fell behind within that window (its `tick_late` lines) + a margin of 4
  ticks (nodes/raft/checkers/lateness.py).
- `epoch-raised-while-cut-off` (KIP-996 pre-vote): a node cut off from a
  majority cannot win a pre-vote, so it never becomes Candidate (never raises
  its epoch); that raised epoch is what unseats a healthy leader when the
  partition heals. Flagged when a node becomes Candidate after being cut off
  for longer than a whole pre-vote round (2 x election timeout) + its own
  timers' lateness since the cut + the same margin.
- `double-vote` (KIP-595): a voter grants its vote to at most one candidate
  per epoch, across restarts.
- `vote-forgotten` (KIP-595, quorum state durable before the grant): a node
  that granted a vote in epoch e and restarts without reporting `data_loss`
  comes back in a later epoch, or in e with that same vote.
- `vote-for-less-up-to-date-log` (KIP-595, the election restriction): a
  voter that, following the candidate it elected, cuts its log back to at or
  past where that leader's log ended when it won, held a longer log and
  should not have granted the vote (`nodes/raft/checkers/vote_restriction.py`;
  judged where the end-of-run dumps place the epoch's start).
- `vote-granted-to-less-up-to-date-log` (KIP-595 / Raft 5.4.1, per grant):
  a `vote` or `pre_vote` line whose candidate's (last epoch, log end), as the
  request gave them, is below the voter's own, as the line gives it.
- `vote-after-state-loss` (KIP-996 "Disk failure"; KIP-595 one vote per
  epoch): a node that restarts without its quorum-state file (`data_loss`)
  does not know which votes it gave, so it grants none and does not stand
  for election before a leader has answered it again: an `hw` line while
  it follows one (a `role` Follower line naming it), its own `votes_again`
  line, or a later restart that found its quorum-state file. A Follower
  line alone is no answer: the lost node may learn the name of a leader
  that died with the fault (a peer that has not timed out on it yet names
  it), follow it, time out and vote.
- `resigned-leader-stayed-in-epoch` / `follows-itself` (KIP-996, Resigned): a
  leader that resigns leaves its epoch (its next role is in a later one), so
  it can never end up following itself.
- `pre-vote-from-fetching-follower` (KIP-996 Scenario A): a follower that
  still fetches from a live leader grants no pre-vote. Judged only where it
  is certain: both had held their roles for a fetch timeout + grace and no
  fault that may have touched either (or their link) was in force.
- `two-voter-changes-in-flight` (KIP-853): a leader starts a voter change
  while its last one is uncommitted; `leader-resigned-adding-voter`
  (KIP-1186): a leader resigns, no fault in force, while a voter it added is
  uncommitted; `voter-change-incomplete` (KIP-853): a voter change neither
  commits nor fails cleanly (truncated, or its leader leaves the role) within
  2 x fetch timeout + grace, no fault in force; `voter-changes-out-of-order`
  (KIP-853): a node adopts a voter set older than the one in force without
  having truncated its log below the newer record (`nodes/raft/checkers/membership.py`).

- `follows-other-cluster` / `votes-for-other-cluster` (KIP-595 cluster id):
  a node refuses requests carrying another cluster's id, so it never follows
  a leader, nor votes for a candidate, of another cluster. A node's cluster
  is the `cluster_id` of its last `start` line; a leader's or candidate's is
  that of the run of it that claimed the role in that epoch.

One leader per epoch is the elections checker's `multiple-leaders`.

"Cut off" counts only what was certainly in force: a partition from its
inject's completion to its heal's invoke, a kill or pause likewise. A node is
cut off when the voters it can count (itself if it is one, and the alive
voters it still has links to) are fewer than a majority of the voter set in
force; for a request-response exchange (a pre-vote) any cut pair breaks a
link, for a leader hearing fetches only a cut towards it does.

The voter set in force is the node's own (KIP-853: a VotersRecord is in force
from the moment it is appended, and a truncation of it puts the previous set
back): the `voters` field of its `start` line, then each `voters` line with
state `appended` or `truncated`. A leader's check quorum and a candidate's
pre-vote count that set, not every node of the cluster: with observers, or
after a removal, counting every node would call a lone remaining voter cut
off (a false alarm) and a voter cut off from the other voters but not from
the observers reachable (a miss). Nodes whose lines name no voters count the
whole cluster, as before voter changes existed.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from checkers.faults import CUT, DOWN, KILL, RESTART, healed_by, named
from checkers.history import NEMESIS, Op, pair_ops
from checkers.verdict import Verdict, verdict
from nodes.raft.checkers.lateness import (
    late_spans,
    late_within,
    lateness_stats,
    timer_margin_ns,
)
from nodes.raft.checkers.membership import (
    changes_in_flight,
    changes_incomplete,
    changes_out_of_order,
    resigned_adding_voter,
)
from nodes.raft.checkers.vote_restriction import (
    epoch_starts,
    grants_to_less_up_to_date_logs,
    votes_for_less_up_to_date_logs,
)
from nodes.raft.events import DATA_LOSS, HW, PRE_VOTE, ROLE, START, VOTE, VOTERS, VOTES_AGAIN
from nodes.raft.fault_rows import LOSE_STATE

NS = 1_000_000_000
MS = 1_000_000
# Scheduling noise on a loaded machine, for the limits that span several nodes
# (a follower's fetches, a voter change's commit): not one node's timer, so
# not covered by that node's measured lateness (nodes/raft/checkers/lateness.py).
GRACE_MS = 500
DOWN_FAULTS = named(DOWN)
CUT_FAULTS = named(CUT)
# Faults that kill and restart inside their own op: down only while it runs.
INSTANT_DOWN_FAULTS = named(RESTART)
HEALS = healed_by(DOWN, CUT)
MAX_LISTED = 50


def check(history: list[Op], events: dict[str, list[dict]], run: dict,
          dumps: Mapping[str, Mapping[str, Any]] | None = None) -> Verdict:
    start_ns = run.get("start_monotonic_ns")
    timers = node_timers(events)
    starts = epoch_starts(dumps or {})
    stats: dict[str, Any] = {"timers_ms": timers, "votes": _count(events, VOTE.name),
                             "epoch_starts_known": len(starts)}
    anomalies = double_votes(events) + forgotten_votes(events) + resigned_leaders(events)
    anomalies += grants_to_less_up_to_date_logs(events)
    anomalies += votes_for_less_up_to_date_logs(events, starts)
    anomalies += votes_after_state_loss(events)
    anomalies += changes_in_flight(events) + changes_out_of_order(events)
    anomalies += other_cluster_links(events)
    if type(start_ns) is not int or timers is None:
        stats["timed_invariants"] = ("skipped: " + ("run.json has no start_monotonic_ns"
                                     if type(start_ns) is not int else
                                     "no node reported its timers in a start line"))
        if anomalies:
            return verdict(False, anomalies[:MAX_LISTED], stats)
        stats["reason"] = "timed invariants " + stats["timed_invariants"]
        return verdict("unknown", [], stats)
    nodes = sorted(events)
    timeline = fault_timeline(history, nodes)
    possible = fault_timeline(history, nodes, certain=False)
    voters = voters_in_force(events, start_ns)
    grace = GRACE_MS * MS
    late = late_spans(events, start_ns)
    margin = timer_margin_ns(events)
    fetch = timers["fetch_timeout_ms"] * MS
    prevote = 2 * timers["election_timeout_ms"] * MS
    anomalies += stranded_leaders(events, timeline, nodes, start_ns, fetch, voters,
                                  process_taken=possible, late=late, margin_ns=margin)
    anomalies += cut_off_candidates(events, timeline, nodes, start_ns, prevote, voters,
                                    late=late, margin_ns=margin)
    anomalies += pre_votes_from_fetching_followers(
        events, possible, start_ns, fetch + grace)
    end_ns = max((op.time for op in history), default=0)
    anomalies += resigned_adding_voter(events, possible, start_ns, end_ns)
    change_limit = 2 * timers["fetch_timeout_ms"] * MS + grace
    anomalies += changes_incomplete(events, possible, start_ns, end_ns, change_limit)
    # The first two: plus the node's own timer lateness within the window.
    stats["limits_ms"] = {"stranded_leader": (fetch + margin) // MS,
                          "cut_off_before_candidate": (prevote + margin) // MS,
                          "voter_change": change_limit // MS}
    stats["margin_ms"] = margin // MS
    stats["timers_late"] = lateness_stats(late)
    stats["fault_segments"] = len(timeline)
    stats["anomaly_counts"] = dict(_counts(anomalies))
    if anomalies:
        return verdict(False, anomalies[:MAX_LISTED], stats)
    return verdict(True, [], stats)


def _count(events: dict[str, list[dict]], kind: str) -> int:
    return sum(1 for evs in events.values() for ev in evs if ev.get("event") == kind)


def _counts(anomalies: list[dict]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for a in anomalies:
        out[a["type"]] += 1
    return out


def node_timers(events: dict[str, list[dict]]) -> dict[str, int] | None:
    """The longest election and fetch timeouts any node reported (ms), or None."""
    found: dict[str, int] = {}
    for evs in events.values():
        for ev in evs:
            if ev.get("event") != START.name:
                continue
            for key in ("election_timeout_ms", "fetch_timeout_ms"):
                if type(ev.get(key)) is int:
                    found[key] = max(found.get(key, 0), ev[key])
    return found if len(found) == 2 else None


# --- votes -------------------------------------------------------------------------


def _votes(evs: list[dict]) -> list[dict]:
    return [ev for ev in evs if ev.get("event") == VOTE.name and type(ev.get("epoch")) is int]


def double_votes(events: dict[str, list[dict]]) -> list[dict]:
    anomalies = []
    for node, evs in sorted(events.items()):
        by_epoch: dict[int, dict[str, dict]] = defaultdict(dict)
        for ev in _votes(evs):
            by_epoch[ev["epoch"]].setdefault(str(ev.get("candidate")), ev)
        for epoch, grants in sorted(by_epoch.items()):
            if len(grants) > 1:
                anomalies.append({"type": "double-vote", "node": node, "epoch": epoch,
                                  "candidates": sorted(grants),
                                  "grants": sorted(grants.values(), key=lambda e: e.get("t", 0))})
    return anomalies


def forgotten_votes(events: dict[str, list[dict]]) -> list[dict]:
    anomalies = []
    for node, evs in sorted(events.items()):
        last_vote: dict | None = None
        lost = False
        cluster = None
        for ev in evs:
            kind = ev.get("event")
            if kind == START.name:
                cluster = ev.get("cluster_id")
            if kind == VOTE.name and type(ev.get("epoch")) is int:
                last_vote, lost = ev | {"cluster_id": cluster}, False
            elif kind == DATA_LOSS.name:
                lost = True
            elif kind == START.name and last_vote is not None:
                epoch = ev.get("epoch")
                # A node re-formatted for another cluster starts afresh: the
                # vote was another cluster's node's (and back, the same).
                moved = ev.get("cluster_id") != last_vote.get("cluster_id")
                if not lost and not moved and type(epoch) is int and (
                        epoch < last_vote["epoch"]
                        or (epoch == last_vote["epoch"]
                            and ev.get("voted_for") != last_vote.get("candidate"))):
                    anomalies.append({"type": "vote-forgotten", "node": node,
                                      "vote": last_vote, "restart": ev})
                last_vote = None
    return anomalies


# --- KIP-595 cluster id -----------------------------------------------------------


def _with_cluster(evs: list[dict]) -> list[tuple[str | None, dict]]:
    """Each line with the cluster id of the node's run that wrote it."""
    out, cluster = [], None
    for ev in evs:
        if ev.get("event") == START.name:
            cid = ev.get("cluster_id")
            cluster = cid if isinstance(cid, str) else None
        out.append((cluster, ev))
    return out


def other_cluster_links(events: dict[str, list[dict]]) -> list[dict]:
    lines = {node: _with_cluster(evs) for node, evs in events.items()}
    # (node, role, epoch) -> the clusters of the runs of it that claimed that role.
    claims: dict[tuple[str, str, Any], set[str]] = defaultdict(set)
    for node, evs in lines.items():
        for cluster, ev in evs:
            if cluster is not None and ev.get("event") == ROLE.name \
                    and ev.get("role") in ("Leader", "Candidate"):
                claims[(node, ev["role"], ev.get("epoch"))].add(cluster)
    anomalies = []
    for node, evs in sorted(lines.items()):
        for cluster, ev in evs:
            kind = ev.get("event")
            if cluster is None:
                continue
            if kind == ROLE.name and ev.get("role") == "Follower" \
                    and isinstance(ev.get("leader"), str):
                other, claimed, rule = ev["leader"], "Leader", "follows-other-cluster"
            elif kind == VOTE.name and isinstance(ev.get("candidate"), str):
                other, claimed, rule = ev["candidate"], "Candidate", "votes-for-other-cluster"
            else:
                continue
            theirs = claims.get((other, claimed, ev.get("epoch")))
            if theirs and cluster not in theirs:
                anomalies.append({"type": rule, "node": node, "cluster_id": cluster,
                                  "other": other, "other_cluster_ids": sorted(theirs),
                                  "epoch": ev.get("epoch"), "event": ev})
    return anomalies


def votes_after_state_loss(events: dict[str, list[dict]]) -> list[dict]:
    # The window ends no later than the correct node's abstention does (it
    # clears on the fetch answer that catches it up, whose hw line comes
    # first, and says so in `votes_again`), so the correct build is never
    # flagged; a node whose log is still behind at that hw line ends it early,
    # a miss at worst. A Follower line is not enough: in a lose-state run the
    # leader it names is the one the fault took down, and the sim shows a node
    # back 0.8-1 s after the kill (a loaded machine's restart) always follows
    # it first and votes after (tests/raft/test_raft_bugs.py).
    # A later restart that found a quorum-state file (a start line with no
    # data_loss line before it) ends the window too: the node writes that
    # file before the lines of the same step, so a kill between the two may
    # have taken the hw and votes_again lines of a catch-up that the file
    # kept (a correct node that still abstains says so in that file).
    anomalies = []
    for node, evs in sorted(events.items()):
        lost: dict | None = None
        following = restarting = False
        for ev in evs:
            kind = ev.get("event")
            if kind == DATA_LOSS.name and ev.get("what") == "quorum-state-missing":
                lost, following, restarting = ev, False, True
                continue
            if lost is None:
                continue
            if kind == START.name and not restarting:
                lost = None
            elif kind == VOTES_AGAIN.name or (kind == HW.name and following):
                lost = None
            elif kind == ROLE.name and ev.get("role") == "Follower" and ev.get("leader"):
                following = True
            elif kind == VOTE.name or (kind == ROLE.name and ev.get("role") == "Candidate"):
                anomalies.append({"type": "vote-after-state-loss", "node": node,
                                  "epoch": ev.get("epoch"), "loss": lost, "event": ev})
            if kind == ROLE.name and ev.get("role") != "Follower":
                following = False
            if kind == START.name:
                restarting = False
    return anomalies


# --- who was cut off when ------------------------------------------------------------


def fault_timeline(history: list[Op], nodes: list[str], certain: bool = True) -> list[dict]:
    """Segments `{"start", "end", "cut": set of pairs, "down": set of nodes}` in
    history ns. `certain`: only what was surely in force (from an inject's
    completion to its heal's invoke); else everything that may have been
    (from the invoke to the heal's completion, failed ops included, and the
    instant kill-and-restart faults for the length of their op)."""
    changes: list[tuple[int, str, str, Any]] = []   # (time, "on"/"off", kind, payload)
    open_faults: dict[str, list[Any]] = defaultdict(list)
    end_of_history = max((op.time for op in history), default=0)
    for inv, done in pair_ops(op for op in history if op.process == NEMESIS):
        if certain and (done is None or done.error):
            continue
        if done is None:
            done = Op(inv.index, end_of_history, inv.process, "info", inv.f, inv.value)
        if inv.f in HEALS:
            for kind in HEALS[inv.f]:
                for payload in open_faults.pop(kind, []):
                    changes.append((inv.time if certain else done.time, "off", kind, payload))
        elif inv.f in DOWN_FAULTS or inv.f in CUT_FAULTS:
            payload = _payload(inv, done, nodes)
            if inv.f in CUT_FAULTS and open_faults.get(inv.f):
                payload = _replace_cut(changes, open_faults, inv.f, payload or frozenset(),
                                       inv.time if certain else done.time)
            if payload:
                open_faults[inv.f].append(payload)
                changes.append((done.time if certain else inv.time, "on", inv.f, payload))
        elif not certain and inv.f in INSTANT_DOWN_FAULTS:
            payload = _payload(inv, done, nodes)
            if payload:
                changes.append((inv.time, "on", KILL.name, payload))
                changes.append((done.time, "off", KILL.name, payload))
    changes.sort(key=lambda c: c[0])
    segments: list[dict] = []
    active: list[tuple[str, Any]] = []
    for i, (t, what, kind, payload) in enumerate(changes):
        if what == "on":
            active.append((kind, payload))
        elif (kind, payload) in active:
            active.remove((kind, payload))
        nxt = changes[i + 1][0] if i + 1 < len(changes) else end_of_history
        if nxt > t:
            cut: set[tuple[str, str]] = set()
            down: set[str] = set()
            for k, p in active:
                if k in CUT_FAULTS:
                    cut |= p
                else:
                    down |= p
            segments.append({"start": t, "end": nxt, "cut": cut, "down": down})
    return segments


def _replace_cut(changes: list[tuple[int, str, str, Any]], open_faults: dict[str, list[Any]],
                 f: str, payload: frozenset, t_off: int) -> frozenset:
    """A partition replaces the whole cut in force (one nft transaction,
    nemesis.partition): the old pairs end at `t_off` (certain: the new one's
    invoke; else its completion), the pairs both cut never end; returns the
    new pairs still to start when the new one is in force."""
    kept: frozenset = frozenset()
    for old in open_faults.pop(f, []):
        changes.append((t_off, "off", f, old))
        both = old & payload - kept
        if both:
            changes.append((t_off, "on", f, both))
            open_faults[f].append(both)
            kept |= both
    return payload - kept


def _payload(inv: Op, done: Op, nodes: list[str]) -> Any:
    value = done.value if isinstance(done.value, dict) else inv.value
    if not isinstance(value, dict):
        return None
    if inv.f in CUT_FAULTS:
        pairs = value.get("cut") or (inv.value or {}).get("cut") or []
        return frozenset((a, b) for a, b in pairs)
    named = value.get("nodes") or (inv.value or {}).get("nodes") or []
    if inv.f == LOSE_STATE.name:
        named = [value.get("leader")]   # the other node it names restarted at once
    return frozenset(n for n in named if n in nodes)


def voters_in_force(events: dict[str, list[dict]], start_ns: int
                    ) -> dict[str, list[tuple[int, frozenset[str] | None]]]:
    """Per node, the voter set in force in its own view, as (from, voters)
    steps in history ns; None where its lines do not say (every node counts)."""
    steps: dict[str, list[tuple[int, frozenset[str] | None]]] = {}
    for node, evs in events.items():
        out: list[tuple[int, frozenset[str] | None]] = []
        for ev in evs:
            if type(ev.get("t")) is not int:
                continue
            kind = ev.get("event")
            if kind == START.name:
                named = ev.get("voters")
            elif kind == VOTERS.name and ev.get("state") in ("appended", "truncated"):
                named = ev.get("voters")
            else:
                continue
            voters = (frozenset(named) if isinstance(named, list)
                      and all(isinstance(v, str) for v in named) else None)
            out.append((ev["t"] - start_ns, voters))
        steps[node] = out
    return steps


def _voters_at(steps: list[tuple[int, frozenset[str] | None]], t: int
               ) -> frozenset[str] | None:
    current = None
    for at, voters in steps:
        if at > t:
            break
        current = voters
    return current


def cut_off(node: str, segment: dict, nodes: list[str], inbound_only: bool = False,
            voters: frozenset[str] | None = None) -> bool:
    """Alive, but the voters it can count are fewer than a majority of `voters`
    (None: every node is a voter). It counts itself if it is a voter, and
    every other alive voter it has a link to.

    A request-response exchange needs both directions, so any cut pair breaks
    it. With `inbound_only`, a link counts as long as the other node's packets
    reach `node`: a leader hears fetches over its followers' connections, so
    only a cut towards it stops them for sure.
    """
    if node in segment["down"]:
        return False
    electorate = sorted(voters) if voters is not None else nodes
    cut = segment["cut"]
    reach = (node in electorate) + sum(
        1 for other in electorate
        if other != node and other not in segment["down"]
        and (other, node) not in cut
        and (inbound_only or (node, other) not in cut))
    return reach < len(electorate) // 2 + 1


def _split_at_voter_changes(timeline: list[dict],
                            steps: list[tuple[int, frozenset[str] | None]]
                            ) -> list[tuple[dict, frozenset[str] | None]]:
    """The timeline's segments cut where the node's voter set changes, each
    with the set in force over it."""
    out = []
    changes = sorted({at for at, _ in steps})
    for seg in timeline:
        bounds = [seg["start"]] + [c for c in changes if seg["start"] < c < seg["end"]]
        bounds.append(seg["end"])
        for lo, hi in itertools.pairwise(bounds):
            out.append((seg | {"start": lo, "end": hi}, _voters_at(steps, lo)))
    return out


def cut_off_spans(node: str, timeline: list[dict], nodes: list[str],
                  inbound_only: bool = False,
                  voter_steps: list[tuple[int, frozenset[str] | None]] | None = None
                  ) -> list[tuple[int, int]]:
    """Maximal [start, end) spans in which `node` was cut off (history ns), judged
    against its voter set in force (`voter_steps`; none given: every node)."""
    spans: list[list[int]] = []
    for seg, voters in _split_at_voter_changes(timeline, voter_steps or []):
        if not cut_off(node, seg, nodes, inbound_only, voters):
            continue
        if spans and spans[-1][1] == seg["start"]:
            spans[-1][1] = seg["end"]
        else:
            spans.append([seg["start"], seg["end"]])
    return [(a, b) for a, b in spans]


def _down_spans(node: str, timeline: list[dict]) -> list[tuple[int, int]]:
    return [(s["start"], s["end"]) for s in timeline if node in s["down"]]


# --- leaders that stay cut off, candidates that should not be ------------------------


def leader_tenures(evs: list[dict], start_ns: int) -> list[tuple[int, int, int]]:
    """(epoch, from, to) in history ns for each stretch the node reported role Leader;
    a tenure ends at the node's next role or start line (a killed leader's next line)."""
    tenures = []
    current: tuple[int, int] | None = None
    for ev in evs:
        if type(ev.get("t")) is not int:
            continue
        t = ev["t"] - start_ns
        kind = ev.get("event")
        if kind not in (ROLE.name, START.name):
            continue
        if current is not None:
            tenures.append((current[0], current[1], t))
            current = None
        if kind == ROLE.name and ev.get("role") == "Leader" and type(ev.get("epoch")) is int:
            current = (ev["epoch"], t)
    if current is not None:
        tenures.append((current[0], current[1], 2**62))
    return tenures


def stranded_leaders(events: dict[str, list[dict]], timeline: list[dict], nodes: list[str],
                     start_ns: int, fetch_ns: int,
                     voters: dict[str, list[tuple[int, frozenset[str] | None]]] | None = None,
                     process_taken: list[dict] | None = None,
                     late: Mapping[str, list[tuple[int, int]]] | None = None,
                     margin_ns: int = 0) -> list[dict]:
    """A leader still leading `fetch_ns` + its own timers' lateness within the
    window (`late`, lateness.late_spans) + `margin_ns` after it was cut off.
    `process_taken`: a timeline whose `down` sets say when a fault may have
    taken a node's process (`fault_timeline(..., certain=False)`: from a
    kill's invoke, and the power cuts that kill and restart inside their own
    op); default `timeline`."""
    anomalies = []
    for node in nodes:
        spans = cut_off_spans(node, timeline, nodes, inbound_only=True,
                              voter_steps=(voters or {}).get(node))
        downs = _down_spans(node, process_taken if process_taken is not None else timeline)
        node_late = (late or {}).get(node, [])
        for epoch, t0, t1 in leader_tenures(events.get(node, []), start_ns):
            # A killed leader has no line until it restarts: its tenure ends at
            # the kill, or at a power cut that restarts it (its next line, the
            # start, may come long after the op under load). One that became
            # leader while a fault's op that may take it was running (a fault
            # that waits for a leader, then kills it) may be gone right after.
            t1 = min([t1] + [max(a, t0) for a, b in downs if b > t0])
            for a, b in spans:
                lo, hi = max(a, t0), min(b, t1)
                behind = late_within(node_late, lo, hi)
                limit = fetch_ns + behind + margin_ns
                if hi - lo > limit:
                    anomalies.append({"type": "stranded-leader", "node": node, "epoch": epoch,
                                      "cut_off_s": [_s(a), _s(b)],
                                      "still_leader_s": [_s(lo), _s(hi)],
                                      "fetch_timeout_s": _s(fetch_ns),
                                      "timers_late_s": _s(behind), "margin_s": _s(margin_ns),
                                      "limit_s": _s(limit)})
    return anomalies


def cut_off_candidates(events: dict[str, list[dict]], timeline: list[dict], nodes: list[str],
                       start_ns: int, prevote_ns: int,
                       voters: dict[str, list[tuple[int, frozenset[str] | None]]] | None = None,
                       late: Mapping[str, list[tuple[int, int]]] | None = None,
                       margin_ns: int = 0) -> list[dict]:
    """A node that becomes Candidate after being cut off for a whole pre-vote
    round (`prevote_ns`) + its own timers' lateness since the cut + `margin_ns`."""
    anomalies = []
    for node in nodes:
        spans = cut_off_spans(node, timeline, nodes,
                              voter_steps=(voters or {}).get(node))
        node_late = (late or {}).get(node, [])
        for ev in events.get(node, []):
            if (ev.get("event") != ROLE.name or ev.get("role") != "Candidate"
                    or type(ev.get("t")) is not int):
                continue
            t = ev["t"] - start_ns
            for a, b in spans:
                if not a <= t < b:
                    continue
                behind = late_within(node_late, a, t)
                limit = prevote_ns + behind + margin_ns
                if t - a > limit:
                    anomalies.append({"type": "epoch-raised-while-cut-off", "node": node,
                                      "epoch": ev.get("epoch"), "time_s": _s(t),
                                      "cut_off_s": [_s(a), _s(b)],
                                      "pre_vote_round_s": _s(prevote_ns),
                                      "timers_late_s": _s(behind), "margin_s": _s(margin_ns),
                                      "limit_s": _s(limit)})
    return anomalies


# --- KIP-996: the resigned leader, the follower that protects its leader ----------


def resigned_leaders(events: dict[str, list[dict]]) -> list[dict]:
    """A leader that resigns epoch e next shows a role in a later epoch, and no
    node ever follows itself."""
    anomalies = []
    for node, evs in sorted(events.items()):
        resigned: dict | None = None
        for ev in evs:
            kind = ev.get("event")
            if kind == START.name:
                resigned = None
            if kind != ROLE.name or type(ev.get("epoch")) is not int:
                continue
            if ev.get("role") == "Follower" and ev.get("leader") == node:
                anomalies.append({"type": "follows-itself", "node": node, "epoch": ev["epoch"],
                                  "event": ev})
            if resigned is not None and ev["epoch"] <= resigned["epoch"]:
                anomalies.append({"type": "resigned-leader-stayed-in-epoch", "node": node,
                                  "epoch": resigned["epoch"], "resigned": resigned,
                                  "next": ev})
            resigned = ev if ev.get("role") == "Resigned" else None
    return anomalies


def _roles_since(evs: list[dict], start_ns: int) -> list[tuple[int, dict]]:
    return [(ev["t"] - start_ns, ev) for ev in evs
            if ev.get("event") in (ROLE.name, START.name) and type(ev.get("t")) is int]


def _held_since(evs: list[tuple[int, dict]], t: int, role: str, epoch: int | None,
                leader: str | None) -> int | None:
    """Since when the node has held (role, epoch, leader) without a break up to t."""
    since = None
    for at, ev in evs:
        if at > t:
            break
        same = (ev.get("event") == ROLE.name and ev.get("role") == role
                and ev.get("epoch") == epoch and ev.get("leader") == leader)
        if same and since is None:
            since = at
        elif not same:
            since = None
    return since


def pre_votes_from_fetching_followers(events: dict[str, list[dict]], possible: list[dict],
                                      start_ns: int, window_ns: int) -> list[dict]:
    """KIP-996: a follower still fetching from a live leader grants no pre-vote.
    Judged only where that is certain: the follower had followed that leader,
    which led the epoch, for a whole fetch timeout + grace before the grant,
    and no fault that may have touched either of them, or the link between
    them, was in force in that window."""
    anomalies = []
    roles = {node: _roles_since(evs, start_ns) for node, evs in events.items()}
    for node, evs in sorted(events.items()):
        for ev in evs:
            if (ev.get("event") != PRE_VOTE.name or ev.get("role") != "Follower"
                    or type(ev.get("t")) is not int or not isinstance(ev.get("leader"), str)):
                continue
            t, leader, epoch = ev["t"] - start_ns, ev["leader"], ev.get("epoch")
            lo = t - window_ns
            following = _held_since(roles.get(node, []), t, "Follower", epoch, leader)
            leading = _held_since(roles.get(leader, []), t, "Leader", epoch, leader)
            # A leader that resigned tells its followers so (and they may then
            # grant) before it writes its own Resigned line.
            resigned = any(at > t and at <= t + GRACE_MS * MS and e.get("role") == "Resigned"
                           for at, e in roles.get(leader, []))
            if (following is None or leading is None or following > lo or leading > lo
                    or resigned):
                continue
            touched = any(
                seg["start"] < t and seg["end"] > lo
                and ({node, leader} & seg["down"] or (node, leader) in seg["cut"]
                     or (leader, node) in seg["cut"])
                for seg in possible)
            if not touched:
                anomalies.append({"type": "pre-vote-from-fetching-follower", "node": node,
                                  "leader": leader, "epoch": epoch,
                                  "candidate": ev.get("candidate"), "time_s": _s(t),
                                  "following_since_s": _s(following),
                                  "leader_since_s": _s(leading)})
    return anomalies


def _s(ns: int) -> float:
    return round(ns / NS, 3)
