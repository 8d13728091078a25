"""The membership fault (KIP-853 voter changes as a nemesis) against a fake
cluster whose DB keeps a voter set and refuses like a leader does."""

from __future__ import annotations

import random
from contextlib import nullcontext

import pytest

from checkers.history import NOOP
from nemesis import membership
from nemesis.base import make_fault
from nemesis.schedule import plan_params


class FakeDB:
    kind = "fake"

    def __init__(self, voters: list[str], busy: int = 0) -> None:
        self.voters = set(voters)
        self.busy = busy  # answers of "change in flight" before the next change
        self.calls: list[tuple[str, str]] = []

    def change_voters(self, cluster, change: str, node: str) -> dict:
        self.calls.append((change, node))
        if self.busy:
            self.busy -= 1
            return {"ok": False, "error": "voter_change_in_flight"}
        if change == "remove":
            if node not in self.voters:
                return {"ok": False, "error": "voter_not_found"}
            self.voters.discard(node)
        else:
            if node in self.voters:
                return {"ok": False, "error": "duplicate_voter"}
            self.voters.add(node)
        return {"ok": True, "error": None, "voters": sorted(self.voters)}


class FakeCluster:
    def __init__(self, names: list[str], leader: str = "n1", busy: int = 0) -> None:
        self.names = names
        self.nodes = names
        self.db = FakeDB(names, busy)
        self._leader = leader
        self.paused: set[str] = set()
        self.down: set[str] = set()
        self.actions: list[tuple[str, list[str]]] = []

    def kill(self, names):
        killed = [n for n in names if n not in self.down]
        self.down |= set(names)
        self.paused -= set(names)
        self.actions.append(("kill", list(names)))
        return killed

    def start(self, names):
        started = [n for n in names if n in self.down]
        self.down -= set(names)
        self.actions.append(("start", list(names)))
        return started

    def leader(self) -> str:
        return self._leader

    def in_hub(self):
        return nullcontext()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(membership, "RETRY_EVERY_S", 0.001)


def test_remove_then_heal_adds_the_voter_back():
    cluster = FakeCluster(["n1", "n2", "n3"])
    fault = make_fault("membership")
    value = fault.inject(cluster, random.Random(1), {"nodes": ["n2"]})
    assert value["nodes"] == ["n2"] and value["ok"] and NOOP not in value
    assert cluster.db.voters == {"n1", "n3"}
    healed = fault.heal(cluster)
    assert healed == {"nodes": ["n2"], "failed": {}}
    assert cluster.db.voters == {"n1", "n2", "n3"}
    assert fault.heal(cluster)[NOOP]  # nothing left to restore


def test_remove_leader_targets_the_leader_and_refusals_are_noops():
    cluster = FakeCluster(["n1", "n2", "n3"], leader="n3")
    fault = make_fault("membership:remove-leader")
    assert fault.inject(cluster, random.Random(1), {"nodes": ["n1"]})["nodes"] == ["n3"]
    again = fault.inject(cluster, random.Random(1), {})
    assert again["error"] == "voter_not_found" and again[NOOP]


def test_a_change_in_flight_is_retried_not_dropped():
    cluster = FakeCluster(["n1", "n2", "n3"], busy=2)
    fault = make_fault("membership")
    assert fault.inject(cluster, random.Random(1), {"nodes": ["n3"]})["ok"]
    assert cluster.db.calls == [("remove", "n3")] * 3


def test_auto_join_variant_leaves_the_leader_alone_and_heal_restores_the_rest():
    cluster = FakeCluster(["n1", "n2", "n3"], leader="n2")
    fault = make_fault("membership:auto-join")
    value = fault.inject(cluster, random.Random(1), {"nodes": ["n1"]})
    assert value["nodes"] == ["n1", "n3"] and cluster.db.voters == {"n2"}
    # Restarted after every removal: a new process auto-joins (KAFKA-19850).
    assert value["restarted"] == ["n1", "n3"]
    assert cluster.actions == [("kill", ["n1", "n3"]), ("start", ["n1", "n3"])]
    cluster.db.voters.add("n1")  # n1 rejoined by itself
    assert fault.heal(cluster)["nodes"] == ["n1", "n3"]
    assert cluster.db.voters == {"n1", "n2", "n3"}


def test_auto_join_variant_leaves_nodes_other_faults_stopped_or_paused_as_they_are():
    cluster = FakeCluster(["n1", "n2", "n3", "n4"], leader="n1")
    cluster.down.add("n2")     # killed by another fault
    cluster.paused.add("n3")   # paused by another fault
    value = make_fault("membership:auto-join").inject(cluster, random.Random(1), {})
    assert value["nodes"] == ["n2", "n3", "n4"] and cluster.db.voters == {"n1"}
    assert value["restarted"] == ["n4"]
    assert cluster.down == {"n2"} and cluster.paused == {"n3"}


def test_unknown_variant_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="membership variant"):
        make_fault("membership:shuffle")
    with pytest.raises(ValueError, match="membership variant"):
        plan_params("membership:shuffle", random.Random(0), ["n1", "n2", "n3"])
    assert plan_params("membership:remove", random.Random(0), ["n1", "n2"])["nodes"]


def test_remove_two_sends_both_and_heal_restores_both():
    cluster = FakeCluster(["n1", "n2", "n3"], busy=1)
    fault = make_fault("membership:remove-two")
    value = fault.inject(cluster, random.Random(3), {})
    assert len(value["nodes"]) == 2 and value["refused"] == {}
    assert len(cluster.db.voters) == 1
    assert fault.heal(cluster)["nodes"] == value["nodes"]
    assert cluster.db.voters == {"n1", "n2", "n3"}


class LeavingDB(FakeDB):
    """A system whose removed members shut down (etcd)."""

    members_leave_when_removed = True


class ProcessCluster(FakeCluster):
    def __init__(self, names: list[str]) -> None:
        super().__init__(names)
        self.db = LeavingDB(names)


def test_a_member_that_leaves_when_removed_is_stopped_then_started_after_the_add():
    cluster = ProcessCluster(["n1", "n2", "n3"])
    fault = make_fault("membership")
    fault.inject(cluster, random.Random(1), {"nodes": ["n3"]})
    assert cluster.actions == [("kill", ["n3"])]
    fault.heal(cluster)
    # Stopped again first (a kill's heal may have started it), then added, then started.
    assert cluster.actions[1:] == [("kill", ["n3"]), ("start", ["n3"])]
    assert cluster.db.calls == [("remove", "n3"), ("add", "n3")]


def test_a_member_that_stays_as_an_observer_is_never_stopped():
    cluster = FakeCluster(["n1", "n2", "n3"])
    fault = make_fault("membership")
    fault.inject(cluster, random.Random(1), {"nodes": ["n3"]})
    fault.heal(cluster)
    assert cluster.db.calls == [("remove", "n3"), ("add", "n3")]   # no kill/start attribute used
