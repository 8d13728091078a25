"""Elections: election safety (one leader per epoch), from the nodes' event lines.

- `multiple-leaders`: more than one leader named for one epoch, whether by the
  leaders themselves (role Leader) or by followers (the `leader` they report).
- `epoch-regression`: a node's epoch went down without the node reporting a
  `data_loss` in between or in the same incarnation. A restart (`start`) alone
  does not excuse it: the epoch lives in the quorum-state file, which must
  survive restarts. A node re-formatted for another cluster (a `start` line
  with another `cluster_id`) is another node of another quorum: its epochs
  are compared with its own in that cluster only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from checkers.verdict import Verdict, verdict
from nodes.events import ROLE, START
from nodes.raft.events import DATA_LOSS


def check(events: dict[str, list[dict]]) -> Verdict:
    anomalies = _multiple_leaders(events) + _epoch_regressions(events)
    elections = leader_elections(events)
    stats = {
        "nodes": sorted(events),
        "elections": len(elections),
        "leaders_by_epoch": {str(e["epoch"]): e["node"] for e in elections},
        "max_epoch": {node: max(_epochs(evs), default=None) for node, evs in
                      sorted(events.items())},
        "data_loss_events": sum(1 for evs in events.values() for ev in evs
                                if ev.get("event") == DATA_LOSS.name),
    }
    if anomalies:
        return verdict(False, anomalies, stats)
    if not any(events.values()):
        stats["reason"] = "no node event lines"
        return verdict("unknown", [], stats)
    return verdict(True, [], stats)


def leader_elections(events: dict[str, list[dict]]) -> list[dict]:
    """The first Leader role event of each (epoch, node), in time order."""
    seen: set[tuple[int, str]] = set()
    out = []
    for node, evs in events.items():
        for ev in evs:
            if _is_leader_event(ev) and (ev["epoch"], node) not in seen:
                seen.add((ev["epoch"], node))
                out.append({"t": ev.get("t"), "node": node, "epoch": ev["epoch"]})
    out.sort(key=lambda e: (e["t"] if type(e["t"]) is int else 0, e["epoch"]))
    return out


def _is_leader_event(ev: dict) -> bool:
    return (ev.get("event") == ROLE.name and ev.get("role") == "Leader"
            and type(ev.get("epoch")) is int)


def _epochs(evs: list[dict]) -> list[int]:
    return [ev["epoch"] for ev in evs if type(ev.get("epoch")) is int]


def _multiple_leaders(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    claims: dict[int, list[dict]] = defaultdict(list)
    for node, evs in sorted(events.items()):
        for ev in evs:
            if ev.get("event") != ROLE.name or type(ev.get("epoch")) is not int:
                continue
            named = node if ev.get("role") == "Leader" else ev.get("leader")
            if isinstance(named, str):
                claims[ev["epoch"]].append({"by": node, "role": ev.get("role"),
                                            "leader": named, "t": ev.get("t")})
    anomalies = []
    for epoch, cs in sorted(claims.items()):
        leaders = sorted({c["leader"] for c in cs})
        if len(leaders) > 1:
            # First claim per (claimant, leader): enough to show both sides.
            shown = list({(c["by"], c["leader"]): c for c in reversed(cs)}.values())[::-1]
            anomalies.append({"type": "multiple-leaders", "epoch": epoch,
                              "leaders": leaders, "claims": shown})
    return anomalies


def _epoch_regressions(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    anomalies = []
    for node, evs in sorted(events.items()):
        incarnation = 0
        lossy_incarnations = set()
        for ev in evs:
            if ev.get("event") == START.name:
                incarnation += 1
            elif ev.get("event") == DATA_LOSS.name:
                lossy_incarnations.add(incarnation)
        # A node may report its lost quorum state just before or just after
        # its start line: either way that incarnation is excused.
        incarnation = 0
        last_in: dict[Any, dict] = {}     # cluster id -> its last line with an epoch
        cluster = None
        last: dict | None = None
        last_incarnation = 0
        loss_since_last = False
        for ev in evs:
            kind = ev.get("event")
            if kind == START.name:
                incarnation += 1
                if ev.get("cluster_id") != cluster:
                    if last is not None:
                        last_in[cluster] = last
                    cluster = ev.get("cluster_id")
                    last = last_in.get(cluster)
            if kind == DATA_LOSS.name:
                loss_since_last = True
                continue
            if type(ev.get("epoch")) is not int:
                continue
            if last is not None and ev["epoch"] < last["epoch"]:
                excused = loss_since_last or incarnation in lossy_incarnations
                if not excused:
                    anomalies.append({
                        "type": "epoch-regression", "node": node,
                        "from_epoch": last["epoch"], "to_epoch": ev["epoch"],
                        "before": last, "after": ev,
                        "restarted_between": incarnation != last_incarnation,
                    })
            last = ev
            last_incarnation = incarnation
            loss_since_last = False
    return anomalies

