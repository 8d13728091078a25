"""Replaying a saved run: same config, same seed, and the nemesis schedule as it
was executed, times included, into a new run dir that links back to the old.

run.json keeps three things that together pin a schedule down: "schedule"
(what the runner executed, times in history ns), "planned_schedule" (the
events it was given, with their per-event seeds and params) and
"schedule_offset_ns" (where schedule time 0 falls in history time). A replay
executes each executed event at its executed time, with the nodes and cut
it resolved to at the time (e.g. which node "the leader" was), so a replay
hits the same nodes even when another node wins an election this time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.rundir import load_json
from harness.run.config import RunConfig, hunting
from nemesis.base import REPLAYS_LIVE_FAULTS, played_after_stop, split_spec
from nemesis.fault import FOUND_NO_LEADER, WAITED_FOR_LEADER, NoLeader

# Keys of an inject's recorded value that pin down what it did to which nodes;
# every fault accepts them back as params (nemesis.process.resolve_nodes,
# partition's "cut", the network quality faults' "links" and "quality"; a
# leader-aimed fault's wait for its leader, slept again before it acts).
RESOLVED_KEYS = ("nodes", "shape", "cut", "links", "quality", WAITED_FOR_LEADER)
WORDS = {True: "VALID", False: "INVALID", "unknown": "UNKNOWN", None: "UNCHECKED"}


class ReplayError(ValueError):
    """One sentence: why this run dir cannot be replayed."""


def executed_action(e: dict[str, Any]) -> str:
    """An executed entry injected if its f is its fault's own name (else it healed)."""
    fault = e.get("fault") or e["f"]
    return "inject" if e["f"] == split_spec(fault)[0] else "heal"


def replay_events(run: dict[str, Any], live_triggers: bool = False) -> list[dict[str, Any]]:
    """Pure: the schedule (RunConfig.schedule form) that re-executes a run's
    executed list; with `live_triggers`, without what trigger faults fired
    (they fire again, at their own moment, in the replay); without what a
    trigger that `replays_live` fired, always (its fired steps name it)."""
    executed = run.get("schedule")
    if not isinstance(executed, list):
        raise ReplayError("its run.json has no executed schedule (the run stopped before "
                          "the nemesis started)")
    planned = run.get("planned_schedule") or (run.get("config") or {}).get("schedule")
    legacy = planned is None    # saved before plans were kept: the recorded values are all
    planned = planned or []
    offset_ns = int(run.get("schedule_offset_ns") or 0)
    events, j = [], 0
    for e in executed:
        if e.get("fired") and (live_triggers or (e.get("params") or {}).get("trigger")
                               in REPLAYS_LIVE_FAULTS):
            continue
        action, fault = executed_action(e), e.get("fault") or e["f"]
        plan = planned[j] if j < len(planned) else None
        if e.get("fired"):
            # Never the plan's: a fired inject of the trigger's own spec (a
            # step of its firing) would take the next arming's place and params.
            params, seed = dict(e.get("params") or {}), 0
        elif plan is not None and (plan["fault"], plan["action"]) == (fault, action):
            j += 1
            params, seed = dict(plan.get("params") or {}), int(plan.get("seed", 0))
        elif action == "heal" and not legacy:
            continue  # a heal-everything at the end: the replay's runner does it again
        else:
            params, seed = {}, 0
        value = e.get("value")
        if action == "inject" and e.get("error") is None and isinstance(value, dict):
            params.update({k: value[k] for k in RESOLVED_KEYS if k in value})
        elif action == "inject" and found_no_leader(e.get("error")):
            # Its original aimed at no one: the replay must not aim at whoever leads now.
            params[FOUND_NO_LEADER] = True
        events.append({"time": round(max(0.0, (e["time"] - offset_ns) / 1e9), 3),
                       "action": action, "fault": fault, "params": params, "seed": seed})
    return events


def found_no_leader(error: Any) -> bool:
    """Pure: an executed entry's error says a leader-aimed fault found no leader
    (nemesis.base records an error as `Type: message`)."""
    return isinstance(error, str) and error.startswith(f"{NoLeader.__name__}:")


def replay_config(run: dict[str, Any], live_triggers: bool = False) -> RunConfig:
    config = run.get("config")
    if not isinstance(config, dict):
        raise ReplayError("its run.json has no config")
    replayed = RunConfig.from_json(config)
    if live_triggers and hunting(replayed):
        # The hunt's moves are fired faults too: dropped, the hunt would choose anew.
        raise ReplayError("--live-triggers re-arms the trigger faults of a fixed schedule; "
                          "this run's faults were chosen by the hunt, which would choose anew")
    replayed.schedule = replay_events(run, live_triggers)
    replayed.live_triggers = live_triggers
    return replayed


def _shown(value: Any) -> str:
    # JSON with ASCII escapes: a name from someone else's run dir cannot move
    # the cursor or recolour the terminal the question is asked on.
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


def replay_summary(run_dir: Path, config: RunConfig, source: str) -> list[str]:
    """Pure: what a replay of `run_dir` will load and run, for the user to confirm."""
    lines = [f"faultline replay will load from {_shown(str(run_dir))}:",
             f"  system      {_shown(config.db)} ({source})",
             f"  workload    {_shown(config.workload)}, nemesis {_shown(config.nemesis)}, "
             f"{_shown(config.nodes)} nodes, concurrency {_shown(config.concurrency)}, "
             f"{_shown(config.time_limit)} s, seed {_shown(config.seed)}"]
    for label, value in (("node opts", config.node_options), ("bugs", config.bugs),
                         ("client opts", config.workload_options)):
        if value:
            lines.append(f"  {label:<11} {_shown(value)}")
    lines.append(f"  schedule    {len(config.schedule or [])} fault events as executed")
    return lines


def old_verdict(run_dir: Path) -> dict[str, Any] | None:
    try:
        return load_json(run_dir / "verdicts.json")
    except Exception:  # unchecked or unreadable: the comparison says so
        return None


def lateness(run: dict[str, Any]) -> float | None:
    """Pure: how late, at most, a run played its scheduled events (s, from
    each executed entry's `late_s`); None if it recorded none. A replay's
    faults are this much after the original's at most: each aims at its
    recorded absolute time and is late only while the fault before it still
    runs or the machine is slow to wake the nemesis (nemesis.base.NemesisRunner)."""
    late = [e["late_s"] for e in run.get("schedule") or []
            if isinstance(e, dict) and isinstance(e.get("late_s"), (int, float))]
    return max(late) if late else None


def after_stop(run: dict[str, Any]) -> int:
    """Pure: how many scheduled faults a replay played after its time limit
    (nemesis.base.played_after_stop)."""
    return len(played_after_stop(run.get("schedule") or []))


@dataclass
class ReplayOutcome:
    old_dir: Path
    new_dir: Path
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    exit_code: int
    late_s: float | None = None    # the replay's own lateness (`lateness`)
    after_stop: int = 0            # faults it played after its time limit (`after_stop`)

    @property
    def reproduced(self) -> bool:
        return self.old is not None and self.new is not None and \
            self.old.get("valid") == self.new.get("valid")


def replay(run_dir: Path, results: Path, stream: Any = None,
           live_triggers: bool = False) -> ReplayOutcome:
    from harness.run.lifecycle import run_test
    try:
        run = load_json(run_dir / "run.json")
    except Exception as e:
        raise ReplayError(f"{run_dir} has no readable run.json ({e})") from None
    config = replay_config(run, live_triggers)
    outcome = run_test(config, results, stream,
                       {"replay_of": {"run_id": run.get("run_id", run_dir.name),
                                      "run_dir": str(run_dir.resolve())}})
    late, past = None, 0
    try:
        doc = load_json(outcome.run_dir / "run.json")
        late, past = lateness(doc), after_stop(doc)
    except Exception:  # a replay that stopped early: nothing to say about its timing
        pass
    return ReplayOutcome(run_dir, outcome.run_dir, old_verdict(run_dir), outcome.verdicts,
                         outcome.exit_code, late, past)


def comparison_lines(outcome: ReplayOutcome) -> list[str]:
    """Both verdicts, checker by checker, and whether the old one reproduced."""
    old = (outcome.old or {}).get("checkers") or {}
    new = (outcome.new or {}).get("checkers") or {}
    lines = [f"  {'checker':<16} {'original':<10} replay"]
    for name in list(old) + [n for n in new if n not in old]:
        lines.append(f"  {name:<16} {WORDS.get((old.get(name) or {}).get('valid'), '-'):<10} "
                     f"{WORDS.get((new.get(name) or {}).get('valid'), '-')}")
    old_word = WORDS.get((outcome.old or {}).get("valid"), "UNKNOWN")
    new_word = WORDS.get((outcome.new or {}).get("valid"), "UNKNOWN")
    if outcome.old is None:
        result = "the original was never checked (faultline check it to compare)"
    else:
        result = "reproduced" if outcome.reproduced else "NOT reproduced"
    lines.append(f"original: {old_word}   replay: {new_word}   -> {result}")
    if outcome.late_s:
        lines.append(f"the replay played its faults up to {outcome.late_s:.3f} s after their "
                     "recorded times (a fault still running, or a loaded machine)")
    if outcome.after_stop:
        lines.append(f"it ran past its time limit: {outcome.after_stop} of them played after "
                     "it, before the final heal (none dropped)")
    lines.append(f"original run: {outcome.old_dir}")
    lines.append(f"replay run:   {outcome.new_dir}")
    return lines
