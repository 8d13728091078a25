"""Was every copy a leader counted for a commit really there? Judged from the
nodes' event lines alone.

A leader that raises its high watermark to H names, in that `hw` line, the
durable log end it counted for each voter (`counted`: {voter: end}, itself
included). Each voter counted at or above H is a copy of offsets [0, H) the
commit rests on: the commit's own justification. Each voter's own lines say
what it held durably: `start` (what it recovered, `log_end`), `flushed` (its
durable end advanced to `end`), `truncate` (its log cut back to `to`). Two
rules hold the justification against them:

- `counted-not-durable`: at the moment of the claim, a voter's own lines put
  its durable end below H while it was counted at or above H (a copy the
  commit rests on), or, for a voter that follows that leader in that epoch
  (its last `role` line names them), below any end the leader counted for
  it (every count is the leader's belief of what that copy holds, and the
  next commit rests on it): it had not said it flushed that far, or it cut
  its log back since it last did. A node writes its `flushed` line before
  any message reporting that end leaves (docs/contracts.md), and a leader
  counts only the prefix it validated against its own log, which it never
  makes its follower cut; a voter that moved on to a later leader may have
  cut what was not committed, never what was. So a correct count never runs
  ahead of the voter's lines.
- `counted-then-diverged`: after the claim, that voter cut its log back below
  H on a diverging epoch: the copy counted was not the leader's. A copy of
  a committed entry is never cut that way (leader completeness), so even a
  copy the majority did not need may not be.

And one rule holds the line to itself:

- `commit-off-counted-quorum`: the new H is not the end the counts give a
  majority of the voters the line names (the largest end that many of them
  hold: their counts sorted down, the majority-th). Above it, the commit
  rests on fewer copies than a majority (a quorum miscounted); below it,
  the leader withheld a commit its own copies justified (a quorum that asks
  for one copy too many stalls when a minority is down). A leader raises H
  only to an entry of its own epoch, and every entry after its first one is
  of that epoch too, so a correct leader that counted a majority's copies up
  to Q and raised H at all raised it to Q.

Excused: a voter whose restart recovered less than its lines said it held
durably, or that cut below it for any reason but divergence (only a fault
that destroys flushed data, or a wiped disk, does that): a leadership that
began before that loss may still count what it reported before; and a
diverging cut after such a loss says nothing of the copy counted before it.

A run whose `hw` lines name no counts (a system that does not write them)
is not judged here; one with counts but no `flushed` lines has its later
cuts judged, not its durable ends (`stats`, with the reason).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from nodes.events import FLUSHED, HW, LEADER_ROLE, ROLE, START, TRUNCATE

DIVERGING = "diverging-epoch"
NOT_DURABLE = "counted-not-durable"
THEN_DIVERGED = "counted-then-diverged"
OFF_QUORUM = "commit-off-counted-quorum"


class _Last:
    """Sorts after anything: `(t, _LAST)` bisects past every tuple at `t`."""

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


_LAST = _Last()


def _int(value: Any) -> TypeGuard[int]:
    return type(value) is int


@dataclass
class DurableLine:
    """One voter's durable end through the run, from its own lines."""

    times: list[int] = field(default_factory=list)      # when the end changed
    ends: list[int] = field(default_factory=list)       # the end from then on
    losses: list[int] = field(default_factory=list)     # restarts that recovered less
    cuts: list[tuple[int, int, int | None]] = field(default_factory=list)  # (t, to, from)
    follows: list[tuple[int, Any, Any]] = field(default_factory=list)  # (t, epoch, leader)

    def end_at(self, t: int) -> int | None:
        """Its durable end at `t` (lines at `t` included); None before its first line."""
        i = bisect_right(self.times, t)
        return self.ends[i - 1] if i else None

    def follows_at(self, t: int, leader: str, epoch: Any) -> bool:
        """Whether its last role line at or before `t` names `leader` in `epoch`."""
        i = bisect_right(self.follows, (t, _LAST))
        return bool(i) and self.follows[i - 1][1:] == (epoch, leader)

    def lost_between(self, start: int, end: int) -> bool:
        i = bisect_left(self.losses, start)
        return i < len(self.losses) and self.losses[i] <= end

    def first_cut_below(self, t: int, below: int) -> tuple[int, int, int | None] | None:
        """The first diverging cut after `t` to an end below `below`, unless a
        restart that lost durable data comes first."""
        i = bisect_right(self.cuts, (t, _LAST))
        loss = bisect_right(self.losses, t)
        next_loss = self.losses[loss] if loss < len(self.losses) else None
        for cut in self.cuts[i:]:
            if next_loss is not None and cut[0] > next_loss:
                return None
            if cut[1] < below:
                return cut
        return None


def durable_lines(events: list[dict]) -> DurableLine:
    """`events`: one node's lines in the order it wrote them."""
    line = DurableLine()
    end: int | None = None

    def note(t: int, value: int) -> None:
        line.times.append(t)
        line.ends.append(value)

    for ev in events:
        t, kind = ev.get("t"), ev.get("event")
        if not _int(t):
            continue
        log_end, flushed, to = ev.get("log_end"), ev.get("end"), ev.get("to")
        if kind == START.name and _int(log_end):
            if end is not None and log_end < end:
                line.losses.append(t)
            end = log_end
            note(t, end)
        elif kind == ROLE.name:
            line.follows.append((t, ev.get("epoch"), ev.get("leader")))
        elif kind == FLUSHED.name and _int(flushed):
            end = flushed
            note(t, end)
        elif kind == TRUNCATE.name and _int(to):
            if ev.get("reason") == DIVERGING:
                line.cuts.append((t, to, ev.get("from")))
            elif end is not None and to < end:
                line.losses.append(t)   # a recovery that found durable data gone
            if end is not None and to < end:
                end = to
                note(t, end)
    return line


def claims(node: str, events: list[dict]) -> list[dict[str, Any]]:
    """The `hw` lines of `node` that name their counts, each with the time its
    leadership began (its last `role` Leader line before; None if none)."""
    out = []
    since: int | None = None
    for ev in events:
        kind = ev.get("event")
        if kind == START.name:
            since = None
        elif kind == ROLE.name:
            since = ev.get("t") if ev.get("role") == LEADER_ROLE else None
        elif kind == HW.name and isinstance(ev.get("counted"), dict) and _int(ev.get("hw")) \
                and _int(ev.get("t")):
            counted = {v: e for v, e in ev["counted"].items() if isinstance(v, str) and _int(e)}
            out.append({"node": node, "t": ev["t"], "hw": ev["hw"], "epoch": ev.get("epoch"),
                        "since": since, "counted": counted})
    return out


def check(events: dict[str, list[dict]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The anomalies (one per leader, epoch, voter and rule: its first claim)
    and what was judged."""
    all_claims = [c for node, evs in sorted(events.items()) for c in claims(node, evs)]
    if not all_claims:
        return [], {"claims": 0, "reason": "no hw line names the durable ends it counted"}
    lines = {node: durable_lines(evs) for node, evs in events.items()}
    judge_durable = any(ev.get("event") == FLUSHED.name for evs in events.values() for ev in evs)
    anomalies: list[dict[str, Any]] = []
    seen: set[tuple[str, Any, str, str]] = set()
    for claim in all_claims:
        leader, hw, t = claim["node"], claim["hw"], claim["t"]
        quorum_end = majority_end(claim["counted"])
        key = (leader, claim["epoch"], "", OFF_QUORUM)
        if quorum_end is not None and quorum_end != hw and key not in seen:
            seen.add(key)
            anomalies.append(_off_quorum(claim, quorum_end))
        for voter, end in sorted(claim["counted"].items()):
            line = lines.get(voter)
            if line is None:
                continue
            since = claim["since"] if claim["since"] is not None else t
            # A voter that follows this leader holds every count it made of it:
            # only this leader's answers could make it cut, and they never cut
            # a prefix it validated. One that moved on may have cut what was
            # not committed, never what was.
            if line.follows_at(t, leader, claim["epoch"]):
                bound = end
            else:
                bound = hw if end >= hw else None
            for rule, finding in ((NOT_DURABLE, _not_durable(line, t, bound, since)
                                   if judge_durable and bound is not None else None),
                                  (THEN_DIVERGED, _then_diverged(line, t, hw)
                                   if end >= hw else None)):
                key = (leader, claim["epoch"], voter, rule)
                if finding is None or key in seen:
                    continue
                seen.add(key)
                anomalies.append(_anomaly(rule, claim, voter, end, finding))
    stats: dict[str, Any] = {"claims": len(all_claims)}
    if not judge_durable:
        stats["reason"] = "no flushed lines: durable ends not judged, later cuts only"
    return anomalies, stats


def majority_end(counted: dict[str, int]) -> int | None:
    """The largest end a majority of the counted voters hold (None: no counts)."""
    ends = sorted(counted.values(), reverse=True)
    return ends[len(ends) // 2] if ends else None


def _off_quorum(claim: dict, quorum_end: int) -> dict[str, Any]:
    leader, hw, counted = claim["node"], claim["hw"], claim["counted"]
    how = ("fewer than a majority of them hold it: a quorum miscounted" if hw > quorum_end else
           "a majority already held more: a commit its copies justified, withheld")
    return {"type": OFF_QUORUM, "leader": leader, "epoch": claim["epoch"], "hw": hw,
            "t": claim["t"], "majority_end": quorum_end, "counted": dict(sorted(counted.items())),
            "explanation": (f"{leader} raised its high watermark to {hw} (epoch "
                            f"{claim['epoch']}) counting {dict(sorted(counted.items()))}; a "
                            f"majority of those {len(counted)} voters holds {quorum_end}: {how}")}


def _not_durable(line: DurableLine, t: int, bound: int, since: int) -> dict | None:
    durable = line.end_at(t)
    if durable is None or durable >= bound or line.lost_between(since, t):
        return None
    return {"durable_end": durable}


def _then_diverged(line: DurableLine, t: int, hw: int) -> dict | None:
    cut = line.first_cut_below(t, hw)
    return None if cut is None else {"cut": {"t": cut[0], "from": cut[2], "to": cut[1]}}


def _anomaly(rule: str, claim: dict, voter: str, end: int, finding: dict) -> dict[str, Any]:
    leader, hw = claim["node"], claim["hw"]
    head = (f"{leader} raised its high watermark to {hw} (epoch {claim['epoch']}) counting "
            f"{voter}'s durable end as {end}")
    if rule == NOT_DURABLE:
        why = (f", but {voter}'s own lines put its durable end at "
               f"{finding['durable_end']} then: offsets {finding['durable_end']}..{end - 1} "
               "were not on its disk" + ("" if end >= hw else
                                         f" ({voter} follows {leader}: a count below this "
                                         "commit, but the next rests on it)"))
    else:
        cut = finding["cut"]
        why = (f", but {voter} later cut its log back to {cut['to']} on a diverging epoch: "
               "the copy counted was not the leader's")
    return {"type": rule, "leader": leader, "epoch": claim["epoch"], "hw": hw,
            "t": claim["t"], "voter": voter, "counted_end": end, **finding,
            "explanation": head + why}
