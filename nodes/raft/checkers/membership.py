"""Voter changes judged from the nodes' event lines (KIP-853).

Rule `two-voter-changes-in-flight`: a leader starts a voter change
(`voter_change` line) while the VotersRecord it last appended is neither
committed (a `voters` line with state committed at or past it) nor truncated.
One change at a time is what keeps any majority of the new voter set
overlapping any majority of the old one. A restart forgets what was pending:
a record lost by recovery leaves no line, and a false alarm is worse than a
miss here (the log checkers still judge what the change broke).

Rule `leader-resigned-adding-voter` (KIP-1186): a leader resigns while a
voter it added is uncommitted, and no fault (cut link, node down or paused)
may have been in force from the append to the resignation. Adding a voter
that fetches must not cost the leader its quorum; it does when the joiner
waits for the commit its own fetch would make (AckWhenCommitted on auto-join).

Rule `voter-change-incomplete` (KIP-853): a voter change completes, or fails
cleanly, within a bound. From the leader's `voter_change` line, within
`bound_ns` (2 x fetch timeout + grace, from the nodes' timers) its record is
committed (a `voters` committed line at or past it), truncated, or the leader
leaves its role (any later role line or a restart: the change failed and the
operator is told so). A leader that a majority of its voters fetch from
commits within a fetch timeout; one that hears too few resigns within one
(check quorum). Judged only where no fault may have touched any node from the
append to the bound, and the bound falls before the end of the history.

Rule `voter-changes-out-of-order` (KIP-853: the set in force is the newest
VotersRecord in the log): on each node, every voter set it adopts (a
`voters` line appended or truncated) names a record at or after the one in
force. Falling back to an older record is correct only when the node cut its
log below the newer record's offset (a `truncate` line to at or below it,
since that record was adopted, or right after the fallback line: the core
reports the new set before the truncation itself). A restart starts over: a
power cut loses unflushed records without any line.
"""

from __future__ import annotations

from typing import Any

from nodes.raft.events import ROLE, START, TRUNCATE, VOTER_CHANGE, VOTERS

MAX_LISTED = 50


def changes_in_flight(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    anomalies: list[dict[str, Any]] = []
    for node, lines in sorted(events.items()):
        pending: dict | None = None  # the last appended, not yet committed record
        for ev in lines:
            kind = ev.get("event")
            if kind == START.name:
                pending = None
            elif kind == VOTER_CHANGE.name:
                if pending is not None:
                    anomalies.append({
                        "type": "two-voter-changes-in-flight", "node": node,
                        "epoch": ev.get("epoch"), "change": ev.get("change"),
                        "voter": ev.get("voter"), "offset": ev.get("offset"),
                        "in_flight": {"offset": pending.get("offset"),
                                      "voters": pending.get("voters")}})
            elif kind == VOTERS.name:
                offset = ev.get("offset")
                state = ev.get("state")
                if state == "appended":
                    pending = ev
                elif pending is not None and isinstance(offset, int) and (
                        (state == "committed" and offset >= pending["offset"])
                        or (state == "truncated" and offset < pending["offset"])):
                    pending = None
    return anomalies[:MAX_LISTED]


def resigned_adding_voter(events: dict[str, list[dict]], timeline: list[dict],
                          start_ns: int, end_ns: int) -> list[dict[str, Any]]:
    """`timeline`: invariants.fault_timeline(certain=False) segments, history ns;
    resignations after `end_ns` (the graceful stop) are not judged."""
    anomalies: list[dict[str, Any]] = []
    for node, lines in sorted(events.items()):
        adding: dict | None = None  # the voter_change line of an uncommitted add
        for ev in lines:
            kind = ev.get("event")
            if kind == START.name:
                adding = None
            elif kind == VOTER_CHANGE.name:
                adding = ev if ev.get("change") == "add" else None
            elif kind == VOTERS.name and adding is not None and ev.get("state") != "appended":
                offset = ev.get("offset")
                if isinstance(offset, int) and (
                        (ev.get("state") == "committed" and offset >= adding["offset"])
                        or (ev.get("state") == "truncated" and offset < adding["offset"])):
                    adding = None
            elif kind == ROLE.name and ev.get("role") == "Resigned" and adding is not None:
                t0, t1 = adding.get("t"), ev.get("t")
                if type(t0) is int and type(t1) is int and t1 - start_ns <= end_ns \
                        and not _faulty(timeline, t0 - start_ns, t1 - start_ns):
                    anomalies.append({
                        "type": "leader-resigned-adding-voter", "node": node,
                        "epoch": ev.get("epoch"), "voter": adding.get("voter"),
                        "offset": adding.get("offset"),
                        "added_s": round((t0 - start_ns) / 1e9, 3),
                        "resigned_s": round((t1 - start_ns) / 1e9, 3)})
                adding = None
    return anomalies[:MAX_LISTED]


def _faulty(timeline: list[dict], lo: int, hi: int) -> bool:
    return any(seg["start"] < hi and lo < seg["end"] and (seg["cut"] or seg["down"])
               for seg in timeline)


def changes_incomplete(events: dict[str, list[dict]], timeline: list[dict],
                       start_ns: int, end_ns: int, bound_ns: int) -> list[dict[str, Any]]:
    """`timeline`: invariants.fault_timeline(certain=False) segments, history ns;
    a change whose bound ends after `end_ns` is not judged."""
    anomalies: list[dict[str, Any]] = []
    for node, lines in sorted(events.items()):
        pending: dict | None = None  # the voter_change line of the open change
        for ev in lines + [{"event": "end", "t": start_ns + end_ns}]:
            kind = ev.get("event")
            t = ev.get("t")
            if pending is not None and type(t) is int and t - pending["t"] > bound_ns:
                t0 = pending["t"] - start_ns
                if t0 + bound_ns <= end_ns and not _faulty(timeline, t0, t0 + bound_ns):
                    anomalies.append({
                        "type": "voter-change-incomplete", "node": node,
                        "epoch": pending.get("epoch"), "change": pending.get("change"),
                        "voter": pending.get("voter"), "offset": pending.get("offset"),
                        "changed_s": round(t0 / 1e9, 3),
                        "bound_s": round(bound_ns / 1e9, 3)})
                pending = None
            if kind in (START.name, ROLE.name):
                pending = None
            elif kind == VOTER_CHANGE.name and type(t) is int \
                    and isinstance(ev.get("offset"), int):
                pending = ev
            elif kind == VOTERS.name and pending is not None and isinstance(ev.get("offset"), int):
                state, offset = ev.get("state"), ev["offset"]
                if (state == "committed" and offset >= pending["offset"]) or (
                        state == "truncated" and offset < pending["offset"]):
                    pending = None
    return anomalies[:MAX_LISTED]


def changes_out_of_order(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    anomalies: list[dict[str, Any]] = []
    for node, lines in sorted(events.items()):
        in_force: int | None = None  # offset of the record in force; None: unknown
        cut_to: int | None = None    # lowest truncation since it was adopted
        for i, ev in enumerate(lines):
            kind = ev.get("event")
            if kind == START.name:
                in_force, cut_to = None, None
            elif kind == TRUNCATE.name and isinstance(ev.get("to"), int):
                cut_to = ev["to"] if cut_to is None else min(cut_to, ev["to"])
            elif kind == VOTERS.name and ev.get("state") in ("appended", "truncated") \
                    and isinstance(ev.get("offset"), int):
                offset = ev["offset"]
                if in_force is not None and offset < in_force:
                    following = lines[i + 1] if i + 1 < len(lines) else {}
                    cuts = [c for c in (cut_to, following.get("to")
                                        if following.get("event") == TRUNCATE.name else None)
                            if isinstance(c, int)]
                    if not any(c <= in_force for c in cuts):
                        anomalies.append({
                            "type": "voter-changes-out-of-order", "node": node,
                            "epoch": ev.get("epoch"), "offset": offset,
                            "in_force": in_force, "voters": ev.get("voters")})
                in_force, cut_to = offset, None
    return anomalies[:MAX_LISTED]
