"""Overlapping fault families (`--nemesis-overlap`): pure schedule tests.

Each family that degrades a node or its links gets a timeline of its own;
every other fault shares one; within a timeline, one fault at a time."""

from __future__ import annotations

import pytest

from harness.run.config import ConfigError, RunConfig, fresh_schedule, validate
from nemesis.schedule import SHARED_LANE, lanes, overlap_lane, schedule

NODES = ["n1", "n2", "n3"]
MIXED = ["partition:isolate-leader", "kill", "packet:loss=20", "clock:skew=-10,leader",
         "cpu:limit=0.1"]


def in_force(events, t: float) -> set[str]:
    """The faults injected and not yet healed just after time t."""
    on: set[str] = set()
    for e in events:
        if e.time > t:
            break
        (on.add if e.action == "inject" else on.discard)(e.fault)
    return on


def test_degrading_families_get_a_lane_each_and_the_rest_share_one():
    assert overlap_lane("partition:bridge") == overlap_lane("kill") == SHARED_LANE
    assert overlap_lane("packet:delay=5ms,jitter=1ms") == "packet"
    assert overlap_lane("clock:skew=-10,leader") == "clock"
    assert overlap_lane("no-such-fault") == SHARED_LANE
    assert lanes(MIXED) == {SHARED_LANE: ["partition:isolate-leader", "kill"],
                            "packet": ["packet:loss=20"], "clock": ["clock:skew=-10,leader"],
                            "cpu": ["cpu:limit=0.1"]}


@pytest.mark.parametrize("seed", range(20))
def test_each_lane_is_one_fault_at_a_time_healed_in_time(seed: int):
    events = schedule(seed, MIXED, 2.0, 30.0, NODES, overlap=True)
    assert [e.time for e in events] == sorted(e.time for e in events)
    assert all(0 < e.time <= 30.0 for e in events)
    for lane, specs in lanes(MIXED).items():
        mine = [e for e in events if overlap_lane(e.fault) == lane]
        assert [e.action for e in mine] == ["inject", "heal"] * (len(mine) // 2), lane
        for inject, heal in zip(mine[::2], mine[1::2], strict=True):
            assert inject.fault == heal.fault and inject.fault in specs
            assert heal.time - inject.time >= 1.0 - 1e-9 or heal.time == 30.0


def test_families_are_in_force_at_once_only_with_overlap():
    def most_at_once(overlap: bool) -> int:
        events = schedule(7, MIXED, 2.0, 60.0, NODES, overlap=overlap)
        return max(len(in_force(events, e.time)) for e in events)
    assert most_at_once(False) == 1
    assert most_at_once(True) >= 3


def test_same_seed_same_overlapping_timeline_and_one_lane_is_the_plain_one():
    a = schedule(3, MIXED, 2.0, 30.0, NODES, overlap=True)
    assert a == schedule(3, MIXED, 2.0, 30.0, NODES, overlap=True)
    assert a != schedule(4, MIXED, 2.0, 30.0, NODES, overlap=True)
    classic = ["partition", "kill", "pause"]
    assert (schedule(3, classic, 2.0, 30.0, NODES, overlap=True)
            == schedule(3, classic, 2.0, 30.0, NODES))


def test_a_heal_and_an_inject_at_one_instant_heal_first():
    events = schedule(11, MIXED, 0.5, 60.0, NODES, overlap=True)
    for a, b in zip(events, events[1:], strict=False):
        if a.time == b.time:
            assert not (a.action == "inject" and b.action == "heal")


def test_the_run_option_reaches_the_schedule():
    config = validate(RunConfig(db="raft", nemesis=["partition:isolate-leader",
                                                    "clock:skew=-10,leader"],
                                nemesis_interval=3.0, nemesis_min_duration=4.0, time_limit=30.0,
                                seed=1, nemesis_overlap=True))
    events = fresh_schedule(config)
    assert any(len(in_force(events, e.time)) == 2 for e in events)
    config.nemesis_overlap = False
    plain = fresh_schedule(config)
    assert all(len(in_force(plain, e.time)) <= 1 for e in plain)


def test_overlap_with_the_hunt_is_refused_in_one_sentence():
    with pytest.raises(ConfigError, match="--nemesis-overlap shapes the seeded schedule"):
        validate(RunConfig(db="raft", nemesis=["hunt", "partition"], nemesis_overlap=True))
