"""A fault aimed at the leader that waited for one took nothing while it
waited: the cluster's state from its invoke to the moment it acted is its
own, and an outage then is not excused by it. One that found no leader at
all changed nothing (the runner records it as a no-op beside its error).
Twins: the same resignation with the fault acting before it and after it;
the same failed fault with and without its no-op mark."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

from checkers import availability, impairment
from checkers.faults import WAITED_FOR_LEADER
from checkers.history import NOOP, noop_reason, read_history
from harness.run.recorder import Recorder
from nemesis.base import CompositeNemesis, NemesisRunner
from nemesis.fault import NoLeader
from nemesis.schedule import Event
from tests.checkers.test_availability_health import H, S, n1_resigns_and_n2_leads, run, types

NODES = ["n1", "n2", "n3", "n4", "n5"]


def leader_killed_at_20(waited_s: float | None) -> H:
    """kill:leader invoked at 20 s; it took n1 at once, or `waited_s` later."""
    h = H()
    h.reads(0.5, 40)
    value: dict[str, Any] = {"nodes": ["n1"]}
    if waited_s is not None:
        value[WAITED_FOR_LEADER] = waited_s
    h.nemesis(20, "kill", value, took_s=(waited_s or 0) + 0.1)
    h.nemesis(30, "start", {"nodes": ["n1"]})
    return h


def test_a_resignation_after_the_leader_aimed_fault_acted_is_excused():
    v = availability.check(leader_killed_at_20(None).ops, n1_resigns_and_n2_leads(20.5), run())
    assert types(v) == []


def test_the_same_resignation_while_the_fault_still_waited_for_a_leader_is_flagged():
    v = availability.check(leader_killed_at_20(3.0).ops, n1_resigns_and_n2_leads(20.5), run())
    assert "leader-change-while-healthy" in types(v)


def test_a_fault_takes_its_nodes_from_when_it_acted():
    tl = impairment.timeline(leader_killed_at_20(3.0).ops, NODES, None, 40 * S)
    assert "n1" not in tl.at(22 * S).out and "n1" in tl.at(int(23.05 * S)).out
    tl = impairment.timeline(leader_killed_at_20(None).ops, NODES, None, 40 * S)
    assert "n1" in tl.at(int(20.05 * S)).out


def test_acted_at_never_passes_the_completion_and_ignores_what_is_not_a_wait():
    assert impairment.acted_at(10, 20, {WAITED_FOR_LEADER: 99.0}) == 20
    assert impairment.acted_at(10, 20, {WAITED_FOR_LEADER: True}) == 10
    assert impairment.acted_at(10, 20, {WAITED_FOR_LEADER: -1}) == 10
    assert impairment.acted_at(10, 20, None) == 10


class NeverALeader:
    name = "kill"
    heal_f = "start"

    def inject(self, cluster: Any, rng: random.Random, params: Any) -> dict[str, Any]:
        raise NoLeader("no leader to target (waited 6 s)")

    def heal(self, cluster: Any) -> dict[str, Any]:
        return {"nodes": []}


def test_a_fault_that_found_no_leader_is_recorded_failed_and_as_changing_nothing(tmp_path: Path):
    recorder = Recorder(tmp_path / "history.msgpack")
    nemesis = CompositeNemesis({"kill": NeverALeader()})
    nemesis.setup(object())  # type: ignore[arg-type]  # the fault never looks at its cluster
    runner = NemesisRunner(nemesis, [Event(0.0, "inject", "kill", {"targets": "leader"})],
                           recorder.record)
    executed = runner.run(threading.Event())
    recorder.close()
    failed = read_history(tmp_path / "history.msgpack").ops[1]
    assert failed.error == "NoLeader: no leader to target (waited 6 s)"
    assert noop_reason(failed.value) == "no leader to target (waited 6 s)"
    assert executed[0]["noop"] and executed[0]["error"]
    # Without the mark, the failed op is "anything" while it ran; with it, nothing.
    h = H()
    h.nemesis(20, "kill", {"targets": "leader"}, took_s=6.0)
    h.ops[-1].error = "NoLeader: no leader to target"
    unmarked = impairment.timeline(h.ops, NODES, None, 40 * S)
    assert unmarked.at(23 * S).anything
    h = H()
    h.nemesis(20, "kill", {"targets": "leader", NOOP: "no leader to target"}, took_s=6.0)
    marked = impairment.timeline(h.ops, NODES, None, 40 * S)
    assert marked.quorum_ok(marked.at(23 * S)) and not marked.at(23 * S).out
