"""Divergence: do the replicas' logs agree where Raft says they must?

Three rules over the end-of-run log dumps (and the node event lines, when given,
because a dump only shows the end state):

- `divergence`: two nodes hold different entries (epoch or digest) at an offset
  that either of them has committed, or below an offset where they agree again
  (log matching: the same offset and epoch imply the same prefix). KIP-279's bug.
- `lost-committed` / `committed-truncated`: an offset that was committed is gone,
  from one node that had committed it or from every node.
- `unknown-epoch`: an entry written in an epoch no leader ever had.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations
from typing import Any

from checkers.history import collector_paused
from checkers.verdict import Verdict, verdict

Entry = dict[str, Any]
Log = dict[int, Entry]

# Anomaly lists are read by people: a badly broken run should not produce
# megabytes of near-identical findings.
MAX_ANOMALIES_PER_RULE = 100


@collector_paused()   # millions of small acyclic objects: its passes free nothing
def check(dumps: dict[str, dict], events: dict[str, list[dict]] | None = None) -> Verdict:
    logs = {name: entries_by_offset(dump) for name, dump in sorted(dumps.items())}
    committed = {name: committed_end(dumps[name], logs[name]) for name in logs}
    hw_claims = _hw_claims(events or {})

    anomalies: list[dict[str, Any]] = []
    anomalies += _cap(_mismatches(logs, committed))
    lost, lagging = _lost_committed(dumps, logs, committed, hw_claims, events or {})
    anomalies += _cap(lost)
    anomalies += _cap(_committed_truncations(events or {}))
    leader_epochs, epoch_source = known_leader_epochs(dumps, events)
    anomalies += _cap(_unknown_epochs(logs, leader_epochs, epoch_source))

    stats = {
        "unconverged": _unconverged(logs, committed),
        "nodes": sorted(logs),
        "entries": {name: len(log) for name, log in logs.items()},
        "log_end_offset": {name: _log_end(dumps[name], log) for name, log in logs.items()},
        "committed_end": committed,
        "cluster_committed_end": _cluster_committed_end(committed, hw_claims),
        "leader_epochs": sorted(leader_epochs),
        "leader_epochs_from": epoch_source,
        "lagging_after_recovery": lagging,
    }
    if anomalies:
        return verdict(False, anomalies, stats)
    # With no dump there is nothing to compare: no evidence either way.
    return verdict(True if logs else "unknown", [], stats)


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
    hw = dump.get("high_watermark")
    end = hw if type(hw) is int else 0
    flagged = [o for o, e in log.items() if e.get("committed") is True]
    return max([end] + [o + 1 for o in flagged])


def _log_end(dump: dict, log: Log) -> int:
    end = dump.get("log_end_offset")
    return end if type(end) is int else (max(log) + 1 if log else 0)


def _log_start(dump: dict, log: Log) -> int:
    start = dump.get("log_start_offset")
    return start if type(start) is int else (min(log) if log else 0)


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
    out: list[list[int]] = []
    nxt = start
    for o in sorted(set(present)):
        if o >= end:
            break
        if o > nxt:
            out.append([nxt, o - 1])
        nxt = max(nxt, o + 1)
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


def _mismatches(logs: dict[str, Log], committed: dict[str, int]) -> list[dict[str, Any]]:
    anomalies = []
    for a, b in combinations(sorted(logs), 2):
        la, lb = logs[a], logs[b]
        common = sorted(la.keys() & lb.keys())
        # Replicas' equal entries are often one object (see rundir.load_dumps).
        same = {o for o in common if la[o] is lb[o] or _same(la[o], lb[o])}
        last_match = max(same, default=-1)
        why_by_offset: dict[int, str] = {}
        for o in common:
            if o in same:
                continue
            # Committed on both sides and different: log matching is broken.
            # Committed on one side only is a follower that has not fetched
            # since the leader moved on; raft truncates such a tail on the
            # next fetch, so it is `unconverged` (see _unconverged), not unsafe.
            if o < committed[a] and o < committed[b]:
                why_by_offset[o] = "committed"
            elif o < last_match:
                why_by_offset[o] = "below-matching-entry"
        for first, last in _runs_with_same_reason(why_by_offset):
            span = common[bisect_left(common, first):bisect_right(common, last)]
            anomalies.append({
                "type": "divergence",
                "why": why_by_offset[first],
                "nodes": [a, b],
                "offsets": [first, last],
                "count": len(span),
                "sides": {
                    a: {"epochs": sorted({la[o]["epoch"] for o in span}),
                        "committed_end": committed[a], "first": _side(la[first])},
                    b: {"epochs": sorted({lb[o]["epoch"] for o in span}),
                        "committed_end": committed[b], "first": _side(lb[first])},
                },
            })
    return anomalies


def _unconverged(logs: dict[str, Log], committed: dict[str, int]) -> list[dict[str, Any]]:
    """Nodes still holding an uncommitted tail that differs from what another node
    committed: not a safety violation, but worth seeing when a run ends."""
    out = []
    for a, b in combinations(sorted(logs), 2):
        la, lb = logs[a], logs[b]
        for behind, ahead, lbh, lah in ((a, b, la, lb), (b, a, lb, la)):
            offsets = [o for o in sorted(lbh.keys() & lah.keys())
                       if committed[behind] <= o < committed[ahead]
                       and lbh[o] is not lah[o] and not _same(lbh[o], lah[o])]
            if offsets:
                out.append({"node": behind, "behind": ahead, "offsets": [offsets[0], offsets[-1]],
                            "count": len(offsets),
                            "epochs": {behind: sorted({lbh[o]["epoch"] for o in offsets}),
                                       ahead: sorted({lah[o]["epoch"] for o in offsets})}})
    return out[:20]


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
            if ev.get("event") == "hw" and type(hw) is int:
                if node not in claims or hw > claims[node]["hw"]:
                    claims[node] = {"node": node, "hw": hw, "t": ev.get("t")}
    return claims


def _cluster_committed_end(committed: dict[str, int], hw_claims: dict[str, dict]) -> int:
    return max(list(committed.values()) + [c["hw"] for c in hw_claims.values()], default=0)


def _lost_committed(dumps: dict[str, dict], logs: dict[str, Log], committed: dict[str, int],
                    hw_claims: dict[str, dict], events: dict[str, list[dict]],
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    anomalies = []
    lagging = []
    for node, log in logs.items():
        claim = max(committed[node], hw_claims.get(node, {}).get("hw", 0))
        missing = holes(log, _log_start(dumps[node], log), claim)
        if not missing:
            continue
        truncations = [ev for ev in events.get(node, []) if ev.get("event") == "truncate"]
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
            "log_end_offset": _log_end(dumps[node], log),
            "truncations": truncations,
        })

    cluster_end = _cluster_committed_end(committed, hw_claims)
    if logs:
        lowest_start = min(_log_start(dumps[n], log) for n, log in logs.items())
        held = set().union(*(log.keys() for log in logs.values()))
        gone = holes(held, lowest_start, cluster_end)
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
                "log_end_offset": {n: _log_end(dumps[n], log) for n, log in logs.items()},
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
            if kind == "hw" and type(ev.get("hw")) is int:
                if best is None or ev["hw"] > best["hw"]:
                    best = ev
            elif kind == "truncate" and best is not None and type(ev.get("to")) is int:
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
                   if ev.get("event") == "role" and ev.get("role") == "Leader"
                   and type(ev.get("epoch")) is int}
    if from_events:
        return from_events, "role-events"
    from_checkpoints = set()
    for dump in dumps.values():
        for pair in dump.get("epochs") or []:
            if isinstance(pair, list | tuple) and pair and type(pair[0]) is int:
                from_checkpoints.add(pair[0])
    return from_checkpoints, "epoch-checkpoints"


def _unknown_epochs(logs: dict[str, Log], leader_epochs: set[int],
                    source: str) -> list[dict[str, Any]]:
    anomalies = []
    for node, log in logs.items():
        by_epoch: dict[int, list[int]] = defaultdict(list)
        for o, e in log.items():
            if e["epoch"] not in leader_epochs:
                by_epoch[e["epoch"]].append(o)
        for epoch, offsets in sorted(by_epoch.items()):
            anomalies.append({
                "type": "unknown-epoch", "node": node, "epoch": epoch,
                "offsets": ranges(offsets), "count": len(offsets),
                "first": _side(log[min(offsets)]),
                "leader_epochs": sorted(leader_epochs), "leader_epochs_from": source,
            })
    return anomalies
