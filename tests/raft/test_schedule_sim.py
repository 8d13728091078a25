"""A raft run's executed schedule on the deterministic simulation (issue 33):
the translation (pure), the simulation's kill, pause and one-way cuts, and a
switch's failure reproduced there but not by the correct build, made into a
regression test in one command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nodes.raft.schedule_sim import Scenario, SimStep, play, regression_test, scenario_from_run
from nodes.raft.sim import Sim

MS = 1_000_000


def run_doc(schedule: list[dict], bugs: list[str] = (), tick_ms: int = 50) -> dict:
    return {"run_id": "20261126T000000.000000Z-abcdef", "schedule_offset_ns": 1000 * MS,
            "nodes": {"n1": {}, "n2": {}, "n3": {}},
            "config": {"db": "raft", "nodes": 3, "time_limit": 20.0, "bugs": list(bugs),
                       "node_options": {"tick_ms": tick_ms}},
            "schedule": schedule}


ISOLATE_LEADER = [
    {"time": 6000 * MS, "f": "partition", "fault": "partition:isolate-leader",
     "value": {"shape": "isolate-leader", "nodes": ["n1"],
               "cut": [["n1", "n2"], ["n1", "n3"], ["n2", "n1"], ["n3", "n1"]]}},
    {"time": 16000 * MS, "f": "heal", "fault": "partition:isolate-leader",
     "value": {"healed": [["n1", "n2"], ["n1", "n3"], ["n2", "n1"], ["n3", "n1"]]}},
]


def test_the_schedule_becomes_steps_at_its_ticks():
    sched = ISOLATE_LEADER + [
        {"time": 17000 * MS, "f": "kill", "fault": "kill", "value": {"killed": ["n2"]}},
        {"time": 17500 * MS, "f": "kill", "fault": "kill", "value": {"nodes": []},
         "noop": "no node was up"},
        {"time": 18000 * MS, "f": "membership", "fault": "membership", "value": {}},
        {"time": 19000 * MS, "f": "start", "fault": "kill", "value": {"nodes": ["n2"]}},
    ]
    s = scenario_from_run(run_doc(sched, ["no-check-quorum"]))
    assert s.nodes == ("n1", "n2", "n3") and s.bugs == ("no-check-quorum",)
    assert [(x.tick, x.action, x.leader) for x in s.steps] == [
        (100, "cut", True), (300, "uncut", False), (320, "sigkill", False),
        (360, "restart", False)]
    assert s.steps[0].pairs[0] == ("n1", "n2")
    assert s.skipped == ("membership at tick 340",)
    assert s.ticks == 400 + 200                     # the time limit, then settling
    assert Scenario.from_json(s.to_json()) == s
    # Twin: 10 ms ticks put the same moments five times further in.
    assert scenario_from_run(run_doc(sched, tick_ms=10)).steps[0].tick == 500


def test_the_schedule_vocabulary_is_the_nemesis_registry():
    """nodes/ cannot import the fault rows; this holds its table to them."""
    from checkers.faults import FAULT_OPS
    from nodes.raft.schedule_sim import FROM_SCHEDULE
    known = set(FAULT_OPS) | {f.heal_f for f in FAULT_OPS.values()}
    assert set(FROM_SCHEDULE) <= known, set(FROM_SCHEDULE) - known


def test_the_simulation_kills_pauses_and_cuts_one_way():
    sim = Sim(("n1", "n2", "n3"), seed=1)
    leader = sim.settle()
    for k in range(5):
        sim.propose(f"x{k}".encode())
    sim.stall_flush(leader)
    sim.propose(b"unflushed")
    sim.run(1)
    written = len(sim.nodes[leader].disk.written)
    sim.kill(leader)                                  # the page cache survives a kill
    assert len(sim.nodes[leader].disk.durable) == written
    other = next(n for n in sim.nodes if n != leader)
    sim.run(50)
    sim.pause(other)
    sim.run(5)
    epoch = sim.nodes[other].core.epoch
    ticks_before = sim.now
    sim.run(200)                                      # paused: no election timer runs
    assert sim.nodes[other].core.epoch == epoch and sim.now == ticks_before + 200
    sim.resume(other)
    sim.restart(leader)
    sim.run(100)
    assert sim.stable_leader() is not None
    sim.cut_one_way("n1", "n2")
    assert ("n1", "n2") in sim._blocked and ("n2", "n1") not in sim._blocked
    sim.uncut("n1", "n2")
    assert not sim._blocked


def test_a_switch_reproduces_and_the_correct_build_does_not():
    s = scenario_from_run(run_doc(ISOLATE_LEADER, ["no-check-quorum"]))
    buggy = [play(s, seed) for seed in range(3)]
    assert all(o.reproduced for o in buggy)
    assert any("still leads" in v for o in buggy for v in o.violations)
    assert not any(play(s, seed, bugs=()).reproduced for seed in range(3))


def test_a_leader_aimed_step_follows_the_simulations_leader():
    # Named n3 in the run; the simulation's leader is whoever won there.
    sched = [{**ISOLATE_LEADER[0], "value": {
        "shape": "isolate-leader", "nodes": ["n3"],
        "cut": [["n3", "n1"], ["n3", "n2"], ["n1", "n3"], ["n2", "n3"]]}}]
    s = scenario_from_run(run_doc(sched, ["no-check-quorum"]))
    assert all(play(s, seed).reproduced for seed in range(3))
    # Twin: the same cut not aimed at the leader isolates n3 as named; the
    # leader it leaves alone keeps its quorum, so nothing is stranded.
    plain = Scenario(s.nodes, s.bugs, s.ticks,
                     tuple(SimStep(x.tick, x.action, x.nodes, x.pairs, False) for x in s.steps))
    outcomes = [play(plain, seed) for seed in range(3)]
    assert sum(o.reproduced for o in outcomes) < 3


def test_one_command_makes_a_regression_test_that_passes(tmp_path):
    run_dir = tmp_path / "20261126T000000.000000Z-abcdef"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps(run_doc(ISOLATE_LEADER, ["no-check-quorum"])))
    test_file = tmp_path / "test_regression_from_run.py"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "nodes.raft", "simulate", str(run_dir),
                           "--seeds", "3", "--write-test", str(test_file)],
                          capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reproduced on 3 of 3" in done.stdout
    assert "the correct build fails on 0 of 3" in done.stdout
    passed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                             "-p", "no:cacheprovider", str(test_file)],
                            capture_output=True, text=True, cwd=root, timeout=300)
    assert passed.returncode == 0, passed.stdout[-2000:]
    assert "2 passed" in passed.stdout
    # Twin: a run with no fault reproduces nothing (exit 2) and writes no test.
    quiet = tmp_path / "20261126T000001.000000Z-abcdef"
    quiet.mkdir()
    (quiet / "run.json").write_text(json.dumps(run_doc([], ["no-check-quorum"])))
    other = tmp_path / "test_none.py"
    done = subprocess.run([sys.executable, "-m", "nodes.raft", "simulate", str(quiet),
                           "--seeds", "2", "--write-test", str(other)],
                          capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 2 and not other.exists()


def test_the_generated_test_names_its_seeds():
    s = scenario_from_run(run_doc(ISOLATE_LEADER, ["no-check-quorum"]))
    text = regression_test(s, [0, 2])
    assert "SEEDS = [0, 2]" in text and "the_switches_still_show_it" in text
    compile(text, "generated", "exec")
    no_switch = regression_test(scenario_from_run(run_doc(ISOLATE_LEADER)), [1])
    assert "the_switches_still_show_it" not in no_switch
