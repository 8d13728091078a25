"""A fault that changed nothing is recorded as a no-op, never drawn as a fault
(issue 14, finding 6)."""

from __future__ import annotations

import random
from typing import Any

from checkers.history import NEMESIS, NOOP, Op
from harness.report.data import timeline
from harness.run.lifecycle import active_faults
from nemesis.base import CompositeNemesis, NemesisRunner
from nemesis.partition import PartitionFault, shapes_for
from nemesis.process import KillFault, PauseFault
from nemesis.schedule import Event, schedule


class FakeCluster:
    """Just enough of harness.run.cluster.Cluster for process faults."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.up = set(names)
        self.paused: set[str] = set()
        self.hub_netns = "fake"

    def is_running(self, n: str) -> bool:
        return n in self.up

    def kill(self, nodes: list[str]) -> list[str]:
        killed = [n for n in nodes if n in self.up]
        self.up -= set(nodes)
        self.paused -= set(nodes)
        return killed

    def start(self, nodes: list[str], fresh: bool = False) -> list[str]:
        started = [n for n in nodes if n not in self.up]
        self.up |= set(nodes)
        return started

    def pause(self, nodes: list[str]) -> list[str]:
        out = [n for n in nodes if n in self.up]
        self.paused |= set(out)
        return out

    def resume(self, nodes: list[str]) -> list[str]:
        out = [n for n in nodes if n in self.paused]
        self.paused -= set(nodes)
        return out

    def leader(self) -> str | None:
        return "n1"


class FakePartitioner:
    def __init__(self) -> None:
        self.cut: list[Any] = []

    def apply(self, cut: Any) -> None:
        self.cut = list(cut)

    def heal(self) -> None:
        self.cut = []


def test_kill_of_a_node_already_down_is_a_noop() -> None:
    c, kill = FakeCluster(["n1", "n2", "n3"]), KillFault()
    assert NOOP not in kill.inject(c, random.Random(0), {"nodes": ["n2"]})
    again = kill.inject(c, random.Random(0), {"nodes": ["n2"]})
    assert again[NOOP] == "n2 already down" and again["killed"] == []
    assert NOOP not in kill.heal(c)
    assert kill.heal(c)[NOOP] == "no node was down"


def test_pause_of_a_paused_or_down_node_is_a_noop() -> None:
    c, pause = FakeCluster(["n1", "n2", "n3"]), PauseFault()
    assert NOOP not in pause.inject(c, random.Random(0), {"nodes": ["n1"]})
    assert pause.inject(c, random.Random(0), {"nodes": ["n1"]})[NOOP]
    c.kill(["n3"])
    assert pause.inject(c, random.Random(0), {"nodes": ["n3"]})[NOOP]
    assert NOOP not in pause.heal(c)
    assert pause.heal(c)[NOOP] == "no node was paused"


def test_a_partition_that_cuts_nothing_is_a_noop_and_never_drawn(monkeypatch) -> None:
    part = PartitionFault()
    fake = FakePartitioner()
    monkeypatch.setattr(part, "partitioner", lambda cluster: fake)
    c = FakeCluster(["n1", "n2", "n3"])
    # A 3-node "majorities ring" is a full mesh (the demo's old no-op).
    value = part.inject(c, random.Random(0), {"shape": "majorities-ring"})
    assert value["cut"] == [] and "cuts no link on 3 nodes" in value[NOOP]
    assert part.heal(c)[NOOP] == "no link was cut"
    real = part.inject(c, random.Random(0), {"shape": "isolate-one"})
    assert real["cut"] and NOOP not in real


def test_shapes_that_cannot_act_are_never_drawn() -> None:
    assert "majorities-ring" not in shapes_for(3) and "majorities-ring" in shapes_for(5)
    assert shapes_for(1) == ()
    for seed in range(50):
        for e in schedule(seed, ["partition"], 1.0, 30.0, ["n1", "n2", "n3"]):
            if e.action == "inject":
                assert e.params["shape"] != "majorities-ring" and e.params.get("cut") != []


def test_noops_are_recorded_in_history_and_schedule_but_not_active() -> None:
    c = FakeCluster(["n1", "n2", "n3"])
    nemesis = CompositeNemesis({"kill": KillFault()})
    nemesis.setup(c)
    ops: list[Op] = []

    def record(process, type, f, value=None, key=None, node=None, error=None):
        op = Op(len(ops), len(ops) * 1_000_000, process, type, f, value, key, node, error)
        ops.append(op)
        return op

    runner = NemesisRunner(nemesis, [], record)
    runner.apply(Event(0, "inject", "kill", {"nodes": ["n2"]}))
    runner.apply(Event(1, "inject", "kill", {"nodes": ["n2"]}))
    assert [e["noop"] for e in runner.executed] == [None, "n2 already down"]
    assert ops[3].value[NOOP] == "n2 already down"
    assert active_faults(runner.executed) == ["kill n2"]
    assert active_faults(runner.executed[1:]) == []


def test_the_timeline_draws_real_faults_and_marks_noops() -> None:
    s = 1_000_000_000
    ops = [Op(0, 0, 0, "invoke", "read"), Op(1, 1, 0, "ok", "read", 1),
           Op(2, 1 * s, NEMESIS, "invoke", "partition", {"shape": "majorities-ring"}),
           Op(3, 1 * s + 5, NEMESIS, "info", "partition",
              {"shape": "majorities-ring", "cut": [], NOOP: "cuts no link on 3 nodes"}),
           Op(4, 2 * s, NEMESIS, "invoke", "heal", None),
           Op(5, 2 * s + 5, NEMESIS, "info", "heal", {"healed": [], NOOP: "no link was cut"}),
           Op(6, 3 * s, NEMESIS, "invoke", "kill", {"nodes": ["n2"]}),
           Op(7, 3 * s + 5, NEMESIS, "info", "kill", {"nodes": ["n2"], "killed": ["n2"]}),
           Op(8, 4 * s, NEMESIS, "invoke", "start", None),
           Op(9, 4 * s + 5, NEMESIS, "info", "start", {"nodes": ["n2"]}),
           Op(10, 5 * s, 0, "invoke", "read"), Op(11, 5 * s + 1, 0, "ok", "read", 1)]
    tl = timeline(ops, {}, {})
    assert [w.f for w in tl.faults] == ["kill"]
    assert any("no-op: partition: cut no link (majorities-ring)" in what for _, what in tl.marks)


def test_every_named_fault_kind_gets_its_turn_and_none_is_a_blink() -> None:
    """Finding 6: the demo named partition, kill, pause and had no pause, and its
    only kill lasted 50 ms at the very end."""
    kinds = ["partition", "kill", "pause"]
    for seed in range(100):
        events = schedule(seed, kinds, 3.0, 30.0, ["n1", "n2", "n3"])
        injects = [e.fault for e in events if e.action == "inject"]
        if len(injects) >= 3:
            assert set(injects[:3]) == set(kinds), (seed, injects)
        for inject, heal in zip(events[::2], events[1::2], strict=True):
            assert heal.time - inject.time >= 1.0 - 1e-9, (seed, inject, heal)


def test_the_demo_schedule_holds_each_fault_kind_it_names() -> None:
    """`make demo`'s arguments (read from scripts/demo.sh) give a schedule with
    every named kind, none of them a shape that cannot act on its nodes."""
    import re
    import shlex
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "scripts" / "demo.sh").read_text()
    command = script[script.index("faultline run"):].replace("\\\n", " ").split("\n")[0]
    argv = shlex.split(re.sub(r'"\$\{SEED:-(\d+)\}"', r"\1", command))
    opt = {argv[i]: argv[i + 1] for i in range(2, len(argv) - 1) if argv[i].startswith("--")}
    kinds = opt["--nemesis"].split(",")
    names = [f"n{i}" for i in range(1, int(opt["--nodes"]) + 1)]
    events = schedule(int(opt["--seed"]), kinds, float(opt["--nemesis-interval"]),
                      float(opt["--time-limit"]), names)
    injects = [e for e in events if e.action == "inject"]
    assert {e.fault for e in injects} == set(kinds)
    assert all(e.params.get("cut") != [] for e in injects)


def test_a_fault_the_schedule_never_draws_is_named_not_implied() -> None:
    """A run that names faults it never injected (too short for their turn, or
    only no-ops) must not read as tested against them (the spirit of finding 6):
    the run warns before it starts and the report's facts name them."""
    from harness.report.html import never_injected
    from harness.run.config import RunConfig, fresh_schedule, kinds_left_out
    short = RunConfig(nemesis=["partition", "kill", "pause"], time_limit=4.0,
                      nemesis_interval=3.0, seed=1)
    left = kinds_left_out(short, fresh_schedule(short))
    assert left and set(left) <= {"partition", "kill", "pause"}
    demo = RunConfig(nemesis=["partition", "kill", "pause"], time_limit=30.0,
                     nemesis_interval=3.0, seed=1)
    assert kinds_left_out(demo, fresh_schedule(demo)) == []
    assert never_injected(["partition:majorities-ring", "kill", "kill-after-vote"],
                          {"kill"}) == ["partition:majorities-ring"]
    s = 1_000_000_000
    ops = [Op(0, 0, 0, "invoke", "read"), Op(1, 1, 0, "ok", "read", 1),
           Op(2, 1 * s, NEMESIS, "invoke", "partition", {"shape": "majorities-ring"}),
           Op(3, 1 * s + 5, NEMESIS, "info", "partition",
              {"shape": "majorities-ring", "cut": [], NOOP: "cuts no link on 3 nodes"}),
           Op(4, 3 * s, NEMESIS, "invoke", "kill", {"nodes": ["n2"]}),
           Op(5, 3 * s + 5, NEMESIS, "info", "kill", {"nodes": ["n2"], "killed": ["n2"]}),
           Op(6, 5 * s, 0, "invoke", "read"), Op(7, 5 * s + 1, 0, "ok", "read", 1)]
    tl = timeline(ops, {}, {})
    assert never_injected(["partition", "kill"], {w.f for w in tl.faults}) == ["partition"]
