"""What a replay's fault times can be held to (the e2e replay tests).

A replay aims each fault at its recorded absolute time and records how late
it ran (`late_s`, nemesis.base.NemesisRunner): a fault still running when the
next fell due, or a loaded machine slow to wake the nemesis thread (0.62 s
on a CI trial at load 10+), so no fixed tolerance holds; the replay's own
record does. One late past its time limit still plays every fault it
recorded, in order, before its final heal (5 s late on a 10 s run at load
~20, CI trial 21): each keeps its `late_s`, so the same bound holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# A replay's times are the original's rounded to the ms (harness.run.replay).
ROUNDING_S = 0.001


def assert_replayed_in_time(old: Sequence[Sequence[Any]], new: Sequence[Sequence[Any]],
                            time_limit: float) -> None:
    """`old`, `new`: (seconds since the schedule's start, late_s, ...) per
    executed entry, paired in order. Each replayed fault comes at or after its
    recorded time, and after it by no more than its recorded lateness; one
    with no scheduled time (the final heal) comes after the time limit in
    both runs."""
    for (t_old, *_), (t_new, late, *_) in zip(old, new, strict=True):
        if late is None:
            # Not aimed at a recorded time: each run heals at its own end (a CI
            # trial's replay healed 1.5 ms sooner after its limit than the original).
            assert min(t_old, t_new) >= time_limit - ROUNDING_S, (t_old, t_new)
        else:
            assert t_old - ROUNDING_S <= t_new <= t_old + late + ROUNDING_S, (t_old, t_new, late)
