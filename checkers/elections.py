"""Elections: election safety (one leader per epoch), from the nodes' event lines.

- `multiple-leaders`: more than one leader named for one epoch, whether by the
  leaders themselves (role Leader) or by followers (the `leader` they report).

A node's epoch going down is judged by a system's own checker: only the
system knows which of its lines say a node lost its state.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from checkers.verdict import Verdict, judged_on_events
from nodes.events import LEADER_ROLE, ROLE


def check(events: dict[str, list[dict]]) -> Verdict:
    anomalies = _multiple_leaders(events)
    elections = leader_elections(events)
    stats = {
        "nodes": sorted(events),
        "elections": len(elections),
        "leaders_by_epoch": {str(e["epoch"]): e["node"] for e in elections},
        "max_epoch": {node: max(_epochs(evs), default=None) for node, evs in
                      sorted(events.items())},
    }
    return judged_on_events(anomalies, stats, events)


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
    return (ev.get("event") == ROLE.name and ev.get("role") == LEADER_ROLE
            and type(ev.get("epoch")) is int)


def _epochs(evs: list[dict]) -> list[int]:
    return [ev["epoch"] for ev in evs if type(ev.get("epoch")) is int]


def _multiple_leaders(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    claims: dict[int, list[dict]] = defaultdict(list)
    for node, evs in sorted(events.items()):
        for ev in evs:
            if ev.get("event") != ROLE.name or type(ev.get("epoch")) is not int:
                continue
            named = node if ev.get("role") == LEADER_ROLE else ev.get("leader")
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
