"""Fault schedules: a pure function from a seed to a timeline.

One fault at a time, Jepsen style: a quiet gap, a fault, a gap while it
lasts, its heal. Gaps are exponential with the given mean. Fault kinds are
drawn from a shuffled bag (each once per round), so a run that names
"partition, kill, pause" and has room for three faults gets each of them; a
fault is not started in the last moments of a run, where it would be healed
before it could act. What each fault
does (which nodes, which shape) is planned here when the node names are
enough; what depends on the live cluster (the current leader) is left to
inject time, with a per-event seed so that choice replays too.

With `overlap` (Jepsen's combined packages: a partition while a node's clock
is off or its links lose packets) each family that degrades a node or its
links (checkers.faults DEGRADED: packet, bandwidth, disk, clock, cpu, memory,
stress) gets a timeline of its own, and every other fault shares one; the
timelines are drawn from sub-seeds and merged, so two families are often in
force at once, each healed by its own op. Within one timeline it is still one
fault at a time.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from checkers.faults import DEGRADED, FAULT_OPS, HUNT
from nemesis.base import FAULTS, split_spec
from nemesis.base import INSTANT_FAULTS as INSTANT
from nemesis.fault import plan_in

# The shortest a fault lasts (or its mean gap / 2, if shorter): a 50 ms kill
# at the very end of a run shows nothing.
MIN_FAULT_S = 1.0


@dataclass(frozen=True)
class Event:
    time: float                    # seconds since the run started
    action: str                    # "inject" or "heal"
    fault: str                     # the fault spec, e.g. "partition:one-way"
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0                  # seeds the rng the fault gets at inject time

    def to_map(self) -> dict[str, Any]:
        m = asdict(self)
        m["params"] = dict(self.params)
        return m


def plan_params(spec: str, rng: random.Random, nodes: Sequence[str]) -> dict[str, Any]:
    """Pure: what a fault will do, decided from the rng and the node names by
    its kind's planner in the registry (a fault it does not know: one node)."""
    return plan_in(FAULTS, spec, rng, nodes)


# The lane every fault that is not a degradation shares.
SHARED_LANE = ""


def overlap_lane(spec: str) -> str:
    """Pure: the timeline a fault takes in an overlapping schedule: its own
    family's if it degrades (DEGRADED), else the shared one."""
    name = split_spec(spec)[0]
    op = FAULT_OPS.get(name)
    return name if op is not None and op.effect == DEGRADED else SHARED_LANE


def lanes(faults: Sequence[str]) -> dict[str, list[str]]:
    """Pure: the faults by overlap lane, in the order named."""
    out: dict[str, list[str]] = {}
    for spec in faults:
        out.setdefault(overlap_lane(spec), []).append(spec)
    return out


def schedule(seed: int, faults: Sequence[str], mean_interval: float, time_limit: float,
             nodes: Sequence[str], min_duration: float = 0.0, overlap: bool = False
             ) -> list[Event]:
    """The timeline of fault and heal events for one run; same inputs, same timeline.

    Every injected fault is healed no later than `time_limit`. A fault lasts
    at least `min_duration` s (0: min(MIN_FAULT_S, mean_interval / 2)), so a
    bug that needs a fault held for a known time gets it from every fault,
    not from the ones the draw happens to make long; the draws stay the same.
    `overlap`: one timeline per lane (`lanes`), merged in time order; with a
    single lane the same timeline as without.
    """
    if mean_interval <= 0:
        raise ValueError("mean interval must be positive")
    if not faults or not nodes or time_limit <= 0:
        return []
    by_lane = lanes(faults)
    if not overlap or len(by_lane) == 1:
        return _timeline(random.Random(seed), faults, mean_interval, time_limit, nodes,
                         min_duration)
    rng = random.Random(seed)
    merged = [e for _, specs in sorted(by_lane.items())
              for e in _timeline(random.Random(rng.getrandbits(64)), specs, mean_interval,
                                 time_limit, nodes, min_duration)]
    # Stable: a lane's own order holds; at one instant heals go first.
    return sorted(merged, key=lambda e: (e.time, e.action != "heal"))


def _timeline(rng: random.Random, faults: Sequence[str], mean_interval: float,
              time_limit: float, nodes: Sequence[str], min_duration: float) -> list[Event]:
    """One fault at a time from `faults`, drawn from `rng`."""
    specs = list(faults)
    bag: list[str] = []
    min_duration = min_duration or min(MIN_FAULT_S, mean_interval / 2)
    events: list[Event] = []
    t = 0.0
    while True:
        t += rng.expovariate(1.0 / mean_interval)
        if t >= time_limit - min_duration:
            break
        if not bag:
            bag = list(specs)
            rng.shuffle(bag)
        spec = bag.pop()
        # A sub-rng per event: a plan drawing more numbers does not shift the times.
        plan_rng = random.Random(rng.getrandbits(64))
        params = plan_params(spec, plan_rng, nodes)
        events.append(Event(round(t, 3), "inject", spec, params, rng.getrandbits(63)))
        if split_spec(spec)[0] in INSTANT:
            continue
        t = min(t + max(min_duration, rng.expovariate(1.0 / mean_interval)), time_limit)
        events.append(Event(round(t, 3), "heal", spec))
        if t >= time_limit:
            break
    return events


# The hunt starts once the workload has begun, and ends with the run.
HUNT_START_S = 0.5


def hunt_schedule(seed: int, repertoire: Sequence[str], mean_interval: float,
                  time_limit: float, min_duration: float = 0.0,
                  known: Sequence[Sequence[Any]] = (), ordinal: int | None = None,
                  failover_s: float | None = None) -> list[Event]:
    """The hunting schedule's timeline: the hunt armed at the start and
    disarmed at the time limit; what it does in between it decides as it
    goes (nemesis.hunter) and records. `ordinal`: the run's own seed number
    (`--seed`), from which the hunt's spread over consecutive seeds steps
    (nemesis.hunt.rotation; `seed` is a hash of it). `failover_s`: the
    system's declared failover bound (its timers; None: it declares none),
    from which the hunt sets how long it holds a fault that takes the leader
    or a quorum (nemesis.hunt.election_hold).
    Pure, as `schedule`."""
    if time_limit <= HUNT_START_S or not repertoire:
        return []
    rng = random.Random(seed)
    params = {"repertoire": list(repertoire), "interval": mean_interval,
              "min_duration": min_duration, "until": round(time_limit - HUNT_START_S, 3)}
    if known:
        params["known"] = [list(k) for k in known]
    if ordinal is not None:
        params["ordinal"] = ordinal
    if failover_s is not None:
        params["failover_s"] = failover_s
    return [Event(HUNT_START_S, "inject", HUNT.name, params, rng.getrandbits(63)),
            Event(round(time_limit, 3), "heal", HUNT.name)]
