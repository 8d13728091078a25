"""A real run's executed fault schedule played on the deterministic simulation
(issue 33): the same faults at the same moments on `nodes.raft.sim.Sim`, the
run's bug switches on, writes proposed throughout, and the simulation's own
safety checks as the verdict. Where it reproduces, the failure becomes a
regression test that needs no namespace, no process and no clock.

Pure up to `play` (which runs the simulation); the schedule is read from
run.json's `schedule` (what the nemesis executed), its times mapped to ticks
by the run's `tick_ms`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from nodes.raft.sim import Sim

DEFAULT_TICK_MS = 50
# Writes proposed at the leader every this many ticks (the workload's stand-in).
WRITE_EVERY = 2
# Ticks the simulation runs past the last fault, for the heal to show.
SETTLE_TICKS = 200


@dataclass(frozen=True)
class SimStep:
    tick: int
    action: str                      # CUT, SIGKILL, ... below
    nodes: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    # Aimed at the leader of the moment: played on the simulation's leader
    # then, whichever node that is (the run's leader named the real one).
    leader: bool = False


# The simulation's steps (its own words, not the nemesis's).
CUT, UNCUT, HEAL_ALL, SIGKILL, RESTART, SIGSTOP, SIGCONT, POWER_CUT, FORGET_VOTES = (
    "cut", "uncut", "heal-all", "sigkill", "restart", "sigstop", "sigcont", "power-cut",
    "forget-votes")


@dataclass(frozen=True)
class Scenario:
    nodes: tuple[str, ...]
    bugs: tuple[str, ...]
    ticks: int
    steps: tuple[SimStep, ...]
    # Executed ops with no counterpart in the simulation, said, never dropped silently.
    skipped: tuple[str, ...] = ()
    source: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @staticmethod
    def from_json(text: str) -> Scenario:
        d = json.loads(text)
        steps = tuple(SimStep(s["tick"], s["action"], tuple(s["nodes"]),
                              tuple((a, b) for a, b in s["pairs"]), bool(s.get("leader")))
                      for s in d["steps"])
        return Scenario(tuple(d["nodes"]), tuple(d["bugs"]), d["ticks"], steps,
                        tuple(d["skipped"]), d.get("source", ""))


def _nodes_of(value: Any, *keys: str) -> tuple[str, ...]:
    if not isinstance(value, dict):
        return ()
    for k in keys:
        v = value.get(k)
        if isinstance(v, list) and v:
            return tuple(str(n) for n in v if n is not None)
    return ()


def _pairs(value: Any, key: str) -> tuple[tuple[str, str], ...]:
    v = value.get(key) if isinstance(value, dict) else None
    return tuple((str(a), str(b)) for a, b in v) if isinstance(v, list) else ()


LEADER_SHAPES = ("isolate-leader", "leader-outgoing")


def aims_at_leader(entry: dict[str, Any]) -> bool:
    """Whether the fault was aimed at the leader of its moment (its target,
    its shape, or the hunt's step says so)."""
    raw_value, raw_note = entry.get("value"), entry.get("note")
    value: dict[str, Any] = raw_value if isinstance(raw_value, dict) else {}
    note: dict[str, Any] = raw_note if isinstance(raw_note, dict) else {}
    return (value.get("targets") == "leader" or value.get("shape") in LEADER_SHAPES
            or str(entry.get("fault") or "").endswith(":leader")
            or ("leader" in str(note.get("step") or "")
                and FROM_SCHEDULE.get(str(entry.get("f"))) in (SIGKILL, SIGSTOP, CUT, POWER_CUT)))


# The executed schedule's op names (run.json `schedule`, the nemesis's
# vocabulary: nodes/ cannot import its registry, so a test holds these to it)
# -> the simulation step and where the op's value names its nodes. None: the
# op needs no step (the hunt's bookkeeping); absent: the simulation has none.
FROM_SCHEDULE: dict[str, str | None] = {
    "partition": CUT, "heal": UNCUT, "kill": SIGKILL, "start": RESTART, "pause": SIGSTOP,
    "resume": SIGCONT, "lose-unsynced": POWER_CUT, "lose-state": FORGET_VOTES,
    "truncate": SIGKILL, "hunt": None, "disarm": None,
}
NODES_KEYS = {SIGKILL: ("killed", "nodes"), RESTART: ("started", "nodes"),
              SIGSTOP: ("paused", "nodes"), SIGCONT: ("resumed", "nodes"),
              POWER_CUT: ("nodes", "lost")}
# Ops whose simulation leaves part of them out (said in the scenario's `skipped`).
PARTLY = {"truncate": "the node stops; its files are not cut"}


def steps_of(entry: dict[str, Any], tick: int) -> list[SimStep] | None:
    """The simulation steps of one executed schedule entry; None when the
    simulation has nothing for it (a membership change, a re-format)."""
    f, value = str(entry.get("f")), entry.get("value")
    if entry.get("noop") or entry.get("error"):
        return []
    if f not in FROM_SCHEDULE:
        return None
    action = FROM_SCHEDULE[f]
    leader = aims_at_leader(entry)
    if action is None:
        return []
    if action == CUT:
        return [SimStep(tick, CUT, _nodes_of(value, "nodes"), _pairs(value, "cut"), leader)]
    if action == UNCUT:
        healed = _pairs(value, "healed")
        return [SimStep(tick, UNCUT, pairs=healed)] if healed else [SimStep(tick, HEAL_ALL)]
    if action == FORGET_VOTES and isinstance(value, dict):
        # The leader goes down as a follower forgets its votes and restarts.
        return [SimStep(tick, SIGKILL, _nodes_of({"n": [value.get("leader")]}, "n"), leader=True),
                SimStep(tick, FORGET_VOTES, _nodes_of({"n": [value.get("lost_state")]}, "n"))]
    return [SimStep(tick, action, _nodes_of(value, *NODES_KEYS.get(action, ("nodes",))),
                    leader=leader)]


def scenario_from_run(run: dict[str, Any]) -> Scenario:
    """The run's executed schedule as a simulation scenario."""
    config = run.get("config") or {}
    nodes_doc = run.get("nodes")
    if isinstance(nodes_doc, dict) and nodes_doc:
        names = tuple(sorted(nodes_doc))
    else:
        names = tuple(f"n{i + 1}" for i in range(int(config.get("nodes") or 3)))
    options = config.get("node_options") or {}
    tick_ns = int(options.get("tick_ms") or DEFAULT_TICK_MS) * 1_000_000
    offset = int(run.get("schedule_offset_ns") or 0)
    steps: list[SimStep] = []
    skipped: list[str] = []
    for entry in run.get("schedule") or []:
        if not isinstance(entry, dict):
            continue
        tick = max(1, round((int(entry.get("time") or 0) - offset) / tick_ns))
        made = steps_of(entry, tick)
        f = str(entry.get("f"))
        if made is None or (made and f in PARTLY):
            skipped.append(f"{f} at tick {tick}" + (f" ({PARTLY[f]})" if made else ""))
        if made is not None:
            steps += [s for s in made if s.nodes or s.pairs or s.action == HEAL_ALL]
    limit = float(config.get("time_limit") or 0) * 1e9 / tick_ns
    last = max((s.tick for s in steps), default=0)
    ticks = int(max(limit, last)) + SETTLE_TICKS
    return Scenario(names, tuple(sorted(config.get("bugs") or ())), ticks, tuple(steps),
                    tuple(skipped), str(run.get("run_id") or ""))


@dataclass
class Outcome:
    seed: int
    violations: list[str] = field(default_factory=list)
    committed: int = 0
    leaders: int = 0

    @property
    def reproduced(self) -> bool:
        return bool(self.violations)


def _follow_leader(sim: Sim, step: SimStep, names: dict[str, str]) -> None:
    """For a step aimed at the leader: rename so that the run's node it named
    is the simulation's leader now (a swap of two names, kept for the steps
    that follow, so the old leader's later restart is played on the same node)."""
    target = step.nodes[0] if len(step.nodes) == 1 else None
    now = sim.leader()
    if target is None or now is None or target not in names or names[target] == now:
        return
    other = next(k for k, v in names.items() if v == now)
    names[target], names[other] = now, names[target]


def _renamed(step: SimStep, names: dict[str, str]) -> SimStep:
    return SimStep(step.tick, step.action, tuple(names.get(n, n) for n in step.nodes),
                   tuple((names.get(a, a), names.get(b, b)) for a, b in step.pairs),
                   step.leader)


def _power_cut(sim: Sim, node: str) -> None:
    sim.crash(node)
    sim.restart(node)


NODE_STEP = {SIGKILL: Sim.kill, RESTART: Sim.restart, SIGSTOP: Sim.pause, SIGCONT: Sim.resume,
             POWER_CUT: _power_cut, FORGET_VOTES: Sim.lose_quorum_state}


def _apply(sim: Sim, step: SimStep) -> None:
    if step.action in NODE_STEP:
        for node in step.nodes:
            if node in sim.nodes:
                NODE_STEP[step.action](sim, node)
    for a, b in step.pairs:
        if a in sim.nodes and b in sim.nodes:
            (sim.cut_one_way if step.action == CUT else sim.uncut)(a, b)
    if step.action == HEAL_ALL:
        sim.heal()


def play(scenario: Scenario, seed: int, bugs: tuple[str, ...] | None = None) -> Outcome:
    """Run the scenario on a fresh simulation; `bugs` overrides the run's switches
    (() for the correct build)."""
    switches = frozenset(scenario.bugs if bugs is None else bugs)
    sim = Sim(scenario.nodes, seed=seed, config={"bugs": switches})
    pending = sorted(scenario.steps, key=lambda s: s.tick)
    names = {n: n for n in scenario.nodes}
    i = 0
    n = 0
    for _ in range(scenario.ticks):
        while i < len(pending) and pending[i].tick <= sim.now:
            if pending[i].leader:
                _follow_leader(sim, pending[i], names)
            _apply(sim, _renamed(pending[i], names))
            i += 1
        if sim.now % WRITE_EVERY == 0:
            n += 1
            sim.propose(f"w{n}".encode())
        sim.step()
    sim.check_logs_agree()
    return Outcome(seed, list(dict.fromkeys(sim.violations)), len(sim.committed),
                   len(sim.leaders_by_epoch))


def reproduce(scenario: Scenario, seeds: range, bugs: tuple[str, ...] | None = None
              ) -> list[Outcome]:
    return [play(scenario, s, bugs) for s in seeds]


def regression_test(scenario: Scenario, seeds: list[int]) -> str:
    """A pytest module that replays the scenario on the seeds that reproduced
    it: with the run's switches the violation must appear (the scenario still
    exposes it), and the correct build must show none."""
    name = "".join(c if c.isalnum() else "_" for c in scenario.source)[-40:] or "scenario"
    return f'''"""Regression test from run {scenario.source}: its executed fault schedule
on the deterministic raft simulation (made by `python -m nodes.raft simulate`)."""

from nodes.raft.schedule_sim import Scenario, play

SCENARIO = Scenario.from_json({scenario.to_json()!r})
SEEDS = {seeds!r}


def test_{name}_the_correct_build_survives():
    for seed in SEEDS:
        assert play(SCENARIO, seed, bugs=()).violations == [], seed
''' + (f'''

def test_{name}_the_switches_still_show_it():
    assert any(play(SCENARIO, seed).violations for seed in SEEDS)
''' if scenario.bugs else "")
