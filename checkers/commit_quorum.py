"""Did a leader commit on a quorum? Judged from the nodes' event lines alone.

A leader's high watermark H (its `hw` line in the epoch it leads) says a
quorum of its voters held offsets [0, H) durably at that moment. A node that
held an offset durably once it was committed never drops it afterwards: no
later leader lacks a committed entry (leader completeness), so no
later diverging-epoch truncation cuts it, and a crash keeps what was flushed.
So a node that, any time after the claim, cuts its log back to an end at or
below H - 1 because its entries there diverge from a leader's did not hold
offset H - 1 durably when H was claimed.

`committed-without-quorum`: a leader's hw claim after which so many of its
voters truncated below it (diverging epoch) that the rest, the leader
included if it is a voter, are fewer than a majority, for every voter set
the leader had in force since it started. A leader that counted a replica
it had not validated, or a flushed end a truncation should have lowered,
shows here even when no write is lost in the end.

Only diverging-epoch truncations count: a recovery truncation is a node
losing what it had not flushed, and faults that destroy flushed data
(truncating or wiping a node's files) show as recovery or as a fresh start.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from nodes.events import HW, LEADER_ROLE, ROLE, START, TRUNCATE, VOTERS

DIVERGING = "diverging-epoch"


def _voter_set(value: Any) -> frozenset[str] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return None


def leader_claims(node: str, events: Iterable[dict]) -> list[dict[str, Any]]:
    """The hw lines `node` wrote while it led, each with the voter sets it had
    in force since its process started (the start line's, then each change it
    appended or truncated back)."""
    claims = []
    leading_epoch: int | None = None
    sets: list[frozenset[str]] = []
    for ev in events:
        kind = ev.get("event")
        if kind == START.name:
            leading_epoch = None
            start_set = _voter_set(ev.get("voters"))
            sets = [start_set] if start_set else []
        elif kind == ROLE.name:
            leading_epoch = ev.get("epoch") if ev.get("role") == LEADER_ROLE else None
        elif kind == VOTERS.name and ev.get("state") != "committed":
            changed = _voter_set(ev.get("voters"))
            if changed:
                sets.append(changed)
        elif (kind == HW.name and leading_epoch is not None and ev.get("epoch") == leading_epoch
              and type(ev.get("hw")) is int and type(ev.get("t")) is int and sets):
            claims.append({"node": node, "t": ev["t"], "hw": ev["hw"],
                           "epoch": leading_epoch, "voter_sets": list(dict.fromkeys(sets))})
    return claims


def _later_cuts(events: dict[str, list[dict]]) -> dict[str, tuple[list[int], list[dict]]]:
    """Per node, its diverging-epoch truncations in time order, with, for each,
    the one that cut lowest from it on (so the lowest cut after any moment is
    one bisection away)."""
    out = {}
    for node, evs in events.items():
        cuts = sorted((ev for ev in evs if ev.get("event") == TRUNCATE.name
                       and ev.get("reason") == DIVERGING and type(ev.get("t")) is int
                       and type(ev.get("to")) is int), key=lambda ev: ev["t"])
        lowest: list[dict] = []
        for ev in reversed(cuts):
            lowest.append(ev if not lowest or ev["to"] <= lowest[-1]["to"] else lowest[-1])
        out[node] = ([ev["t"] for ev in cuts], lowest[::-1])
    return out


def check(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    """One `committed-without-quorum` anomaly per leader and epoch (its first
    such claim), the truncations that show it named."""
    cuts = _later_cuts(events)
    anomalies = []
    flagged: set[tuple[str, int]] = set()
    for node, evs in sorted(events.items()):
        for claim in leader_claims(node, evs):
            if (node, claim["epoch"]) in flagged:
                continue
            last = claim["hw"] - 1
            without: dict[str, dict] = {}
            for other, (times, lowest) in cuts.items():
                i = bisect_right(times, claim["t"])
                if other != node and i < len(times) and lowest[i]["to"] <= last:
                    without[other] = lowest[i]
            if not without or any(len(s - set(without)) > len(s) // 2
                                  for s in claim["voter_sets"]):
                continue
            flagged.add((node, claim["epoch"]))
            anomalies.append({
                "type": "committed-without-quorum", "leader": node, "epoch": claim["epoch"],
                "hw": claim["hw"], "t": claim["t"],
                "voters": [sorted(s) for s in claim["voter_sets"]],
                "did_not_hold": {n: {"t": ev["t"], "from": ev.get("from"), "to": ev["to"]}
                                 for n, ev in sorted(without.items())},
                "explanation": (f"{node} led epoch {claim['epoch']} and committed offset "
                                f"{last} (hw {claim['hw']}), but {len(without)} of its voters "
                                f"({', '.join(sorted(without))}) later cut their logs back "
                                "below it on a diverging epoch: none of them held it durably "
                                "when it was committed, or one lost it since, and without them "
                                "the rest are not a majority"),
            })
    return anomalies
