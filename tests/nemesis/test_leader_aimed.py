"""Faults aimed at the leader wait for one (nemesis.fault.aim_at_leader): drawn
just after a heal restarted the last leader, they find the cluster electing
and used to do nothing. A leader that appears within ELECTION_WAIT_S is hit,
with the wait recorded; none by then fails as before. A replay hits the
recorded nodes after the recorded wait, and never asks the adapter."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import pytest

from checkers.history import NOOP
from harness.run.replay import found_no_leader, replay_events
from nemesis import partition
from nemesis.fault import FOUND_NO_LEADER, WAITED_FOR_LEADER, NoLeader, planned_or_leader
from nemesis.partition import PartitionFault, isolate
from nemesis.process import KillFault, PauseFault

NAMES = ["n1", "n2", "n3"]


class Electing:
    """A cluster whose adapter names no leader for its first `none` asks
    (`None`: never), then `elected`; it records what faults did to it."""

    db: Any = None

    def __init__(self, none: int | None, elected: str = "n2") -> None:
        self.none, self.elected, self.asked = none, elected, 0
        self.killed: list[str] = []
        self.paused: set[str] = set()
        self.names = list(NAMES)
        self.hub_netns = "hub-test"

    def leader(self) -> str | None:
        self.asked += 1
        return None if self.none is None or self.asked <= self.none else self.elected

    def kill(self, names: Sequence[str], on_signalled: Any = None) -> list[str]:
        self.killed += names
        return list(names)

    def pause(self, names: Sequence[str]) -> list[str]:
        self.paused |= set(names)
        return list(names)

    def is_running(self, name: str) -> bool:
        return name not in self.killed

    def in_hub(self) -> Any:
        return nullcontext()


class NeverAsked(Electing):
    """A replay's cluster: a fault that asks it who leads aims again."""

    def leader(self) -> str | None:
        raise AssertionError("a replay asked the adapter for the leader")


class FakePartitioner:
    def __init__(self) -> None:
        self.cut: list[tuple[str, str]] = []

    def apply(self, cut: list[tuple[str, str]]) -> None:
        self.cut = list(cut)


@pytest.fixture
def short_wait(monkeypatch: pytest.MonkeyPatch) -> float:
    """A bound of 0.3 s: `never` costs no 6 s."""
    monkeypatch.setattr("nemesis.fault.ELECTION_WAIT_S", 0.3)
    return 0.3


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """What nemesis.fault sleeps (a replay's recorded wait), not slept."""
    sleeps: list[float] = []
    monkeypatch.setattr("nemesis.fault.time",
                        SimpleNamespace(monotonic=time.monotonic, sleep=sleeps.append))
    return sleeps


def partition_fault(monkeypatch: pytest.MonkeyPatch) -> tuple[PartitionFault, FakePartitioner]:
    fault = PartitionFault("isolate-leader")
    fake = FakePartitioner()
    monkeypatch.setattr(fault, "partitioner", lambda cluster: fake)
    return fault, fake


@pytest.mark.parametrize("fault", [KillFault("leader"), PauseFault("leader")])
def test_a_process_fault_on_the_leader_waits_for_the_election_and_says_how_long(fault):
    cluster = Electing(none=2)
    value = fault.inject(cluster, random.Random(1), fault.plan(random.Random(1), NAMES))
    assert value["nodes"] == ["n2"] and NOOP not in value
    assert (cluster.killed or sorted(cluster.paused)) == ["n2"]
    assert value[WAITED_FOR_LEADER] > 0 and cluster.asked == 3


def test_a_process_fault_with_no_leader_after_the_wait_does_nothing(short_wait):
    cluster = Electing(none=None)
    with pytest.raises(RuntimeError, match="no leader to target") as raised:
        KillFault("leader").inject(cluster, random.Random(1), {"targets": "leader"})
    assert isinstance(raised.value, NoLeader) and cluster.killed == []
    assert cluster.asked > 1    # it asked again before it gave up


def test_isolate_leader_waits_for_the_election_then_cuts_that_leader_off(monkeypatch):
    fault, fake = partition_fault(monkeypatch)
    value = fault.inject(Electing(none=2, elected="n3"), random.Random(1), {})
    assert value["nodes"] == ["n3"] and value[WAITED_FOR_LEADER] > 0
    assert sorted(fake.cut) == sorted(isolate("n3", NAMES))


def test_isolate_leader_with_no_leader_after_the_wait_cuts_nothing(monkeypatch, short_wait):
    fault, fake = partition_fault(monkeypatch)
    with pytest.raises(NoLeader, match="no leader to isolate"):
        fault.inject(Electing(none=None), random.Random(1), {})
    assert fake.cut == []


def test_a_planned_or_leader_fault_waits_and_a_planned_one_does_not(short_wait):
    cluster = Electing(none=1)
    aimed = planned_or_leader(cluster, {"targets": "leader"})
    assert aimed.nodes == ["n2"] and aimed.recorded() == {WAITED_FOR_LEADER: aimed.waited_s}
    assert planned_or_leader(NeverAsked(None), {"nodes": ["n1"]}).recorded() == {}
    assert planned_or_leader(NeverAsked(None), {"nodes": ["n1"], WAITED_FOR_LEADER: 0.0}
                             ).recorded() == {WAITED_FOR_LEADER: 0.0}
    with pytest.raises(NoLeader):
        planned_or_leader(Electing(none=None), {"targets": "leader"})


def test_a_replay_hits_the_recorded_nodes_after_the_recorded_wait_without_asking(
        monkeypatch, slept):
    cluster = NeverAsked(None)
    value = KillFault("leader").inject(cluster, random.Random(1),
                                       {"targets": "leader", "nodes": ["n3"],
                                        WAITED_FOR_LEADER: 1.2})
    assert value["nodes"] == ["n3"] and cluster.killed == ["n3"] and slept == [1.2]
    assert value[WAITED_FOR_LEADER] == 1.2     # a replay of this replay waits as long
    fault, fake = partition_fault(monkeypatch)
    cut = [list(p) for p in isolate("n1", NAMES)]
    fault.inject(cluster, random.Random(1), {"shape": "isolate-leader", "nodes": ["n1"],
                                             "cut": cut, WAITED_FOR_LEADER: 0.4})
    assert slept == [1.2, 0.4] and sorted(map(list, fake.cut)) == sorted(cut)


def test_a_replay_of_a_fault_that_found_no_leader_finds_none_at_once(slept):
    cluster = NeverAsked(None)
    with pytest.raises(NoLeader):
        KillFault("leader").inject(cluster, random.Random(1),
                                   {"targets": "leader", FOUND_NO_LEADER: True})
    with pytest.raises(NoLeader):
        partition.PartitionFault("isolate-leader").inject(cluster, random.Random(1),
                                                          {FOUND_NO_LEADER: True})
    assert cluster.killed == [] and slept == []


def test_replay_events_carry_the_wait_and_the_missing_leader_back():
    offset = 0
    run = {"config": {"time_limit": 10.0},
           "planned_schedule": [
               {"time": 1.0, "action": "inject", "fault": "kill:leader",
                "params": {"targets": "leader"}, "seed": 3},
               {"time": 2.0, "action": "inject", "fault": "kill:leader",
                "params": {"targets": "leader"}, "seed": 4}],
           "schedule_offset_ns": offset,
           "schedule": [
               {"time": 1_000_000_000, "f": "kill", "fault": "kill:leader", "error": None,
                "value": {"nodes": ["n2"], "targets": "leader", "killed": ["n2"],
                          WAITED_FOR_LEADER: 0.7}},
               {"time": 2_000_000_000, "f": "kill", "fault": "kill:leader",
                "value": {"targets": "leader"},
                "error": "NoLeader: no leader to target (waited 6 s)"}]}
    hit, missed = replay_events(run)
    assert hit["params"] == {"targets": "leader", "nodes": ["n2"], WAITED_FOR_LEADER: 0.7}
    assert missed["params"] == {"targets": "leader", FOUND_NO_LEADER: True}
    assert found_no_leader("NoLeader: no leader to isolate (waited 6 s)")
    assert not found_no_leader("RuntimeError: no leader to target")   # saved before NoLeader
    assert not found_no_leader(None)
