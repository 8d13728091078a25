"""The membership fault (KIP-853 voter changes as a nemesis) against a fake
cluster whose DB keeps a voter set and refuses like a leader does."""

from __future__ import annotations

import random
import threading
from contextlib import nullcontext

import pytest

from checkers.history import NOOP, Op
from nemesis import membership
from nemesis.base import CompositeNemesis, NemesisRunner, make_fault
from nemesis.fault import WAITED_FOR_LEADER, FaultContext
from nemesis.schedule import Event, plan_params


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
    planned = membership.plan(random.Random(1), cluster.names, "remove-leader")
    assert "nodes" not in planned       # a live plan names no node: the leader is resolved
    assert fault.inject(cluster, random.Random(1), planned)["nodes"] == ["n3"]
    again = fault.inject(cluster, random.Random(1), {})
    assert again["error"] == "voter_not_found" and again[NOOP]


class ElectingCluster(FakeCluster):
    """No leader for its first `none` asks (None: never)."""

    def __init__(self, names: list[str], none: int | None, leader: str = "n1") -> None:
        super().__init__(names, leader)
        self.none, self.asked = none, 0

    def leader(self) -> str | None:  # type: ignore[override]
        self.asked += 1
        return None if self.none is None or self.asked <= self.none else self._leader


@pytest.mark.parametrize("variant, removed", [("remove-leader", ["n3"]),
                                              ("auto-join", ["n1", "n2"])])
def test_leader_variants_wait_for_the_election_and_without_one_stay_noops(
        variant, removed, monkeypatch):
    """Drawn just after a heal restarted the last leader, they used to find
    none and do nothing; the wait is recorded, and a replay removes what the
    original removed (none when it found no leader)."""
    cluster = ElectingCluster(["n1", "n2", "n3"], none=2, leader="n3")
    value = make_fault(f"membership:{variant}").inject(cluster, random.Random(1), {})
    assert value["nodes"] == removed and value[WAITED_FOR_LEADER] > 0 and cluster.asked == 3
    monkeypatch.setattr("nemesis.fault.ELECTION_WAIT_S", 0.3)
    nobody = ElectingCluster(["n1", "n2", "n3"], none=None)
    value = make_fault(f"membership:{variant}").inject(nobody, random.Random(1), {})
    assert value["nodes"] == [] and value[NOOP].startswith("no leader")
    assert nobody.db.calls == [] and nobody.asked > 1
    assert membership.recorded(value) == []   # its replay removes none


def test_a_live_plan_draws_as_many_numbers_for_every_variant():
    """A seed's later draws do not depend on which variant was planned."""
    after = set()
    for variant in membership.VARIANTS:
        rng = random.Random(7)
        membership.plan(rng, ["n1", "n2", "n3"], variant)
        after.add(rng.random())
    assert len(after) == 1


@pytest.mark.parametrize("variant, recorded_nodes, removed", [
    ("remove-leader", ["n1"], {"n1"}),
    ("remove-two", ["n1", "n3"], {"n1", "n3"}),
    ("auto-join", ["n2", "n3"], {"n2", "n3"}),
])
def test_a_replay_removes_the_recorded_nodes_not_the_leader_of_now(
        variant, recorded_nodes, removed):
    """The run recorded its change's nodes; in the replay another node (n2)
    leads. Fail twin of the live run above, which resolves the leader: the
    replay of tests/e2e/test_hunt_e2e.py removed the replay's leader and then
    had its `remove-two` refused."""
    from harness.run.replay import replay_events
    cluster = FakeCluster(["n1", "n2", "n3"], leader="n2")
    spec = f"membership:{variant}"
    run = {"schedule_offset_ns": 0,
           "planned_schedule": [{"time": 1.0, "action": "inject", "fault": spec,
                                 "params": membership.plan(random.Random(1), cluster.names,
                                                           variant), "seed": 5}],
           "schedule": [{"time": 1_000_000_000, "f": "membership", "fault": spec,
                         "value": {"change": "remove", "nodes": recorded_nodes,
                                   "ok": True}}]}
    (event,) = replay_events(run)
    value = make_fault(spec).inject(cluster, random.Random(event["seed"]), event["params"])
    assert set(value["nodes"]) == removed and NOOP not in value
    assert cluster.db.voters == {"n1", "n2", "n3"} - removed


def test_a_replay_of_a_change_that_removed_none_removes_none():
    cluster = FakeCluster(["n1", "n2", "n3"], leader="n2")
    value = make_fault("membership:remove-leader").inject(cluster, random.Random(1),
                                                          {"nodes": []})
    assert value["nodes"] == [] and value[NOOP] and cluster.db.calls == []


def test_a_change_in_flight_is_retried_not_dropped():
    cluster = FakeCluster(["n1", "n2", "n3"], busy=2)
    fault = make_fault("membership")
    assert fault.inject(cluster, random.Random(1), {"nodes": ["n3"]})["ok"]
    assert cluster.db.calls == [("remove", "n3")] * 3


def test_auto_join_variant_leaves_the_leader_alone_and_heal_restores_the_rest():
    cluster = FakeCluster(["n1", "n2", "n3"], leader="n2")
    fault = make_fault("membership:auto-join")
    value = fault.inject(cluster, random.Random(1), {})
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


class LosingDB(FakeDB):
    """A leader that appends the removal, then loses its leadership before
    answering (the raft node's `leader_lost`, not definite): the change may
    still commit. `commits`: whether it did."""

    def __init__(self, voters: list[str], commits: bool, error: str = "leader_lost") -> None:
        super().__init__(voters)
        self.commits = commits
        self.error = error

    def change_voters(self, cluster, change: str, node: str) -> dict:
        if change == "remove" and node in self.voters and not any(
                c == ("remove", node) for c in self.calls):
            self.calls.append((change, node))
            if self.commits:
                self.voters.discard(node)
            return {"ok": False, "error": self.error, "definite": False}
        return super().change_voters(cluster, change, node)


def losing_cluster(commits: bool, error: str = "leader_lost") -> FakeCluster:
    cluster = FakeCluster(["n1", "n2", "n3"], leader="n1")
    cluster.db = LosingDB(cluster.names, commits, error)
    return cluster


@pytest.mark.parametrize("commits", [True, False])
def test_a_removal_answered_in_doubt_is_recorded_as_a_removal_and_healed(commits):
    """Fail twin: before, `leader_lost` was recorded as a refusal (a no-op)
    though the change committed, and the heal added nothing back."""
    cluster = losing_cluster(commits)
    fault = make_fault("membership:remove-leader")
    value = fault.inject(cluster, random.Random(1), {})
    assert value["nodes"] == ["n1"] and NOOP not in value
    assert value[membership.IN_DOUBT] == {"n1": "leader_lost"}
    # Whether or not it committed, the heal leaves n1 a voter and names it.
    assert fault.heal(cluster)["nodes"] == ["n1"]
    assert cluster.db.voters == {"n1", "n2", "n3"}


def test_a_timeout_then_a_refusal_of_the_retry_stays_in_doubt():
    """The first attempt timed out (and committed); the retry finds the voter
    gone: `voter_not_found` says nothing of the first attempt."""
    cluster = losing_cluster(True, error="timeout")
    value = make_fault("membership").inject(cluster, random.Random(1), {"nodes": ["n2"]})
    assert value["nodes"] == ["n2"] and NOOP not in value
    assert value[membership.IN_DOUBT] == {"n2": "voter_not_found"}
    assert value["earlier"] == "timeout"


def test_a_definite_refusal_is_still_a_noop():
    """Pass twin: a refusal that says the change was not made changes nothing,
    and the heal has nothing to add back."""
    cluster = FakeCluster(["n1", "n2", "n3"])
    cluster.db.voters.discard("n2")
    fault = make_fault("membership")
    value = fault.inject(cluster, random.Random(1), {"nodes": ["n2"]})
    assert value[NOOP] and membership.IN_DOUBT not in value
    assert fault.heal(cluster)[NOOP]


def test_remove_two_records_a_removal_in_doubt_among_the_removed():
    cluster = losing_cluster(True)
    value = make_fault("membership:remove-two").inject(cluster, random.Random(3), {})
    assert NOOP not in value and value[membership.IN_DOUBT]
    assert set(value[membership.IN_DOUBT]) <= set(value["nodes"])


# --- members a heal failed to add back ----------------------------------------


class RefusingDB(LeavingDB):
    """etcd refusing to add a member back (a learner not caught up) the first
    `refusals` times it is asked to add `node`."""

    def __init__(self, voters: list[str], node: str, refusals: int) -> None:
        super().__init__(voters)
        self.node, self.refusals = node, refusals

    def change_voters(self, cluster, change: str, node: str) -> dict:
        if change == "add" and node == self.node and self.refusals:
            self.refusals -= 1
            self.calls.append((change, node))
            return {"ok": False, "error": "member_not_ready", "definite": True}
        return super().change_voters(cluster, change, node)


def refusing_cluster(refusals: int) -> ProcessCluster:
    cluster = ProcessCluster(["n1", "n2", "n3", "n4", "n5"])
    cluster.db = RefusingDB(cluster.names, "n4", refusals)
    return cluster


def test_a_later_heal_of_another_membership_fault_retries_a_member_still_out():
    """The hunt's seed 5 on etcd: remove-two took n4 and n5 out, its heal
    added n5 back and failed for n4; a later plain remove's heal must try n4
    again (before: it tried only the node it removed itself, and n4 stayed
    out to the end)."""
    cluster = refusing_cluster(refusals=1)
    context = FaultContext(cluster.db)
    two, one = make_fault("membership:remove-two", context), make_fault("membership", context)
    out, back = two.inject(cluster, random.Random(0), {})["nodes"]
    cluster.db.node = out    # the one etcd refuses to take back at first
    first = two.heal(cluster)
    assert first == {"nodes": [back], "failed": {out: "member_not_ready"}}
    assert out not in cluster.db.voters and out in cluster.down
    assert two.in_force() and one.in_force()
    other = next(n for n in cluster.names if n not in (out, "n1"))
    one.inject(cluster, random.Random(0), {"nodes": [other]})
    second = one.heal(cluster)
    assert second == {"nodes": [other, out], "failed": {}, "retried": [out]}
    assert cluster.db.voters == set(cluster.names) and out not in cluster.down
    assert not one.in_force() and not two.in_force()


def test_a_member_always_refused_is_tried_a_bounded_number_of_heals():
    cluster = refusing_cluster(refusals=100)
    fault = make_fault("membership", FaultContext(cluster.db))
    fault.inject(cluster, random.Random(0), {"nodes": ["n4"]})
    values = [fault.heal(cluster) for _ in range(membership.MAX_HEAL_TRIES + 2)]
    adds = [c for c in cluster.db.calls if c == ("add", "n4")]
    assert len(adds) == membership.MAX_HEAL_TRIES
    assert values[membership.MAX_HEAL_TRIES - 1]["given_up"] == ["n4"]
    assert all(v[NOOP] for v in values[membership.MAX_HEAL_TRIES:])
    assert not fault.in_force()


def test_the_runs_final_heal_retries_a_member_a_scheduled_heal_left_out():
    """Recorded as every heal is, so a replay of the schedule does the same."""
    cluster = refusing_cluster(refusals=1)
    nemesis = CompositeNemesis({"membership": make_fault("membership",
                                                         FaultContext(cluster.db))})
    nemesis.setup(cluster)
    ops: list[Op] = []

    def record(process, type, f, value=None, key=None, node=None, error=None):
        op = Op(len(ops), len(ops), process, type, f, value, key, node, error)
        ops.append(op)
        return op

    runner = NemesisRunner(nemesis, [Event(0, "inject", "membership", {"nodes": ["n4"]}),
                                     Event(0, "heal", "membership")], record)
    runner.run(threading.Event())
    heals = [e for e in runner.executed if e["f"] == membership.HEAL_F]
    assert [h["value"].get("failed") for h in heals] == [{"n4": "member_not_ready"}, {}]
    assert heals[1]["value"]["retried"] == ["n4"] and heals[1]["value"]["nodes"] == ["n4"]
    assert "n4" in cluster.db.voters


def test_without_a_failed_heal_the_final_heal_has_nothing_to_retry():
    cluster = refusing_cluster(refusals=0)
    nemesis = CompositeNemesis({"membership": make_fault("membership",
                                                         FaultContext(cluster.db))})
    nemesis.setup(cluster)
    runner = NemesisRunner(nemesis, [Event(0, "inject", "membership", {"nodes": ["n4"]}),
                                     Event(0, "heal", "membership")],
                           lambda *a, **k: Op(0, 0, *a[:3], a[3] if len(a) > 3 else None))
    runner.run(threading.Event())
    assert [e["f"] for e in runner.executed] == ["membership", membership.HEAL_F]
