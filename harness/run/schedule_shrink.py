"""Shrinking a failing run's fault schedule on real processes.

The executed schedule (as `faultline replay` re-executes it) is cut into
episodes: an inject with every event up to its heal (a trigger's own
sub-faults, e.g. the lose-unsynced a power cut makes, stay inside it; the
hunt's moves do not: each is an episode). The empty schedule is tried first
(delta debugging never tries it: a bug that needs no fault says so); delta
debugging drops episodes; then each kept episode is halved in length while
the failure still shows (its heal, and the events inside it, closer to its
inject; never under MIN_FAULT_S); then the workload's time is cut to just
after the last kept event; then each episode is moved later within the run
that is left (half its room at a time, never past the next episode's start
nor into the tail), which tells whether the failure needs the fault early.
Every candidate is replayed K times, each a real run in its
own worker, and kept when it shows the original's failure (invalid with
every anomaly kind the original had) at least as often as the full schedule
did in its own K replays, the first thing measured (real runs are not
deterministic, so the bar is measured under the same conditions).

Each candidate's result is stored as soon as it is known, keyed by the
episodes, lengths, moves and time it kept, in RUN/schedule-shrink.json: the
search is deterministic given those results, so a run that was interrupted
or ran out of budget resumes where it stopped by running the same command
again; until then the result is the last candidate that held (best so far).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.faults import HUNT
from checkers.rundir import RUN_JSON, load_json
from checkers.shrink import ddmin
from harness.run.reproduction import run_replays, shows_failure
from nemesis.base import split_spec

STATE_JSON = "schedule-shrink.json"
# Seconds of workload kept after the last kept fault event when the time is
# cut: a fault's damage shows in the ops after it.
TAIL_S = 3.0
# A fault is not shortened below this (a partition or a power cut shorter than
# a few election ticks tests nothing), nor moved by less than MIN_MOVE_S.
MIN_FAULT_S = 0.5
MIN_MOVE_S = 0.5

Say = Callable[[str], None]


class BudgetSpent(Exception):
    """The replay budget ran out; the state file holds what was learnt."""


def episodes(events: list[dict[str, Any]],
             windows: frozenset[str] = frozenset({HUNT.name})) -> list[list[int]]:
    """Pure: the schedule's events grouped: an inject opens an episode that
    takes every event up to the heal of its fault (an inject never healed:
    to the end); a heal with no open inject is an episode of its own. A fault
    of `windows` (the hunt: its moves are faults of their own) takes only its
    own heal; what happens inside it is grouped on its own."""
    out: list[list[int]] = []
    taken: set[int] = set()
    for i, e in enumerate(events):
        if i in taken:
            continue
        group = [i]
        taken.add(i)
        if e["action"] == "inject":
            window = split_spec(e["fault"])[0] in windows
            for j in range(i + 1, len(events)):
                if events[j]["action"] == "heal" and events[j]["fault"] == e["fault"]:
                    group.append(j)
                    taken.add(j)
                    break
                if not window and j not in taken:
                    group.append(j)
                    taken.add(j)
        out.append(group)
    return out


def candidate_schedule(events: list[dict[str, Any]], eps: list[list[int]],
                       kept: list[int]) -> list[dict[str, Any]]:
    """Pure: the events of the kept episodes, in time order."""
    return [events[i] for i in sorted(i for e in kept for i in eps[e])]


def cut_time(schedule: list[dict[str, Any]], time_limit: float) -> float:
    """Pure: the workload time that still covers every kept event and a tail."""
    last = max((e["time"] for e in schedule), default=0.0)
    return min(time_limit, float(math.ceil(last + TAIL_S)))


@dataclass(frozen=True)
class Plan:
    """A candidate schedule: the kept episodes, each perhaps shortened (its
    events' offsets from its inject scaled by a factor) and moved later (by
    seconds), and the workload's time."""
    kept: tuple[int, ...]
    time_limit: float
    scale: tuple[tuple[int, float], ...] = ()
    shift: tuple[tuple[int, float], ...] = ()

    def factor(self, e: int) -> float:
        return dict(self.scale).get(e, 1.0)

    def delay(self, e: int) -> float:
        return dict(self.shift).get(e, 0.0)

    def with_factor(self, e: int, f: float) -> Plan:
        return replace(self, scale=tuple(sorted({**dict(self.scale), e: f}.items())))

    def with_delay(self, e: int, d: float) -> Plan:
        return replace(self, shift=tuple(sorted({**dict(self.shift), e: d}.items())))


def signature(plan: Plan) -> str:
    """Pure: the key a candidate's result is stored under ("1,3@20", then
    ";1x0.5" for a shortened episode and ";1+4" for one moved 4 s later)."""
    return (f"{','.join(map(str, sorted(plan.kept)))}@{plan.time_limit:g}"
            + "".join(f";{e}x{f:g}" for e, f in plan.scale)
            + "".join(f";{e}+{d:g}" for e, d in plan.shift))


def span(events: list[dict[str, Any]], ep: list[int], plan: Plan, e: int
         ) -> tuple[float, float]:
    """Pure: when episode `e` starts and ends under `plan`."""
    times = [adjusted_time(events, ep, plan, e, i) for i in ep]
    return min(times), max(times)


def adjusted_time(events: list[dict[str, Any]], ep: list[int], plan: Plan, e: int,
                  i: int) -> float:
    start = events[ep[0]]["time"]
    return round(start + plan.delay(e) + (events[i]["time"] - start) * plan.factor(e), 3)


def plan_schedule(events: list[dict[str, Any]], eps: list[list[int]],
                  plan: Plan) -> list[dict[str, Any]]:
    """Pure: the events of the kept episodes at their adjusted times, in time order."""
    out = []
    for e in plan.kept:
        for i in eps[e]:
            out.append((adjusted_time(events, eps[e], plan, e, i), i,
                        events[i] | {"time": adjusted_time(events, eps[e], plan, e, i)}))
    return [ev for _, _, ev in sorted(out, key=lambda t: (t[0], t[1]))]


def heals_itself(events: list[dict[str, Any]], ep: list[int]) -> bool:
    """Pure: the episode is an inject closed by its own heal (so it has a length)."""
    return len(ep) > 1 and events[ep[0]]["action"] == "inject" and \
        events[ep[-1]]["action"] == "heal"


def shorter(events: list[dict[str, Any]], eps: list[list[int]], plan: Plan,
            e: int) -> Plan | None:
    """Pure: `plan` with episode `e` half as long (its heal, and the events
    inside it, closer to its inject), or None: it has no heal, or would last
    under MIN_FAULT_S."""
    if not heals_itself(events, eps[e]):
        return None
    start, end = span(events, eps[e], plan, e)
    if (end - start) / 2 < MIN_FAULT_S:
        return None
    return plan.with_factor(e, plan.factor(e) / 2)


def later(events: list[dict[str, Any]], eps: list[list[int]], plan: Plan,
          e: int) -> Plan | None:
    """Pure: `plan` with episode `e` moved half its room later, or None when
    that is under MIN_MOVE_S. Its room ends where the next kept episode
    starts, or TAIL_S before the workload ends: a move never lengthens the
    run nor swaps two faults' order."""
    start, end = span(events, eps[e], plan, e)
    starts = [span(events, eps[k], plan, k)[0] for k in plan.kept if k != e]
    bound = min([s for s in starts if s >= start] + [plan.time_limit - TAIL_S])
    step = round((bound - end) / 2, 3)
    if step < MIN_MOVE_S:
        return None
    return plan.with_delay(e, round(plan.delay(e) + step, 3))


@dataclass
class Candidate:
    plan: Plan
    reproduced: int
    count: int
    runs: list[str]

    @property
    def kept(self) -> list[int]:
        return list(self.plan.kept)

    @property
    def time_limit(self) -> float:
        return self.plan.time_limit


class ScheduleShrink:
    """Delta debugging over a run's fault episodes, then shortening, moving
    and the time cut, each candidate replayed."""

    def __init__(self, run_dir: Path, results: Path, replays: int, parallel: int,
                 budget: int, say: Say, live_triggers: bool = False) -> None:
        from harness.run.replay import old_verdict, replay_config
        self.run_dir, self.results, self.say = run_dir, results, say
        self.replays, self.parallel, self.budget = replays, parallel, budget
        self.live_triggers = live_triggers
        self.config = replay_config(load_json(run_dir / RUN_JSON), live_triggers)
        self.events = list(self.config.schedule or [])
        self.eps = episodes(self.events)
        self.original = old_verdict(run_dir)
        self.needed = 1.0          # until the full schedule's rate is measured
        self.state_path = run_dir / STATE_JSON
        self.state = self._load()
        self.spent = 0
        self.best: Candidate | None = None    # the last candidate that held

    def _load(self) -> dict[str, Any]:
        try:
            state = load_json(self.state_path)
            if state.get("episodes") == self.eps and state.get("replays") == self.replays \
                    and state.get("live_triggers", False) == self.live_triggers:
                return state
        except Exception:  # no state yet, or another shape: start afresh
            pass
        return {"episodes": self.eps, "replays": self.replays,
                "live_triggers": self.live_triggers, "tried": {}}

    def _save(self) -> None:
        self.state["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n")
        tmp.replace(self.state_path)

    def judge(self, plan: Plan) -> Candidate:
        sig = signature(plan)
        tried = self.state["tried"].get(sig)
        if tried is None:
            if self.spent + self.replays > self.budget:
                raise BudgetSpent(sig)
            schedule = plan_schedule(self.events, self.eps, plan)
            config = self.config.to_json() | {"schedule": schedule,
                                              "time_limit": plan.time_limit}
            self.say(f"candidate {sig}: {len(plan.kept)} of {len(self.eps)} fault episodes, "
                     f"{plan.time_limit:g} s, {self.replays} replays ({self.spent} of "
                     f"{self.budget} replays spent)")
            results = run_replays(self.run_dir, config, self.results, self.replays,
                                  self.parallel, self.say,
                                  {"schedule_shrink_of": str(self.run_dir.resolve())})
            self.spent += self.replays
            tried = {"kept": list(plan.kept), "time_limit": plan.time_limit,
                     "scale": [list(x) for x in plan.scale],
                     "shift": [list(x) for x in plan.shift],
                     "reproduced": sum(shows_failure(self.original, r["verdicts"])
                                       for r in results),
                     "count": len(results),
                     "runs": [r["run_dir"] for r in results
                              if shows_failure(self.original, r["verdicts"])]}
            self.state["tried"][sig] = tried
            self._save()
        return Candidate(plan, tried["reproduced"], tried["count"], tried["runs"])

    def holds(self, c: Candidate) -> bool:
        return c.count > 0 and c.reproduced / c.count >= self.needed

    def keeps(self, plan: Plan) -> bool:
        c = self.judge(plan)
        held = self.holds(c)
        if held:
            self.best = c
        self.say(f"candidate {signature(plan)}: failed {c.reproduced} of "
                 f"{c.count} -> {'kept' if held else 'dropped'}")
        return held

    def run(self) -> dict[str, Any]:
        """Shrink; the result (also stored in the state file under "result")."""
        limit = float(self.config.time_limit)
        everything = tuple(range(len(self.eps)))
        try:
            whole = self.judge(Plan(everything, limit))
            if not whole.reproduced:
                return self._finish(None, "the full schedule did not show the failure in "
                                          f"{whole.count} replays: nothing to shrink from "
                                          "(more --replays?)")
            self.needed = whole.reproduced / whole.count
            self.best = whole
            # Delta debugging never tries nothing: a failure that needs no fault says so.
            if self.keeps(Plan((), limit)):
                none = cut_time([], limit)
                if none < limit:
                    self.keeps(Plan((), none))
                return self._finish(self.best, None)
            kept, _ = ddmin(list(everything), lambda k: self.keeps(Plan(tuple(k), limit)),
                            10**9, self.say, "fault episodes")
            plan = Plan(tuple(kept), limit)
            if self.best.plan != plan:
                self.best = self.judge(plan)
            plan = self._each(plan, shorter, "shortened")
            short = cut_time(plan_schedule(self.events, self.eps, plan), limit)
            if short < limit and self.keeps(replace(plan, time_limit=short)):
                plan = replace(plan, time_limit=short)
            self._each(plan, later, "moved later")
            return self._finish(self.best, None)
        except BudgetSpent:
            return self._finish(self.best, f"the budget of {self.budget} replays ran out; "
                                           "run the same command again to go on from "
                                           f"{self.state_path}", stopped=True)

    def _each(self, plan: Plan, step: Callable[..., Plan | None], what: str) -> Plan:
        """Apply `step` to each kept episode as long as the candidate holds."""
        for e in plan.kept:
            while (candidate := step(self.events, self.eps, plan, e)) is not None:
                self.say(f"episode {e} {what}?")
                if not self.keeps(candidate):
                    break
                plan = candidate
        return plan

    def _finish(self, best: Candidate | None, why: str | None,
                stopped: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = {"episodes_before": len(self.eps), "stopped": stopped,
                                  "why": why, "needed_rate": self.needed,
                                  "faults_before": sum(e["action"] == "inject"
                                                       for e in self.events)}
        if best is not None:
            schedule = plan_schedule(self.events, self.eps, best.plan)
            result |= {"episodes_after": len(best.kept), "kept": best.kept,
                       "faults_after": sum(e["action"] == "inject" for e in schedule),
                       "shortened": {str(e): f for e, f in best.plan.scale},
                       "moved_later_s": {str(e): d for e, d in best.plan.shift},
                       "schedule": schedule,
                       "time_limit": best.time_limit, "reproduced": best.reproduced,
                       "count": best.count, "run_dir": best.runs[0] if best.runs else None}
        self.state["result"] = result
        self._save()
        return result


def result_lines(result: dict[str, Any], replays: int) -> list[str]:
    """Pure: what the command prints: the smallest schedule that held (so far,
    when the budget stopped it), its rate, its run and the replay line."""
    if result.get("run_dir") is None:
        return [f"schedule shrink: {result['why']}"]
    changes = [f"episode {e} at {f:g} of its length" for e, f in
               result.get("shortened", {}).items()]
    changes += [f"episode {e} {d:g} s later" for e, d in result.get("moved_later_s", {}).items()]
    lines = [f"schedule shrink{' so far' if result.get('stopped') else ''}: "
             f"{result['faults_before']} -> {result['faults_after']} fault injections "
             f"({result['episodes_before']} -> {result['episodes_after']} episodes"
             + (f"; {', '.join(changes)}" if changes else "")
             + f"), workload {result['time_limit']:g} s; it showed the failure "
             f"{result['reproduced']} of {result['count']} times (the full schedule's rate: "
             f"{result['needed_rate']:.0%})",
             f"minimal schedule's run: {result['run_dir']}",
             f"replay it: faultline replay {result['run_dir']} --count {replays} --yes"]
    if result.get("stopped"):
        lines.append(f"not finished: {result['why']}")
    return lines
