"""The election restriction (KIP-595 / Raft 5.4.1): a voter grants its vote
(and its pre-vote) only to a candidate whose log is at least as up to date as
its own: a later last epoch, or the same last epoch and a log end at least
its own. Two rules judge it.

`vote-granted-to-less-up-to-date-log`, per grant: the node's `vote` and
`pre_vote` lines carry both logs as the grant compared them (its own
`last_epoch`, `log_end`; the request's `candidate_last_epoch`,
`candidate_log_end`); a grant whose candidate's pair is below the voter's is
an anomaly, whether or not the election went on to cost an entry. Lines
without the four fields (an older node) are not judged.

`vote-for-less-up-to-date-log`, from the vote's consequences where the lines
do not carry the logs:

- the voter's `vote` line (epoch E, candidate C), then its `role` line
  following C in E (so C won E), then a `truncate` line of its own log while
  still following C in E, with no restart between;
- where C's log ended when it won E: the offset at which epoch E starts, from
  the nodes' epoch checkpoints at the end of the run (the leader's first entry
  of E is appended at its log end; only epochs every dump that lists them
  agrees on are used).

If the voter cut its log back to an offset at or above that start, it held
entries past C's whole log, and its own entries up to C's end matched C's
(it kept them): its last epoch was at least C's, its log longer. A vote
given to a less up-to-date log, whether or not the entries it cost were
committed. A voter's log does not grow between its vote and its fetch from
the leader it elected (it takes entries only from a leader of its epoch, and
the leader never cuts its own log), so its log at the truncation is its log
at the vote. Pure: event lines and dump headers in, anomalies out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodes.raft.events import GRANT_LOGS, PRE_VOTE, ROLE, START, TRUNCATE, VOTE


def epoch_starts(dumps: Mapping[str, Mapping[str, Any]]) -> dict[int, int]:
    """Each epoch's start offset, from every dump's `epochs` checkpoint; an
    epoch two dumps place at different offsets is left out (no evidence)."""
    seen: dict[int, set[int]] = {}
    for dump in dumps.values():
        for pair in dump.get("epochs") or []:
            if (isinstance(pair, list | tuple) and len(pair) == 2
                    and type(pair[0]) is int and type(pair[1]) is int):
                seen.setdefault(pair[0], set()).add(pair[1])
    return {epoch: next(iter(offsets)) for epoch, offsets in seen.items() if len(offsets) == 1}


def votes_for_less_up_to_date_logs(events: Mapping[str, Iterable[dict]],
                                   starts: Mapping[int, int]) -> list[dict[str, Any]]:
    anomalies = []
    for node, evs in sorted(events.items()):
        vote: dict | None = None
        following: tuple[Any, Any] | None = None
        for ev in evs:
            kind = ev.get("event")
            if kind == START.name:
                vote, following = None, None
            elif kind == VOTE.name and type(ev.get("epoch")) is int:
                vote = ev
            elif kind == ROLE.name:
                following = ((ev.get("epoch"), ev.get("leader"))
                             if ev.get("role") == "Follower" else None)
            elif (kind == TRUNCATE.name and vote is not None
                  and following == (vote["epoch"], vote.get("candidate"))):
                start = starts.get(vote["epoch"])
                cut_from, cut_to = ev.get("from"), ev.get("to")
                if (start is not None and type(cut_from) is int and type(cut_to) is int
                        and cut_from > cut_to >= start):
                    anomalies.append({
                        "type": "vote-for-less-up-to-date-log", "node": node,
                        "epoch": vote["epoch"], "candidate": vote.get("candidate"),
                        "candidate_log_end": start, "voter_log_end": cut_from,
                        "vote": vote, "truncate": ev})
    return anomalies


def _logs(ev: Mapping[str, Any]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(voter's (last epoch, log end), candidate's) from a grant's line, or None."""
    values = [v for v in (ev.get(field) for field in GRANT_LOGS) if type(v) is int]
    if len(values) != len(GRANT_LOGS):
        return None
    last_epoch, log_end, candidate_last_epoch, candidate_log_end = values
    return (last_epoch, log_end), (candidate_last_epoch, candidate_log_end)


def grants_to_less_up_to_date_logs(events: Mapping[str, Iterable[dict]]) -> list[dict[str, Any]]:
    """Every vote or pre-vote a node granted to a candidate whose log was less
    up to date than its own, as the grant's own line reports both."""
    anomalies = []
    for node, evs in sorted(events.items()):
        for ev in evs:
            kind = ev.get("event")
            if kind not in (VOTE.name, PRE_VOTE.name):
                continue
            logs = _logs(ev)
            if logs is None or logs[1] >= logs[0]:
                continue
            voter, candidate = logs
            anomalies.append({
                "type": "vote-granted-to-less-up-to-date-log", "node": node,
                "grant": "vote" if kind == VOTE.name else "pre-vote",
                "epoch": ev.get("epoch"), "candidate": ev.get("candidate"),
                "voter_log": {"last_epoch": voter[0], "log_end": voter[1]},
                "candidate_log": {"last_epoch": candidate[0], "log_end": candidate[1]},
                "line": ev})
    return anomalies
