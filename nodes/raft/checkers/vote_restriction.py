"""`vote-for-less-up-to-date-log` (KIP-595 / Raft's election restriction): a
voter grants its vote only to a candidate whose log is at least as up to date
as its own (last epoch, then log end). Judged from what a run already holds:

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

from nodes.raft.events import ROLE, START, TRUNCATE, VOTE


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
