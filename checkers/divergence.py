"""Divergence: do the replicas' logs agree where the protocol says they must?

Three rules over the end-of-run log dumps (and the node event lines, when given,
because a dump only shows the end state):

- `divergence`: two nodes hold different entries (epoch or digest) at an offset
  that either of them has committed, or below an offset where they agree again
  (log matching: the same offset and epoch imply the same prefix). KIP-279's bug.
- `lost-committed` / `committed-truncated`: an offset that was committed is gone,
  from one node that had committed it or from every node. A node a fault
  destroyed data at rest on that never started again is not held to it
  alone (stats `not_restarted_after_data_loss`); every node still is.
- `unknown-epoch`: an entry written in an epoch no leader ever had.
- `committed-without-quorum`: a leader's hw after which too many of its voters
  cut their logs below it on a diverging epoch for the rest to be a majority
  (`checkers.commit_quorum`; event lines only).
- `counted-not-durable` / `counted-then-diverged`: a copy a leader's `hw` line
  says it counted that the voter's own lines deny: not yet flushed that far,
  or later cut below it on a diverging epoch (`checkers.counted_copies`;
  event lines only).
- `flushed-lost-on-restart`: a node's restart recovered less of its log than
  its own `flushed` lines had declared on its disk, with no fault that
  destroys data at rest on it in between (`checkers.flushed_lost`; event
  lines and the nemesis's records only).
- `unconverged`: after the heal and the system's recovery time (the run polls
  the nodes' replica progress until they agree, bounded: run.json
  `convergence`), a live node still behind (its progress short of another's,
  or its log ending before the committed end) or apart (its tail differs from
  what another node committed). Judged only when the run waited so: a dump
  taken at once may lag by the last fetch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from itertools import combinations
from typing import Any

from checkers import commit_quorum, counted_copies, flushed_lost
from checkers.at_rest import AtRest, destroyed_not_restarted
from checkers.history import collector_paused
from checkers.verdict import Verdict, verdict
from nodes.events import HW, LEADER_ROLE, ROLE, START, TRUNCATE, VOTERS, VoteLoss

Entry = dict[str, Any]
Log = dict[int, Entry]

# Anomaly lists are read by people: a badly broken run should not produce
# megabytes of near-identical findings.
MAX_ANOMALIES_PER_RULE = 100


@collector_paused()   # millions of small acyclic objects: its passes free nothing
def check(dumps: dict[str, dict], events: dict[str, list[dict]] | None = None,
          facts_of: FactsOf | None = None, convergence: dict | None = None,
          vote_loss: tuple[VoteLoss, ...] = (), at_rest: list[AtRest] | None = None
          ) -> Verdict:
    """`facts_of` may read the logs range by range elsewhere (`checkers.spark`);
    by default they are read here, as one range. `convergence`: run.json's
    record of the wait for the nodes to converge, if the run made one.
    `vote_loss`: the lines by which the systems' voters say they may not vote
    (their own vocabularies', brought with their checkers). `at_rest`: the
    run's faults that destroyed or disturbed data at rest (`checkers.at_rest`);
    None when not known, which leaves `flushed-lost-on-restart` unjudged."""
    logs = {name: entries_by_offset(dump) for name, dump in sorted(dumps.items())}
    return judge(dumps, facts_of(logs) if facts_of else [range_facts(logs)], events,
                 convergence, vote_loss, at_rest)


def judge(dumps: dict[str, dict], parts: list[Facts],
          events: dict[str, list[dict]] | None = None,
          convergence: dict | None = None, vote_loss: tuple[VoteLoss, ...] = (),
          at_rest: list[AtRest] | None = None) -> Verdict:
    """The verdict from the `range_facts` of consecutive offset ranges, in
    offset order, covering every entry once. Of the dumps only the headers
    (watermarks, log start and end, epoch checkpoints) are read here."""
    names = sorted(dumps)
    f = _Merged(names, parts)
    committed = {n: max(_hw(dumps[n]), f.flagged_end[n]) for n in names}
    hw_claims = _hw_claims(events or {})

    anomalies: list[dict[str, Any]] = []
    anomalies += _cap(_mismatches(f, committed))
    live = convergence.get("live") if isinstance(convergence, dict) else None
    unrestarted = destroyed_not_restarted(at_rest, events or {}, names,
                                          live if isinstance(live, list) else None)
    lost, lagging = _lost_committed(dumps, f, committed, hw_claims, events or {},
                                    set(unrestarted))
    anomalies += _cap(lost)
    anomalies += _cap(_committed_truncations(events or {}))
    anomalies += _cap(commit_quorum.check(events or {}))
    counted, counted_stats = counted_copies.check(events or {})
    anomalies += _cap(counted)
    lost_flushed, lost_flushed_stats = flushed_lost.check(events or {}, at_rest)
    anomalies += _cap(lost_flushed)
    leader_epochs, epoch_source = known_leader_epochs(dumps, events)
    anomalies += _cap(_unknown_epochs(f, leader_epochs, epoch_source))
    unconverged = _unconverged(f, committed)
    converge_anomalies, converge_stats = _convergence(
        convergence, unconverged, {n: _log_end(dumps[n], f.present[n]) for n in names},
        committed, no_voting_quorum(events or {}, vote_loss))
    anomalies += _cap(converge_anomalies)

    stats = {
        "unconverged": unconverged,
        "convergence": converge_stats,
        "nodes": names,
        "entries": dict(f.count),
        "log_end_offset": {n: _log_end(dumps[n], f.present[n]) for n in names},
        "committed_end": committed,
        "cluster_committed_end": _cluster_committed_end(committed, hw_claims),
        "leader_epochs": sorted(leader_epochs),
        "leader_epochs_from": epoch_source,
        "lagging_after_recovery": lagging,
        "not_restarted_after_data_loss": unrestarted,
        "counted_copies": counted_stats,
        "flushed_lost_on_restart": lost_flushed_stats,
    }
    if anomalies:
        return verdict(False, anomalies, stats)
    # With no dump there is nothing to compare: no evidence either way.
    if not names:
        stats["reason"] = "no node log dumps to compare"
        return verdict("unknown", [], stats)
    return verdict(True, [], stats)


# --- one offset range at a time ------------------------------------------------
# Every rule compares the replicas offset by offset, so each range of offsets
# can be read apart (a Spark task each) into facts small for a sane run: which
# offsets each node holds (as runs), where each pair of nodes differs, and
# which offsets each epoch's entries sit at. `judge` joins them.

Facts = dict[str, Any]
# The logs in, the `range_facts` of consecutive offset ranges out, in offset order.
FactsOf = Callable[[dict[str, Log]], list[Facts]]


def range_facts(logs: dict[str, Log]) -> Facts:
    """What the rules need to know of the entries of one offset range (each
    node's log cut to that range): JSON-able, so it can travel."""
    names = sorted(logs)
    pairs = []
    for a, b in combinations(names, 2):
        la, lb = logs[a], logs[b]
        last_same = -1
        differ = []
        for o in sorted(la.keys() & lb.keys()):
            # Replicas' equal entries are often one object (see rundir.load_dumps).
            if la[o] is lb[o] or _same(la[o], lb[o]):
                last_same = o
            else:
                differ.append([o, _side(la[o]), _side(lb[o])])
        pairs.append([a, b, last_same, differ])
    epochs: dict[str, list[list[Any]]] = {}
    for name in names:
        by_epoch: dict[int, list[int]] = defaultdict(list)
        for o, e in logs[name].items():
            by_epoch[e["epoch"]].append(o)
        epochs[name] = [[epoch, ranges(offsets), len(offsets), _side(logs[name][min(offsets)])]
                        for epoch, offsets in sorted(by_epoch.items())]
    return {
        "present": {n: ranges(logs[n]) for n in names},
        "flagged_end": {n: max([o + 1 for o, e in logs[n].items()
                                if e.get("committed") is True], default=0) for n in names},
        "count": {n: len(logs[n]) for n in names},
        "pairs": pairs,
        "epochs": epochs,
    }


def split_by_offset(logs: dict[str, Log], parts: int) -> list[dict[str, Log]]:
    """`logs` cut into up to `parts` consecutive offset ranges of equal width,
    in offset order (empty ones left out), every node in each."""
    held = [o for log in logs.values() for o in (min(log), max(log)) if log]
    if not held or parts <= 1:
        return [logs]
    low, high = min(held), max(held) + 1
    width = -(-(high - low) // parts)
    cuts: list[dict[str, Log]] = [{n: {} for n in logs} for _ in range(parts)]
    for n, log in logs.items():
        for o, e in log.items():
            cuts[(o - low) // width][n][o] = e
    return [c for c in cuts if any(c.values())]


def _join(runs: Iterable[list[int]]) -> list[list[int]]:
    """Sorted [first, last] runs with touching ones joined (a run cut by a
    range boundary is one run again)."""
    out: list[list[int]] = []
    for first, last in runs:
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


class _Merged:
    """The facts of every range, joined per node and per pair of nodes."""

    def __init__(self, names: list[str], parts: list[Facts]) -> None:
        self.present = {n: _join(r for p in parts for r in p["present"].get(n, ()))
                        for n in names}
        self.flagged_end = {n: max((p["flagged_end"].get(n, 0) for p in parts), default=0)
                            for n in names}
        self.count = {n: sum(p["count"].get(n, 0) for p in parts) for n in names}
        self.last_same: dict[tuple[str, str], int] = {}
        self.differ: dict[tuple[str, str], list[list[Any]]] = {}
        for a, b in combinations(names, 2):
            self.last_same[a, b] = -1
            self.differ[a, b] = []
        for p in parts:
            for a, b, last_same, differ in p["pairs"]:
                self.last_same[a, b] = max(self.last_same[a, b], last_same)
                self.differ[a, b] += differ
        self.epochs: dict[str, dict[int, list[Any]]] = {n: {} for n in names}
        for p in parts:
            for n, rows in p["epochs"].items():
                for epoch, runs, count, first in rows:
                    had = self.epochs[n].get(epoch)
                    if had is None:
                        self.epochs[n][epoch] = [list(runs), count, first]
                    else:
                        had[0] += runs
                        had[1] += count


# --- reading a dump ----------------------------------------------------------


def entries_by_offset(dump: dict) -> Log:
    """The dump's well-formed entries by offset; malformed ones are skipped."""
    log: Log = {}
    for e in dump.get("entries") or []:
        if isinstance(e, dict) and type(e.get("offset")) is int and type(e.get("epoch")) is int:
            log[e["offset"]] = e
    return log


def committed_end(dump: dict, log: Log) -> int:
    """First offset this node does not consider committed (exclusive, like hw)."""
    flagged = [o for o, e in log.items() if e.get("committed") is True]
    return max([_hw(dump)] + [o + 1 for o in flagged])


def _hw(dump: dict) -> int:
    hw = dump.get("high_watermark")
    return hw if type(hw) is int else 0


def _log_end(dump: dict, present: list[list[int]]) -> int:
    end = dump.get("log_end_offset")
    return end if type(end) is int else (present[-1][1] + 1 if present else 0)


def _log_start(dump: dict, present: list[list[int]]) -> int:
    start = dump.get("log_start_offset")
    return start if type(start) is int else (present[0][0] if present else 0)


def _side(entry: Entry) -> dict[str, Any]:
    return {"offset": entry["offset"], "epoch": entry["epoch"],
            "digest": entry.get("digest"), "committed": entry.get("committed")}


def ranges(offsets: Iterable[int]) -> list[list[int]]:
    """Sorted offsets folded into [first, last] runs of consecutive offsets."""
    out: list[list[int]] = []
    for o in sorted(offsets):
        if out and o == out[-1][1] + 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    return out


def holes(present: Iterable[int], start: int, end: int) -> list[list[int]]:
    """[first, last] runs of offsets in [start, end) not in `present`.

    Walks only the present offsets: `end` comes from a dump or an event line
    and may be absurdly large without making this slow.
    """
    return holes_between(ranges(set(present)), start, end)


def holes_between(present: list[list[int]], start: int, end: int) -> list[list[int]]:
    """`holes`, given the present offsets as sorted [first, last] runs."""
    out: list[list[int]] = []
    nxt = start
    for first, last in present:
        if first >= end:
            break
        if first > nxt:
            out.append([nxt, first - 1])
        nxt = max(nxt, last + 1)
    if nxt < end:
        out.append([nxt, end - 1])
    return out


def _cap(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(anomalies) <= MAX_ANOMALIES_PER_RULE:
        return anomalies
    kept = anomalies[:MAX_ANOMALIES_PER_RULE]
    kept.append({"type": "truncated-list", "rule": anomalies[0]["type"],
                 "omitted": len(anomalies) - MAX_ANOMALIES_PER_RULE})
    return kept


# --- rule 1: two nodes disagree where they must agree ------------------------


def _mismatches(f: _Merged, committed: dict[str, int]) -> list[dict[str, Any]]:
    anomalies = []
    for (a, b), differ in f.differ.items():
        last_match = f.last_same[a, b]
        why_by_offset: dict[int, str] = {}
        sides: dict[int, tuple[Entry, Entry]] = {}
        for o, side_a, side_b in differ:
            # Committed on both sides and different: log matching is broken.
            # Committed on one side only is a follower that has not fetched
            # since the leader moved on; the protocol truncates such a tail on the
            # next fetch, so it is `unconverged` (see _unconverged), not unsafe.
            if o < committed[a] and o < committed[b]:
                why_by_offset[o] = "committed"
            elif o < last_match:
                why_by_offset[o] = "below-matching-entry"
            else:
                continue
            sides[o] = side_a, side_b
        for first, last in _runs_with_same_reason(why_by_offset):
            # A run is of consecutive offsets, every one of them differing.
            span = range(first, last + 1)
            anomalies.append({
                "type": "divergence",
                "why": why_by_offset[first],
                "nodes": [a, b],
                "offsets": [first, last],
                "count": len(span),
                "sides": {
                    a: {"epochs": sorted({sides[o][0]["epoch"] for o in span}),
                        "committed_end": committed[a], "first": sides[first][0]},
                    b: {"epochs": sorted({sides[o][1]["epoch"] for o in span}),
                        "committed_end": committed[b], "first": sides[first][1]},
                },
            })
    return anomalies


def _unconverged(f: _Merged, committed: dict[str, int]) -> list[dict[str, Any]]:
    """Nodes still holding an uncommitted tail that differs from what another node
    committed: not a safety violation, but worth seeing when a run ends."""
    out = []
    for (a, b), differ in f.differ.items():
        for behind, ahead, mine, theirs in ((a, b, 1, 2), (b, a, 2, 1)):
            rows = [d for d in differ if committed[behind] <= d[0] < committed[ahead]]
            if rows:
                out.append({"node": behind, "behind": ahead,
                            "offsets": [rows[0][0], rows[-1][0]], "count": len(rows),
                            "epochs": {behind: sorted({d[mine]["epoch"] for d in rows}),
                                       ahead: sorted({d[theirs]["epoch"] for d in rows})}})
    return out[:20]


def no_voting_quorum(events: dict[str, list[dict]], vote_loss: tuple[VoteLoss, ...] = ()
                     ) -> dict[str, Any] | None:
    """Why no leader could be elected at the end of the run, if none could:
    a voter whose quorum state a fault destroyed neither votes nor canvasses
    until it has caught up with a leader (KIP-996, "Disk failure": the lines
    of `vote_loss`, its system's vocabulary, say when). A leader needs a majority
    of the voter set it has in force itself; if, for every node that may still
    canvass, those voters leave no majority of its set, the cluster cannot
    elect anyone, and cannot converge, however correct. None when some node
    may still win, or when the nodes leave no such lines."""
    voteless: dict[str, dict] = {}
    views: dict[str, frozenset[str]] = {}
    for node, evs in events.items():
        for ev in evs:
            kind = ev.get("event")
            if any(kind == v.lost.name and ev.get("what") == v.what for v in vote_loss):
                voteless[node] = ev
            elif any(kind == v.regained.name for v in vote_loss):
                voteless.pop(node, None)
            elif kind == START.name or (kind == VOTERS.name and ev.get("state") != "committed"):
                voters = ev.get("voters")
                if isinstance(voters, list) and voters:
                    views[node] = frozenset(str(v) for v in voters)
    if not voteless:
        return None
    sets = {s for n, s in views.items() if n not in voteless}
    if any(len(s - set(voteless)) > len(s) // 2 for s in sets):
        return None
    return {"voteless": {n: ev.get("t") for n, ev in sorted(voteless.items())},
            "voter_sets": sorted(sorted(s) for s in sets)}


def _convergence(record: dict | None, unconverged: list[dict[str, Any]],
                 log_end: dict[str, int], committed: dict[str, int],
                 no_quorum: dict[str, Any] | None = None,
                 ) -> tuple[list[dict[str, Any]], str | dict[str, Any]]:
    """The `unconverged` anomalies, given the run's wait for convergence;
    none when no voter set left a majority that may vote (`no_voting_quorum`)."""
    if not isinstance(record, dict) or not isinstance(record.get("live"), list):
        return [], ("not judged: the run did not wait for its nodes to converge before "
                    "dumping (its system reports no replica progress, or the run predates it)")
    if no_quorum is not None and record.get("converged") is not True:
        return [], {"not_judged_because": "no voter set in force at the end had a majority "
                    "that may vote: the voters named lost their quorum state to a fault and "
                    "had not caught up with a leader since", **no_quorum,
                    "converged": record.get("converged"), "waited_s": record.get("waited_s")}
    live = {n for n in record["live"] if n in log_end}
    waited = {"waited_s": record.get("waited_s"), "bound_s": record.get("bound_s")}
    anomalies: list[dict[str, Any]] = []
    progress = record.get("progress") or {}
    if record.get("converged") is not True:
        for node in sorted(live):
            mine = progress.get(node)
            others = [p for n, p in progress.items() if n != node and p is not None]
            if mine is None or any(_short_of(mine, p) for p in others):
                anomalies.append({"type": "unconverged", "why": "behind at the end",
                                  "node": node, "progress": mine,
                                  "others": {n: p for n, p in progress.items() if n != node},
                                  **waited})
    end = max([committed[n] for n in live], default=0)
    for node in sorted(live):
        if log_end[node] < end and not any(a["node"] == node for a in anomalies):
            anomalies.append({"type": "unconverged", "why": "log ends before the committed end",
                              "node": node, "log_end": log_end[node], "committed_end": end,
                              **waited})
    for row in unconverged:
        if row["node"] in live and row["behind"] in live:
            anomalies.append({"type": "unconverged", "why": "apart from what another committed",
                              **row, **waited})
    return anomalies, {"live": sorted(live), "not_live": record.get("not_live"),
                       "converged": record.get("converged"), **waited}


def _short_of(mine: Any, other: Any) -> bool:
    """A progress report behind another's on some numeric field, or, with no
    numeric field to compare, different from it."""
    if not isinstance(mine, dict) or not isinstance(other, dict):
        return mine != other
    numeric = [k for k, v in other.items() if type(v) is int and type(mine.get(k)) is int]
    if not numeric:
        return mine != other
    return any(mine[k] < other[k] for k in numeric)


def _same(x: Entry, y: Entry) -> bool:
    return x["epoch"] == y["epoch"] and x.get("digest") == y.get("digest")


def _runs_with_same_reason(why_by_offset: dict[int, str]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for first, last in ranges(why_by_offset):
        start = first
        for o in range(first + 1, last + 1):
            if why_by_offset[o] != why_by_offset[start]:
                runs.append((start, o - 1))
                start = o
        runs.append((start, last))
    return runs


# --- rule 2: committed offsets that disappeared ------------------------------


def _hw_claims(events: dict[str, list[dict]]) -> dict[str, dict]:
    """Each node's highest reported high watermark, with the event that said so."""
    claims: dict[str, dict] = {}
    for node, evs in events.items():
        for ev in evs:
            hw = ev.get("hw")
            if ev.get("event") == HW.name and type(hw) is int:
                if node not in claims or hw > claims[node]["hw"]:
                    claims[node] = {"node": node, "hw": hw, "t": ev.get("t")}
    return claims


def _cluster_committed_end(committed: dict[str, int], hw_claims: dict[str, dict]) -> int:
    return max(list(committed.values()) + [c["hw"] for c in hw_claims.values()], default=0)


def _lost_committed(dumps: dict[str, dict], f: _Merged, committed: dict[str, int],
                    hw_claims: dict[str, dict], events: dict[str, list[dict]],
                    unjudged: Collection[str] = (),
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """Per node, then cluster-wide. A node in `unjudged` (a fault destroyed its
    data at rest and it never started again: `destroyed_not_restarted`) is
    not held to what it had committed: its dump is what the fault left, read
    by no recovery of its own (a node that refuses a corrupt record stays
    down). The cluster-wide rule still counts it."""
    anomalies = []
    lagging = []
    for node, present in f.present.items():
        claim = max(committed[node], hw_claims.get(node, {}).get("hw", 0))
        missing = holes_between(present, _log_start(dumps[node], present), claim)
        if not missing or node in unjudged:
            continue
        truncations = [ev for ev in events.get(node, []) if ev.get("event") == TRUNCATE.name]
        # Under the flushed/dirty-offset design a follower may hold committed but
        # unflushed entries and lose them in a crash; the majority still has
        # them. Only a cluster-wide loss (below) is a bug then.
        if truncations and truncations[-1].get("reason") == "recovery":
            lagging.append(node)
            continue
        anomalies.append({
            "type": "lost-committed",
            "node": node,
            "offsets": missing,
            "committed_end": claim,
            "hw_event": hw_claims.get(node),
            "log_end_offset": _log_end(dumps[node], present),
            "truncations": truncations,
        })

    cluster_end = _cluster_committed_end(committed, hw_claims)
    if f.present:
        lowest_start = min(_log_start(dumps[n], present) for n, present in f.present.items())
        held = _join(sorted(r for present in f.present.values() for r in present))
        gone = holes_between(held, lowest_start, cluster_end)
        if gone:
            anomalies.append({
                "type": "lost-committed",
                "node": None,
                "offsets": gone,
                "committed_end": cluster_end,
                "committed_by": sorted(
                    [{"node": n, "committed_end": c} for n, c in committed.items()]
                    + [dict(c, source="hw-event") for c in hw_claims.values()],
                    key=lambda c: c["node"]),
                "log_end_offset": {n: _log_end(dumps[n], present)
                                   for n, present in f.present.items()},
            })
    return anomalies, lagging


def _committed_truncations(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    """A node cutting its log below what it had itself reported committed.

    Recovery truncation (unflushed tail lost in a crash) is excused here for the
    reason given in `_lost_committed`; a diverging-epoch truncation never is.
    """
    anomalies = []
    for node, evs in sorted(events.items()):
        best: dict | None = None
        for ev in evs:
            kind = ev.get("event")
            if kind == HW.name and type(ev.get("hw")) is int:
                if best is None or ev["hw"] > best["hw"]:
                    best = ev
            elif kind == TRUNCATE.name and best is not None and type(ev.get("to")) is int:
                if ev["to"] < best["hw"] and ev.get("reason") != "recovery":
                    anomalies.append({
                        "type": "committed-truncated", "node": node,
                        "offsets": [ev["to"], best["hw"] - 1],
                        "truncate": ev, "hw_event": best,
                    })
    return anomalies


# --- rule 3: entries from epochs without a leader -----------------------------


def known_leader_epochs(dumps: dict[str, dict],
                        events: dict[str, list[dict]] | None) -> tuple[set[int], str]:
    """Epochs some node led, from role events; from the checkpoints if there are none."""
    from_events = {ev["epoch"] for evs in (events or {}).values() for ev in evs
                   if ev.get("event") == ROLE.name and ev.get("role") == LEADER_ROLE
                   and type(ev.get("epoch")) is int}
    if from_events:
        return from_events, "role-events"
    from_checkpoints = set()
    for dump in dumps.values():
        for pair in dump.get("epochs") or []:
            if isinstance(pair, list | tuple) and pair and type(pair[0]) is int:
                from_checkpoints.add(pair[0])
    return from_checkpoints, "epoch-checkpoints"


def _unknown_epochs(f: _Merged, leader_epochs: set[int],
                    source: str) -> list[dict[str, Any]]:
    anomalies = []
    for node, by_epoch in f.epochs.items():
        for epoch, (runs, count, first) in sorted(by_epoch.items()):
            if epoch in leader_epochs:
                continue
            anomalies.append({
                "type": "unknown-epoch", "node": node, "epoch": epoch,
                "offsets": _join(runs), "count": count, "first": first,
                "leader_epochs": sorted(leader_epochs), "leader_epochs_from": source,
            })
    return anomalies
