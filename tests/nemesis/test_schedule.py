"""Fault schedules (pure) and the executor that records them into the history."""

from __future__ import annotations

import os
import queue
import random
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from echo_db import EchoDB

from checkers.history import Op, noop_reason, read_history, validate
from harness.run.cluster import Cluster
from harness.run.recorder import Recorder
from nemesis.base import (
    CompositeNemesis,
    FaultContext,
    NemesisRunner,
    lateness_s,
    make_fault,
)
from nemesis.schedule import Event, schedule

NODES = ["n1", "n2", "n3", "n4", "n5"]
FAULTS = ["kill", "pause", "partition", "partition:isolate-leader", "truncate"]


def test_same_seed_same_timeline() -> None:
    a = schedule(42, FAULTS, 2.0, 60.0, NODES)
    assert a == schedule(42, FAULTS, 2.0, 60.0, NODES)
    assert a != schedule(43, FAULTS, 2.0, 60.0, NODES)
    assert [e.to_map() for e in a] == [e.to_map() for e in schedule(42, FAULTS, 2.0, 60.0,
                                                                     NODES)]


@pytest.mark.parametrize("seed", range(30))
def test_every_fault_is_healed_in_time_and_one_at_a_time(seed: int) -> None:
    events = schedule(seed, FAULTS, 1.5, 30.0, NODES)
    times = [e.time for e in events]
    assert times == sorted(times) and all(0 < t <= 30.0 for t in times)
    assert [e.action for e in events] == ["inject", "heal"] * (len(events) // 2)
    for inject, heal in zip(events[::2], events[1::2], strict=True):
        assert inject.fault == heal.fault and inject.fault in FAULTS


@pytest.mark.parametrize("seed", range(20))
def test_a_minimum_duration_holds_every_fault_that_long_and_keeps_the_draws(seed: int) -> None:
    plain = schedule(seed, ["partition:isolate-leader"], 4.0, 30.0, NODES)
    held = schedule(seed, ["partition:isolate-leader"], 4.0, 30.0, NODES, min_duration=4.0)
    assert held and all(e.time <= 30.0 for e in held)
    for inject, heal in zip(held[::2], held[1::2], strict=True):
        assert heal.time - inject.time >= 4.0 - 1e-9 or heal.time == 30.0
    # The same draws: the first fault comes at the same time with the same seed.
    assert (held[0].time, held[0].seed) == (plain[0].time, plain[0].seed)


def test_plans_name_nodes_from_the_seed() -> None:
    events = schedule(5, ["kill", "truncate", "partition:one-way"], 1.0, 200.0, NODES)
    injects = [e for e in events if e.action == "inject"]
    assert {e.fault for e in injects} == {"kill", "truncate", "partition:one-way"}
    for e in injects:
        if e.fault == "kill":
            assert e.params["targets"] in ("one", "minority", "majority")
            assert len(e.params["nodes"]) == {"one": 1, "minority": 2, "majority": 3}[
                e.params["targets"]]
        elif e.fault == "truncate":
            assert len(e.params["nodes"]) == 1 and e.params["nodes"][0] in NODES
        else:
            assert e.params["shape"] == "one-way" and e.params["cut"]
    assert len({e.seed for e in injects}) == len(injects)


def test_leader_dependent_shapes_wait_for_inject_time() -> None:
    events = schedule(1, ["partition:isolate-leader"], 1.0, 10.0, NODES)
    assert events and all("cut" not in e.params for e in events)


def test_no_faults_no_events_and_bad_interval() -> None:
    assert schedule(1, [], 1.0, 10.0, NODES) == []
    with pytest.raises(ValueError):
        schedule(1, ["kill"], 0, 10.0, NODES)


def test_registry_knows_disk_faults_by_name() -> None:
    class Files:
        def data_files(self, node: Any) -> list[Path]:
            return []

    truncate = make_fault("truncate", FaultContext(db=Files()))
    assert truncate.name == "truncate"
    assert make_fault("partition:bridge").name == "partition"
    with pytest.raises(ValueError, match="unknown fault"):
        make_fault("meteor")
    with pytest.raises(ValueError, match="LazyFS"):
        make_fault("lose-unsynced")


class FlakyFault:
    """A fault whose second injection fails: the runner must record and carry on."""

    name = "flaky"
    heal_f = "unflake"

    def __init__(self) -> None:
        self.injected = 0
        self.heals = 0

    def inject(self, cluster: Any, rng: random.Random, params: Any) -> dict[str, Any]:
        self.injected += 1
        if self.injected == 2:
            raise RuntimeError("disk on fire")
        return {"nodes": list(params.get("nodes", [])), "roll": rng.randrange(1000)}

    def heal(self, cluster: Any) -> dict[str, Any]:
        self.heals += 1
        return {"healed": True}


def flaky_nemesis(fault: FlakyFault) -> CompositeNemesis:
    nemesis = CompositeNemesis({"flaky": fault})
    nemesis.setup(object())  # type: ignore[arg-type]  # FlakyFault never looks at its cluster
    return nemesis


def test_runner_records_invoke_info_pairs_errors_and_final_heal(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "history.msgpack")
    fault = FlakyFault()
    events = [Event(0.0, "inject", "flaky", {"nodes": ["n1"]}, seed=9),
              Event(0.01, "heal", "flaky"),
              Event(0.02, "inject", "flaky", {"nodes": ["n2"]}, seed=10),  # fails
              Event(0.03, "heal", "flaky"),
              Event(0.04, "inject", "flaky", {"nodes": ["n3"]}, seed=11)]  # healed at the end
    runner = NemesisRunner(flaky_nemesis(fault), events, recorder.record)
    executed = runner.run(threading.Event())
    recorder.close()
    ops = read_history(tmp_path / "history.msgpack").ops
    assert validate(ops) == []
    assert all(op.process == "nemesis" for op in ops)
    assert [(op.type, op.f) for op in ops] == [("invoke", "flaky"), ("info", "flaky"),
                                               ("invoke", "unflake"), ("info", "unflake")] * 3
    assert ops[1].value == {"nodes": ["n1"], "roll": random.Random(9).randrange(1000)}
    assert ops[5].error == "RuntimeError: disk on fire" and ops[5].value == {"nodes": ["n2"]}
    assert [e["f"] for e in executed][-1] == "unflake"
    # Two scheduled heals, one final heal, one more from teardown's heal-all.
    assert fault.heals == 4


def test_runner_stops_early_and_still_heals(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "history.msgpack")
    fault = FlakyFault()
    events = [Event(0.0, "inject", "flaky", {}, seed=1), Event(60.0, "heal", "flaky")]
    stop = threading.Event()
    runner = NemesisRunner(flaky_nemesis(fault), events, recorder.record)
    threading.Timer(0.2, stop.set).start()
    runner.run(stop)
    assert [(op.type, op.f) for op in recorder.open_ops()] == []
    assert [e["f"] for e in runner.executed] == ["flaky", "unflake"]


class FakeClock:
    """The runner's clock, moved only by the actions and its waits."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class WaitingQueue(queue.SimpleQueue):  # type: ignore[type-arg]
    """The runner's queue of fired faults, none ever fired: a wait moves the
    fake clock by its timeout instead of sleeping."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        self.clock.now += timeout or 0.0
        raise queue.Empty


class SlowFault:
    """A fault whose injections take the given times on the fake clock."""

    name = "slow"
    heal_f = "unslow"

    def __init__(self, clock: FakeClock, takes: list[float]) -> None:
        self.clock, self.takes = clock, list(takes)

    def inject(self, cluster: Any, rng: random.Random, params: Any) -> dict[str, Any]:
        self.clock.now += self.takes.pop(0)
        return {}

    def heal(self, cluster: Any) -> dict[str, Any]:
        return {}


def test_a_late_event_does_not_make_the_next_late_and_records_how_late_it_ran() -> None:
    """Each event aims at its absolute time: one due while a slow inject runs
    starts when it ends, with its lateness recorded, and the events after
    it are not pushed back by it (relative sleeps would add it up)."""
    clock = FakeClock()
    nemesis = CompositeNemesis({"slow": SlowFault(clock, [2.5, 0.3, 0.0])})
    nemesis.setup(object())  # type: ignore[arg-type]  # SlowFault never looks at it

    def record(process: Any, type: str, f: str, value: Any = None, key: Any = None,
               node: str | None = None, error: str | None = None) -> Op:
        return Op(0, round((clock.now - 100.0) * 1e9), process, type, f, value, error=error)

    events = [Event(0.0, "inject", "slow"),     # takes 2.5 s
              Event(1.0, "heal", "slow"),       # due during it: 1.5 s late
              Event(1.2, "inject", "slow"),     # 1.3 s late, not 1.5 + 0.2; takes 0.3 s
              Event(4.0, "heal", "slow"),       # waited for: on time
              Event(4.5, "inject", "slow")]     # healed by the final heal
    runner = NemesisRunner(nemesis, events, record, clock=clock)
    runner._urgent = WaitingQueue(clock)
    executed = runner.run(threading.Event(), start=100.0)
    assert [(e["f"], round(e["time"] / 1e9, 6)) for e in executed] == [
        ("slow", 0.0), ("unslow", 2.5), ("slow", 2.5), ("unslow", 4.0), ("slow", 4.5),
        ("unslow", 4.5)]
    assert [e.get("late_s") for e in executed] == [0.0, 1.5, 1.3, 0.0, 0.0, None]


class TimeLimit(threading.Event):
    """The run's stop, set by the fake clock reaching the time limit (as the
    workload's end sets it in a run)."""

    def __init__(self, clock: FakeClock, at: float) -> None:
        super().__init__()
        self.clock, self.at = clock, at

    def is_set(self) -> bool:
        return self.clock.now >= self.at or super().is_set()


def late_replay(play_all: bool, abandon: bool = False) -> list[dict[str, Any]]:
    """A 5 s run whose first inject takes 6 s (a loaded machine): everything
    after it falls due while it runs, past the time limit; the last event was
    recorded after the limit (the original played it late)."""
    clock = FakeClock()
    nemesis = CompositeNemesis({"slow": SlowFault(clock, [6.0, 0.0])})
    nemesis.setup(object())  # type: ignore[arg-type]  # SlowFault never looks at it

    def record(process: Any, type: str, f: str, value: Any = None, key: Any = None,
               node: str | None = None, error: str | None = None) -> Op:
        return Op(0, round((clock.now - 100.0) * 1e9), process, type, f, value, error=error)

    events = [Event(0.0, "inject", "slow"),     # takes 6 s: ends past the 5 s limit
              Event(1.0, "heal", "slow"),
              Event(2.0, "inject", "slow"),
              Event(7.0, "heal", "slow")]       # due after the limit: never played early
    runner = NemesisRunner(nemesis, events, record, clock=clock, play_all=play_all)
    runner._urgent = WaitingQueue(clock)
    if abandon:
        # The run errs while the first inject runs: its end abandons the runner.
        slow = nemesis.faults["slow"]
        inject = slow.inject

        def abandoning(*args: Any) -> Any:
            runner.abandon()
            return inject(*args)

        slow.inject = abandoning  # type: ignore[method-assign]
    return runner.run(TimeLimit(clock, 105.0), start=100.0)


def test_a_late_replay_plays_every_recorded_event_in_order_after_its_time_limit() -> None:
    executed = late_replay(play_all=True)
    assert [(e["f"], round(e["time"] / 1e9, 6), e.get("late_s"), e.get("after_stop", False))
            for e in executed] == [
        ("slow", 0.0, 0.0, False), ("unslow", 6.0, 5.0, True), ("slow", 6.0, 4.0, True),
        ("unslow", 7.0, 0.0, True)]     # nothing left dirty: no final heal


def test_a_live_run_drops_what_its_time_limit_finds_pending_and_heals() -> None:
    """The fail twin of the replay's rule (a live run's schedule ends at its
    limit: the final heal heals what ran), and what the old runner did to a
    replay (CI trial 21: the last two faults of a replay 5 s late never ran)."""
    executed = late_replay(play_all=False)
    assert [(e["f"], e.get("late_s")) for e in executed] == [("slow", 0.0), ("unslow", None)]


def test_an_abandoned_replay_plays_nothing_more_and_heals() -> None:
    executed = late_replay(play_all=True, abandon=True)
    assert [(e["f"], e.get("late_s")) for e in executed] == [("slow", 0.0), ("unslow", None)]


def test_lateness_rounds_up_to_the_ms() -> None:
    assert [lateness_s(x) for x in (-0.2, 0.0, 0.0001, 0.1, 0.1234, 1.5)] == [
        0.0, 0.0, 0.001, 0.1, 0.124, 1.5]


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
@pytest.mark.slow
def test_schedule_against_a_real_cluster(tmp_path: Path) -> None:
    run_id = f"tsc{uuid.uuid4().hex[:8]}"
    names = ["n1", "n2", "n3"]
    with Cluster(tmp_path / run_id, EchoDB(), names, run_id,
                 state_dir=tmp_path / "state") as c:
        c.start_all(timeout=20)
        specs = ["kill", "pause", "partition"]
        events = schedule(11, specs, 0.15, 2.0, names)
        recorder = Recorder(c.run_dir / "history.msgpack")
        nemesis = CompositeNemesis.from_specs(specs)
        nemesis.setup(c)
        executed = NemesisRunner(nemesis, events, recorder.record).run(threading.Event())
        recorder.close()
        ops = read_history(c.run_dir / "history.msgpack").ops
        assert validate(ops) == []
        # Every fault the plan injects acted, and was healed, without error.
        planned = {e.fault for e in events if e.action == "inject"}
        assert planned == set(specs)  # the bag starts with one of each kind
        acted = {op.f for op in ops if op.process == "nemesis" and op.type == "info"
                 and op.error is None and noop_reason(op.value) is None}
        assert {"kill", "start", "pause", "resume", "partition", "heal"} <= acted, acted
        assert all(e["error"] is None for e in executed), executed
        # Everything healed: every node up, none paused, cluster answers.
        assert c.running() == names and not c.paused
        c.wait_ready(timeout=20)


def test_lose_unsynced_variants_pick_that_many_nodes():
    import random

    from nemesis.schedule import plan_params
    nodes = ["n1", "n2", "n3", "n4", "n5"]
    # Plain, the set is drawn over one, a minority, a majority and all.
    plain = plan_params("lose-unsynced", random.Random(1), nodes)
    assert len(plain["nodes"]) == {"one": 1, "minority": 2, "majority": 3, "all": 5}[
        plain["targets"]]
    assert len(plan_params("lose-unsynced:one", random.Random(1), nodes)["nodes"]) == 1
    assert len(plan_params("lose-unsynced:majority", random.Random(1), nodes)["nodes"]) == 3
    assert plan_params("lose-unsynced:all", random.Random(1), nodes)["nodes"] == nodes
