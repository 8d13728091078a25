"""Rebuilding a run's schedule as executed (fast: hand-made run.json)."""

import pytest

from harness.run.replay import (
    ReplayError,
    ReplayOutcome,
    after_stop,
    comparison_lines,
    lateness,
    replay_config,
    replay_events,
)
from nemesis.base import ran_late
from nemesis.schedule import Event

OFFSET = 50_000_000     # schedule time 0 is 50 ms into the history
CUT = [["n1", "n2"], ["n1", "n3"], ["n2", "n1"], ["n3", "n1"]]


def executed(t_s, f, fault, value=None, error=None):
    return {"time": int(t_s * 1e9) + OFFSET, "end": int(t_s * 1e9) + OFFSET + 1000, "f": f,
            "fault": fault, "value": value, "error": error}


PLANNED = [Event(0.289, "inject", "partition", {"shape": "isolate-leader"}, 11).to_map(),
           Event(1.482, "heal", "partition").to_map(),
           Event(2.0, "inject", "kill", {"targets": "leader"}, 22).to_map(),
           Event(3.0, "heal", "kill").to_map(),
           Event(4.0, "inject", "pause", {"nodes": ["n2"]}, 33).to_map(),
           Event(9.0, "heal", "pause").to_map()]
RUN = {"config": {"db": "raft", "workload": "register", "seed": 5, "time_limit": 8.0,
                  "nemesis": ["partition", "kill", "pause"]},
       "planned_schedule": PLANNED, "schedule_offset_ns": OFFSET,
       "schedule": [
           executed(0.2916, "partition", "partition",
                    {"shape": "isolate-leader", "nodes": ["n1"], "cut": CUT}),
           executed(1.4821, "heal", "partition", {"healed": CUT}),
           executed(2.0007, "kill", "kill", {"targets": "leader"}, error="no leader to target"),
           executed(3.0004, "start", "kill", {"nodes": []}),
           executed(4.0002, "pause", "pause", {"nodes": ["n2"], "paused": ["n2"]}),
           # the run stopped before the planned heal at 9 s: the final heal-all
           executed(8.01, "resume", "pause", {"nodes": ["n2"]})]}


def test_events_take_executed_times_and_resolved_nodes():
    events = replay_events(RUN)
    assert [(e["action"], e["fault"], e["time"]) for e in events] == [
        ("inject", "partition", 0.292), ("heal", "partition", 1.482),
        ("inject", "kill", 2.001), ("heal", "kill", 3.0), ("inject", "pause", 4.0),
        ("heal", "pause", 8.01)]
    # the leader it isolated then, pinned: the replay cuts the same node off
    assert events[0]["params"] == {"shape": "isolate-leader", "nodes": ["n1"], "cut": CUT}
    assert events[0]["seed"] == 11
    # a failed inject keeps what was planned; it is replayed as it was tried
    assert events[2]["params"] == {"targets": "leader"} and events[2]["seed"] == 22
    assert events[4]["params"] == {"nodes": ["n2"]}


def test_final_heal_without_a_plan_is_left_to_the_runner():
    run = {**RUN, "planned_schedule": PLANNED[:2], "schedule": RUN["schedule"][:2] + [
        executed(8.0, "heal", "partition", {"healed": []})]}
    assert [e["action"] for e in replay_events(run)] == ["inject", "heal"]


def test_a_heal_a_trigger_fired_mid_fault_is_replayed_where_it_ran():
    # fast-failover heals its own cut mid-fault; only the run's final
    # heal-all is left to the runner.
    fired_heal = executed(5.0, "heal", "partition", {"healed": CUT}) | {"fired": True}
    run = {**RUN, "planned_schedule": PLANNED[:2], "schedule": RUN["schedule"][:2] + [
        executed(4.5, "partition", "partition", {"cut": CUT}) | {"fired": True}, fired_heal,
        executed(8.0, "heal", "partition", {"healed": []})]}
    assert [(e["action"], e["time"]) for e in replay_events(run)] == [
        ("inject", 0.292), ("heal", 1.482), ("inject", 4.5), ("heal", 5.0)]


def test_a_fired_step_replays_with_the_params_it_was_fired_with():
    # power-cut-after-commit armed at 1 s fired a lose-unsynced at 1.3 s; the
    # replay runs it with the params it was fired with (its `after` too).
    planned = [Event(1.0, "inject", "power-cut-after-commit:all", {}, 7).to_map(),
               Event(2.0, "heal", "power-cut-after-commit:all").to_map()]
    fired = {"nodes": ["n1"], "trigger": "power-cut-after-commit", "after": {"event": "ack"}}
    run = {**RUN, "planned_schedule": planned, "schedule": [
        executed(1.0, "power-cut-after-commit", "power-cut-after-commit:all", {"armed": True}),
        executed(1.3, "lose-unsynced", "lose-unsynced", {"nodes": ["n1"], "lost": {}})
        | {"fired": True, "params": fired},
        executed(2.0, "start", "power-cut-after-commit:all", {"nodes": ["n1"]})]}
    assert [(e["time"], e["action"], e["params"], e["seed"]) for e in replay_events(run)] == [
        (1.0, "inject", {}, 7), (1.3, "inject", fired, 0), (2.0, "heal", {}, 0)]


def test_what_fast_failover_fired_is_left_out_and_its_armings_keep_their_seeds():
    # It `replays_live`: armed again in the replay, it plays its steps out at
    # the replay's own moments; its growth step (an inject of its own spec)
    # must not take the next arming's place either.
    planned = [Event(1.0, "inject", "fast-failover", {}, 7).to_map(),
               Event(7.0, "heal", "fast-failover").to_map(),
               Event(8.0, "inject", "fast-failover", {}, 9).to_map()]
    mine = {"trigger": "fast-failover"}
    run = {**RUN, "planned_schedule": planned, "schedule": [
        executed(1.0, "fast-failover", "fast-failover", {"armed": True}),
        executed(1.1, "partition", "partition", {"cut": CUT}) | {"fired": True,
                                                                  "params": {"cut": CUT} | mine},
        executed(2.0, "fast-failover", "fast-failover", {"step": "grow"})
        | {"fired": True, "params": {"step": "grow", "node": "n2", "over": "n1"} | mine},
        executed(2.1, "kill", "kill", {"nodes": ["n2"]})
        | {"fired": True, "params": {"nodes": ["n2"]} | mine},
        executed(2.5, "heal", "partition", {"healed": CUT}) | {"fired": True, "params": mine},
        executed(7.0, "start", "fast-failover", {"nodes": []}),
        executed(8.0, "fast-failover", "fast-failover", {"armed": True})]}
    assert [(e["time"], e["action"], e["fault"], e["seed"]) for e in replay_events(run)] == [
        (1.0, "inject", "fast-failover", 7), (7.0, "heal", "fast-failover", 0),
        (8.0, "inject", "fast-failover", 9)]


def test_live_triggers_drop_what_a_trigger_fired_and_keep_its_arming():
    # power-cut-after-commit armed at 1 s, fired a lose-unsynced at 1.3 s, healed at 2 s
    planned = [Event(1.0, "inject", "power-cut-after-commit:all", {}, 7).to_map(),
               Event(2.0, "heal", "power-cut-after-commit:all").to_map()]
    run = {**RUN, "planned_schedule": planned, "schedule": [
        executed(1.0, "power-cut-after-commit", "power-cut-after-commit:all", {"armed": True}),
        executed(1.3, "lose-unsynced", "lose-unsynced", {"nodes": ["n1"]}) | {"fired": True},
        executed(2.0, "start", "power-cut-after-commit:all", {"nodes": ["n1"]}),
        executed(2.5, "start", "lose-unsynced", {"nodes": []})]}
    recorded = [(e["action"], e["fault"]) for e in replay_events(run)]
    assert ("inject", "lose-unsynced") in recorded                 # re-executed at 1.3 s
    live = replay_config(run, live_triggers=True)
    assert [(e["action"], e["fault"], e["time"]) for e in live.schedule] == [
        ("inject", "power-cut-after-commit:all", 1.0), ("heal", "power-cut-after-commit:all",
                                                        2.0)]
    assert live.live_triggers and not replay_config(run).live_triggers
    hunted = {**run, "config": {**run["config"], "nemesis": ["hunt"]}}
    with pytest.raises(ReplayError, match="hunt"):
        replay_config(hunted, live_triggers=True)


def test_replay_of_a_replay_uses_its_config_schedule():
    first = replay_events(RUN)
    again = {**RUN, "planned_schedule": None, "config": {**RUN["config"], "schedule": first}}
    assert replay_events(again) == first


def test_runs_saved_without_a_plan_replay_their_recorded_values():
    legacy = {k: v for k, v in RUN.items() if k not in ("planned_schedule",
                                                        "schedule_offset_ns")}
    events = replay_events(legacy)
    assert events[0] == {"time": 0.342, "action": "inject", "fault": "partition",
                         "params": {"shape": "isolate-leader", "nodes": ["n1"], "cut": CUT},
                         "seed": 0}
    assert [e["action"] for e in events] == ["inject", "heal"] * 3


def test_config_keeps_everything_but_the_schedule():
    config = replay_config(RUN)
    assert (config.seed, config.time_limit, config.nemesis) == (5, 8.0,
                                                                ["partition", "kill", "pause"])
    # The schedule as executed, written out by hand from RUN (not derived by
    # the code under test): executed times, the leader then resolved, seeds kept.
    assert config.schedule == [
        {"time": 0.292, "action": "inject", "fault": "partition",
         "params": {"shape": "isolate-leader", "nodes": ["n1"], "cut": CUT}, "seed": 11},
        {"time": 1.482, "action": "heal", "fault": "partition", "params": {}, "seed": 0},
        {"time": 2.001, "action": "inject", "fault": "kill", "params": {"targets": "leader"},
         "seed": 22},
        {"time": 3.0, "action": "heal", "fault": "kill", "params": {}, "seed": 0},
        {"time": 4.0, "action": "inject", "fault": "pause", "params": {"nodes": ["n2"]},
         "seed": 33},
        {"time": 8.01, "action": "heal", "fault": "pause", "params": {}, "seed": 0}]


def test_unreplayable_runs_say_why():
    with pytest.raises(ReplayError, match="no executed schedule"):
        replay_events({"config": {}})
    with pytest.raises(ReplayError, match="no config"):
        replay_config({"schedule": []})


def test_comparison_prints_both_verdicts(tmp_path):
    old = {"valid": False, "checkers": {"divergence": {"valid": False},
                                        "stats": {"valid": True}}}
    new = {"valid": True, "checkers": {"divergence": {"valid": True},
                                       "stats": {"valid": True}}}
    lines = comparison_lines(ReplayOutcome(tmp_path / "a", tmp_path / "b", old, new, 0))
    assert lines[1].split() == ["divergence", "INVALID", "VALID"]
    assert "original: INVALID   replay: VALID   -> NOT reproduced" in lines
    same = ReplayOutcome(tmp_path / "a", tmp_path / "b", old, old, 1)
    assert same.reproduced and "-> reproduced" in comparison_lines(same)[-3]


def test_lateness_is_the_most_a_run_played_a_scheduled_event_late(tmp_path):
    run = {"schedule": [{"f": "kill", "late_s": 0.0}, {"f": "start", "late_s": 0.62},
                        {"f": "kill", "fired": True}, {"f": "start"}]}
    assert lateness(run) == 0.62
    assert lateness({"schedule": [{"f": "start"}]}) is None      # saved before late_s
    late = ReplayOutcome(tmp_path / "a", tmp_path / "b", None, None, 0, lateness(run))
    assert "up to 0.620 s after their recorded times" in " ".join(comparison_lines(late))
    on_time = ReplayOutcome(tmp_path / "a", tmp_path / "b", None, None, 0, 0.0)
    assert "recorded times" not in " ".join(comparison_lines(on_time))


def test_a_replay_that_ran_past_its_limit_says_so_and_how_late(tmp_path):
    schedule = [{"f": "kill", "late_s": 0.0}, {"f": "start", "late_s": 5.04, "after_stop": True},
                {"f": "kill", "late_s": 4.9, "after_stop": True}, {"f": "start"}]
    assert after_stop({"schedule": schedule}) == 2
    assert ran_late(schedule) == ("the replay ran late: 2 fault events still due at the time "
                                  "limit played after it, in order (up to 5.040 s after their "
                                  "recorded times)")
    out = " ".join(comparison_lines(ReplayOutcome(tmp_path / "a", tmp_path / "b", None, None, 0,
                                                  5.04, 2)))
    assert "up to 5.040 s after" in out and "2 of them played after it" in out
    on_time = [{"f": "kill", "late_s": 0.3}, {"f": "start"}]
    assert after_stop({"schedule": on_time}) == 0 and ran_late(on_time) is None
    assert "played after it" not in " ".join(comparison_lines(
        ReplayOutcome(tmp_path / "a", tmp_path / "b", None, None, 0, 0.3)))
