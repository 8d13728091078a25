"""Voter changes judged from the nodes' event lines (KIP-853).

Rule `two-voter-changes-in-flight`: a leader starts a voter change
(`voter_change` line) while the VotersRecord it last appended is neither
committed (a `voters` line with state committed at or past it) nor truncated.
One change at a time is what keeps any majority of the new voter set
overlapping any majority of the old one. A restart forgets what was pending:
a record lost by recovery leaves no line, and a false alarm is worse than a
miss here (the log checkers still judge what the change broke).
"""

from __future__ import annotations

from typing import Any

MAX_LISTED = 50


def changes_in_flight(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    anomalies: list[dict[str, Any]] = []
    for node, lines in sorted(events.items()):
        pending: dict | None = None  # the last appended, not yet committed record
        for ev in lines:
            kind = ev.get("event")
            if kind == "start":
                pending = None
            elif kind == "voter_change":
                if pending is not None:
                    anomalies.append({
                        "type": "two-voter-changes-in-flight", "node": node,
                        "epoch": ev.get("epoch"), "change": ev.get("change"),
                        "voter": ev.get("node"), "offset": ev.get("offset"),
                        "in_flight": {"offset": pending.get("offset"),
                                      "voters": pending.get("voters")}})
            elif kind == "voters":
                offset = ev.get("offset")
                state = ev.get("state")
                if state == "appended":
                    pending = ev
                elif pending is not None and isinstance(offset, int) and (
                        (state == "committed" and offset >= pending["offset"])
                        or (state == "truncated" and offset < pending["offset"])):
                    pending = None
    return anomalies[:MAX_LISTED]
