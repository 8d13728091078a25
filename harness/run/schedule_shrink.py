"""Shrinking a failing run's fault schedule on real processes.

The executed schedule (as `faultline replay` re-executes it) is cut into
episodes: an inject with every event up to its heal (a trigger's own
sub-faults, e.g. the lose-unsynced a power cut makes, stay inside it). Delta
debugging drops episodes; then the workload's time is cut to just after the
last kept event. Every candidate is replayed K times, each a real run in its
own worker, and kept when it shows the original's failure (invalid with
every anomaly kind the original had) at least as often as the full schedule
did in its own K replays, the first thing measured (real runs are not
deterministic, so the bar is measured under the same conditions).

Each candidate's result is stored as soon as it is known, keyed by the
episodes and time it kept, in RUN/schedule-shrink.json: delta debugging is
deterministic given those results, so a run that was interrupted or ran out
of budget resumes where it stopped by running the same command again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.rundir import RUN_JSON, load_json
from checkers.shrink import ddmin
from harness.run.reproduction import run_replays, shows_failure

STATE_JSON = "schedule-shrink.json"
# Seconds of workload kept after the last kept fault event when the time is
# cut: a fault's damage shows in the ops after it.
TAIL_S = 3.0

Say = Callable[[str], None]


class BudgetSpent(Exception):
    """The replay budget ran out; the state file holds what was learnt."""


def episodes(events: list[dict[str, Any]]) -> list[list[int]]:
    """Pure: the schedule's events grouped: an inject opens an episode that
    takes every event up to the heal of its fault (an inject never healed:
    to the end); a heal with no open inject is an episode of its own."""
    out: list[list[int]] = []
    i = 0
    while i < len(events):
        e = events[i]
        group = [i]
        if e["action"] == "inject":
            j = i + 1
            while j < len(events):
                group.append(j)
                if events[j]["action"] == "heal" and events[j]["fault"] == e["fault"]:
                    break
                j += 1
            i = j + 1
        else:
            i += 1
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


def signature(kept: list[int], time_limit: float) -> str:
    return f"{','.join(map(str, sorted(kept)))}@{time_limit:g}"


@dataclass
class Candidate:
    kept: list[int]
    time_limit: float
    reproduced: int
    count: int
    runs: list[str]


class ScheduleShrink:
    """Delta debugging over a run's fault episodes, each candidate replayed."""

    def __init__(self, run_dir: Path, results: Path, replays: int, parallel: int,
                 budget: int, say: Say) -> None:
        from harness.run.replay import old_verdict, replay_config
        self.run_dir, self.results, self.say = run_dir, results, say
        self.replays, self.parallel, self.budget = replays, parallel, budget
        self.config = replay_config(load_json(run_dir / RUN_JSON))
        self.events = list(self.config.schedule or [])
        self.eps = episodes(self.events)
        self.original = old_verdict(run_dir)
        self.needed = 1.0          # until the full schedule's rate is measured
        self.state_path = run_dir / STATE_JSON
        self.state = self._load()
        self.spent = 0

    def _load(self) -> dict[str, Any]:
        try:
            state = load_json(self.state_path)
            if state.get("episodes") == self.eps and state.get("replays") == self.replays:
                return state
        except Exception:  # no state yet, or another shape: start afresh
            pass
        return {"episodes": self.eps, "replays": self.replays, "tried": {}}

    def _save(self) -> None:
        self.state["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n")
        tmp.replace(self.state_path)

    def judge(self, kept: list[int], time_limit: float) -> Candidate:
        sig = signature(kept, time_limit)
        tried = self.state["tried"].get(sig)
        if tried is None:
            if self.spent + self.replays > self.budget:
                raise BudgetSpent(sig)
            schedule = candidate_schedule(self.events, self.eps, kept)
            config = self.config.to_json() | {"schedule": schedule, "time_limit": time_limit}
            self.say(f"candidate {sig}: {len(kept)} of {len(self.eps)} fault episodes, "
                     f"{time_limit:g} s, {self.replays} replays ({self.spent} of "
                     f"{self.budget} replays spent)")
            results = run_replays(self.run_dir, config, self.results, self.replays,
                                  self.parallel, self.say,
                                  {"schedule_shrink_of": str(self.run_dir.resolve())})
            self.spent += self.replays
            tried = {"kept": kept, "time_limit": time_limit,
                     "reproduced": sum(shows_failure(self.original, r["verdicts"])
                                       for r in results),
                     "count": len(results),
                     "runs": [r["run_dir"] for r in results
                              if shows_failure(self.original, r["verdicts"])]}
            self.state["tried"][sig] = tried
            self._save()
        return Candidate(tried["kept"], tried["time_limit"], tried["reproduced"],
                         tried["count"], tried["runs"])

    def holds(self, c: Candidate) -> bool:
        return c.count > 0 and c.reproduced / c.count >= self.needed

    def keeps(self, kept: list[int], time_limit: float) -> bool:
        c = self.judge(kept, time_limit)
        self.say(f"candidate {signature(kept, time_limit)}: failed {c.reproduced} of "
                 f"{c.count} -> {'kept' if self.holds(c) else 'dropped'}")
        return self.holds(c)

    def run(self) -> dict[str, Any]:
        """Shrink; the result (also stored in the state file under "result")."""
        limit = float(self.config.time_limit)
        everything = list(range(len(self.eps)))
        try:
            whole = self.judge(everything, limit)
            if not whole.reproduced:
                return self._finish(None, "the full schedule did not show the failure in "
                                          f"{whole.count} replays: nothing to shrink from "
                                          "(more --replays?)")
            self.needed = whole.reproduced / whole.count
            kept, _ = ddmin(everything, lambda k: self.keeps(k, limit), 10**9, self.say,
                            "fault episodes")
            best = self.judge(kept, limit)
            short = cut_time(candidate_schedule(self.events, self.eps, kept), limit)
            if short < limit and self.keeps(kept, short):
                best = self.judge(kept, short)
            return self._finish(best, None)
        except BudgetSpent:
            return self._finish(None, f"the budget of {self.budget} replays ran out; run "
                                      "the same command again to go on from "
                                      f"{self.state_path}", stopped=True)

    def _finish(self, best: Candidate | None, why: str | None,
                stopped: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = {"episodes_before": len(self.eps), "stopped": stopped,
                                  "why": why, "needed_rate": self.needed}
        if best is not None:
            schedule = candidate_schedule(self.events, self.eps, best.kept)
            result |= {"episodes_after": len(best.kept), "kept": best.kept,
                       "faults_after": sum(e["action"] == "inject" for e in schedule),
                       "faults_before": sum(e["action"] == "inject" for e in self.events),
                       "time_limit": best.time_limit, "reproduced": best.reproduced,
                       "count": best.count, "run_dir": best.runs[0] if best.runs else None}
        self.state["result"] = result
        self._save()
        return result


def result_lines(result: dict[str, Any], replays: int) -> list[str]:
    if result.get("run_dir") is None:
        return [f"schedule shrink: {result['why']}"]
    return [f"schedule shrink: {result['faults_before']} -> {result['faults_after']} fault "
            f"injections ({result['episodes_before']} -> {result['episodes_after']} "
            f"episodes), workload {result['time_limit']:g} s; it showed the failure "
            f"{result['reproduced']} of {result['count']} times (the full schedule's rate: "
            f"{result['needed_rate']:.0%})",
            f"minimal schedule's run: {result['run_dir']}",
            f"replay it: faultline replay {result['run_dir']} --count {replays} --yes"]
