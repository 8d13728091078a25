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
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from nemesis.base import TRIGGER_FAULTS, split_spec

# Faults that inject and heal in one op (nothing to undo later).
INSTANT = frozenset({"lose-unsynced"})
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
    """Pure: what a fault will do, decided from the rng and the node names."""
    name, variant = split_spec(spec)
    if name in ("kill", "pause"):
        from nemesis.process import plan
        return plan(rng, nodes, variant)
    if name == "partition":
        from nemesis.partition import plan_shape, shapes_for
        shapes = shapes_for(len(nodes))
        if variant is not None and variant not in shapes:
            plan_shape(rng, nodes, variant)  # an unknown name: the shape's own error
            raise ValueError(f"partition shape {variant!r} cannot act on {len(nodes)} "
                             f"node(s); there, use one of "
                             f"{', '.join(shapes) or '(none: add nodes)'}")
        if not shapes:
            raise ValueError(f"no partition can cut a link on {len(nodes)} node(s)")
        return plan_shape(rng, nodes, variant or rng.choice(shapes))
    if name == "lose-unsynced" and variant is not None:
        # A power cut of a majority (or all) at once is what loses data a
        # quorum acknowledged but had not flushed (the Redpanda RFC's case).
        from nemesis.process import choose_targets
        if variant == "all":
            return {"targets": "all", "nodes": sorted(nodes)}
        return {"targets": variant, "nodes": choose_targets(rng, nodes, variant)}
    if name in TRIGGER_FAULTS:
        # Armed by the schedule; whom it hits is decided by the event it fires on.
        if name == "power-cut-after-commit":
            from nemesis.triggers import parse_power_cut
            parse_power_cut(variant)
        elif variant is not None:
            raise ValueError(f"{name} takes no variant")
        return {}
    if name == "membership" and variant is not None:
        from nemesis.membership import VARIANTS
        if variant not in VARIANTS:
            raise ValueError(f"unknown membership variant {variant!r}; "
                             f"expected one of {', '.join(VARIANTS)}")
    # Disk faults and plug-ins: one node, chosen here so the timeline shows it.
    return {"nodes": [rng.choice(sorted(nodes))]}


def schedule(seed: int, faults: Sequence[str], mean_interval: float, time_limit: float,
             nodes: Sequence[str]) -> list[Event]:
    """The timeline of fault and heal events for one run; same inputs, same timeline.

    Every injected fault is healed no later than `time_limit`.
    """
    if mean_interval <= 0:
        raise ValueError("mean interval must be positive")
    if not faults or not nodes or time_limit <= 0:
        return []
    rng = random.Random(seed)
    specs = list(faults)
    bag: list[str] = []
    min_duration = min(MIN_FAULT_S, mean_interval / 2)
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
