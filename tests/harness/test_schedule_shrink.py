"""Schedule shrinking's search (harness.run.schedule_shrink): episodes, the
candidate schedules, the time cut, and delta debugging with its budget and
resume. The replays here are a table of which episodes make the bug show,
so the search itself is what is tested; the slow test shrinks a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run import schedule_shrink
from harness.run.reproduction import shows_failure
from harness.run.schedule_shrink import (
    STATE_JSON,
    TAIL_S,
    Plan,
    ScheduleShrink,
    candidate_schedule,
    cut_time,
    episodes,
    later,
    plan_schedule,
    result_lines,
    shorter,
    signature,
    span,
)

EVENTS = [
    {"time": 1.0, "action": "inject", "fault": "kill", "params": {}, "seed": 1},
    {"time": 2.0, "action": "heal", "fault": "kill", "params": {}, "seed": 0},
    {"time": 3.0, "action": "inject", "fault": "power-cut", "params": {}, "seed": 2},
    {"time": 3.5, "action": "inject", "fault": "lose-unsynced", "params": {}, "seed": 0},
    {"time": 4.0, "action": "heal", "fault": "power-cut", "params": {}, "seed": 0},
    {"time": 5.0, "action": "heal", "fault": "pause", "params": {}, "seed": 0},
    {"time": 6.0, "action": "inject", "fault": "partition", "params": {}, "seed": 3},
    {"time": 7.0, "action": "heal", "fault": "partition", "params": {}, "seed": 0},
    {"time": 8.0, "action": "inject", "fault": "kill", "params": {}, "seed": 4},
]
INVALID = {"valid": False, "checkers": {"linearizability": {
    "valid": False, "anomalies": [{"type": "nonlinearizable"}]}}}
VALID = {"valid": True, "checkers": {"linearizability": {"valid": True, "anomalies": []}}}


def test_episodes_keep_a_faults_sub_events_with_it() -> None:
    assert episodes(EVENTS) == [[0, 1], [2, 3, 4], [5], [6, 7], [8]]
    assert episodes([]) == []


def test_candidate_schedule_and_time_cut() -> None:
    eps = episodes(EVENTS)
    got = candidate_schedule(EVENTS, eps, [3, 1])
    assert [e["time"] for e in got] == [3.0, 3.5, 4.0, 6.0, 7.0]
    assert cut_time(got, 30.0) == 10.0 and cut_time(got, 8.0) == 8.0


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({
        "run_id": "run", "config": {"db": "raft", "workload": "register", "time_limit": 30.0},
        "schedule": [{"time": int(e["time"] * 1e9), "f": e["fault"].split(":")[0]
                      if e["action"] == "inject" else "heal",
                      "fault": e["fault"], "value": None} for e in EVENTS],
        "planned_schedule": [{"action": e["action"], "fault": e["fault"], "seed": e["seed"],
                              "params": {}} for e in EVENTS],
        "schedule_offset_ns": 0}))
    (d / "verdicts.json").write_text(json.dumps(INVALID))
    return d


def fake_replays(calls: list, needs: set[str], failing: int | None = None):
    """Replays that fail when every fault in `needs` is injected (only the
    first `failing` of a batch, if given)."""
    def run_replays(run_dir, config, results, count, parallel, say, extra=None):
        calls.append((config["time_limit"], [e["fault"] for e in config["schedule"]]))
        injected = {e["fault"] for e in config["schedule"] if e["action"] == "inject"}
        return [{"run_dir": f"/r/{len(calls)}-{i}", "error": None,
                 "verdicts": INVALID if needs <= injected and i < (failing or count)
                 else VALID} for i in range(count)]
    return run_replays


def test_delta_debugging_keeps_only_the_episode_the_bug_needs(run_dir, tmp_path,
                                                                monkeypatch) -> None:
    calls: list = []
    monkeypatch.setattr(schedule_shrink, "run_replays", fake_replays(calls, {"power-cut"}))
    result = ScheduleShrink(run_dir, tmp_path, 2, 1, 1000, lambda s: None).run()
    assert result["kept"] == [1] and result["faults_after"] == 2   # power cut + its sub-fault
    assert result["faults_before"] == 5 and result["time_limit"] == 7.0
    assert result["reproduced"] == result["count"] == 2 and result["run_dir"] == \
        f"/r/{len(calls)}-0"
    assert calls[0][0] == 30.0 and len(calls[0][1]) == len(EVENTS)


def test_a_schedule_that_does_not_fail_is_not_shrunk(run_dir, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(schedule_shrink, "run_replays", fake_replays([], {"no-such-fault"}))
    result = ScheduleShrink(run_dir, tmp_path, 2, 1, 1000, lambda s: None).run()
    assert result.get("run_dir") is None and "did not show the failure" in result["why"]


def test_a_spent_budget_stops_and_the_same_command_resumes(run_dir, tmp_path,
                                                           monkeypatch) -> None:
    first: list = []
    monkeypatch.setattr(schedule_shrink, "run_replays", fake_replays(first, {"partition"}))
    stopped = ScheduleShrink(run_dir, tmp_path, 2, 1, 6, lambda s: None).run()
    assert stopped["stopped"] and len(first) == 3               # 6 replays, 2 a candidate
    assert len(json.loads((run_dir / STATE_JSON).read_text())["tried"]) == 3
    again: list = []
    monkeypatch.setattr(schedule_shrink, "run_replays", fake_replays(again, {"partition"}))
    done = ScheduleShrink(run_dir, tmp_path, 2, 1, 1000, lambda s: None).run()
    assert done["kept"] == [3] and not done["stopped"]
    assert not set(map(str, again)) & set(map(str, first))     # nothing tried twice


def test_a_flaky_failure_sets_the_bar_at_the_full_schedules_rate(run_dir, tmp_path,
                                                                  monkeypatch) -> None:
    monkeypatch.setattr(schedule_shrink, "run_replays",
                        fake_replays([], {"kill", "partition"}, failing=2))
    result = ScheduleShrink(run_dir, tmp_path, 4, 1, 1000, lambda s: None).run()
    assert result["needed_rate"] == 0.5 and (result["reproduced"], result["count"]) == (2, 4)
    assert sorted(result["kept"]) in ([0, 3], [3, 4])     # a kill and the partition


def test_a_replay_showing_more_than_the_original_still_shows_it() -> None:
    more = {"valid": False, "checkers": {**INVALID["checkers"], "durability": {
        "valid": False, "anomalies": [{"type": "lost-write"}]}}}
    assert shows_failure(INVALID, more) and not shows_failure(more, INVALID)
    assert not shows_failure(INVALID, VALID) and not shows_failure(VALID, VALID)




def test_a_plan_scales_and_moves_an_episodes_events_in_time_order() -> None:
    eps = episodes(EVENTS)
    plan = Plan((1, 3), 30.0).with_factor(1, 0.5).with_delay(3, 2.0)
    got = plan_schedule(EVENTS, eps, plan)
    assert [(e["time"], e["fault"]) for e in got] == [
        (3.0, "power-cut"), (3.25, "lose-unsynced"), (3.5, "power-cut"),
        (8.0, "partition"), (9.0, "partition")]
    assert signature(plan) == "1,3@30;1x0.5;3+2"
    assert signature(Plan((3, 1), 30.0)) == "1,3@30"          # the old state files' keys
    assert EVENTS[2]["time"] == 3.0                            # the original is untouched


def test_shorter_halves_a_healed_episode_down_to_the_minimum() -> None:
    eps = episodes(EVENTS)
    plan = Plan((0, 1, 4), 30.0)
    half = shorter(EVENTS, eps, plan, 0)
    assert half is not None and half.factor(0) == 0.5         # kill held 1 s -> 0.5 s
    assert shorter(EVENTS, eps, half, 0) is None               # 0.25 s is under MIN_FAULT_S
    assert shorter(EVENTS, eps, plan, 4) is None               # never healed: no length


def test_later_moves_into_half_the_room_and_never_past_the_next_episode() -> None:
    eps = episodes(EVENTS)
    plan = Plan((0, 3), 30.0)
    moved = later(EVENTS, eps, plan, 0)                        # kill 1-2 s, partition at 6 s
    assert moved is not None and moved.delay(0) == 2.0
    assert span(EVENTS, eps[0], moved, 0) == (3.0, 4.0)
    last = later(EVENTS, eps, plan, 3)                         # room up to 30 - TAIL_S
    assert last is not None and last.delay(3) == round((30.0 - TAIL_S - 7.0) / 2, 3)
    tight = Plan((0, 3), 10.0)                                 # partition ends at 7 = 10 - 3
    assert later(EVENTS, eps, tight, 3) is None


def test_the_kept_episode_is_shortened_while_the_failure_shows(run_dir, tmp_path,
                                                               monkeypatch) -> None:
    calls: list = []

    def replays(run_dir_, config, results, count, parallel, say, extra=None):
        calls.append(config["schedule"])
        kill = [e["time"] for e in config["schedule"] if e["fault"] == "kill"]
        # fails when a kill is held at least 0.5 s (held 1 s in the original)
        shows = len(kill) >= 2 and kill[1] - kill[0] >= 0.5
        return [{"run_dir": f"/r/{len(calls)}-{i}", "error": None,
                 "verdicts": INVALID if shows else VALID} for i in range(count)]
    monkeypatch.setattr(schedule_shrink, "run_replays", replays)
    result = ScheduleShrink(run_dir, tmp_path, 2, 1, 1000, lambda s: None).run()
    assert result["kept"] == [0] and result["shortened"] == {"0": 0.5}
    assert [e["time"] for e in result["schedule"]] == [1.0, 1.5]
    assert result["time_limit"] == 5.0                         # ceil(1.5 + TAIL_S)
    assert result["moved_later_s"] == {}                       # no room left in 5 s
    assert not result["stopped"]


def test_a_budget_stop_reports_the_best_schedule_so_far(run_dir, tmp_path,
                                                        monkeypatch) -> None:
    monkeypatch.setattr(schedule_shrink, "run_replays", fake_replays([], {"partition"}))
    stopped = ScheduleShrink(run_dir, tmp_path, 2, 1, 8, lambda s: None).run()
    assert stopped["stopped"] and stopped["run_dir"] is not None
    assert "partition" in {e["fault"] for e in stopped["schedule"]}
    assert stopped["faults_after"] < stopped["faults_before"]
    lines = result_lines(stopped, 2)
    assert lines[0].startswith("schedule shrink so far") and lines[-1].startswith(
        "not finished")


def test_the_hunts_window_does_not_swallow_its_moves() -> None:
    hunted = [{"time": 0.0, "action": "inject", "fault": "hunt", "params": {}, "seed": 1},
              {"time": 2.0, "action": "inject", "fault": "kill", "params": {}, "seed": 2},
              {"time": 3.0, "action": "heal", "fault": "kill", "params": {}, "seed": 0},
              {"time": 5.0, "action": "inject", "fault": "partition", "params": {}, "seed": 3},
              {"time": 7.0, "action": "heal", "fault": "partition", "params": {}, "seed": 0},
              {"time": 20.0, "action": "heal", "fault": "hunt", "params": {}, "seed": 0}]
    assert episodes(hunted) == [[0, 5], [1, 2], [3, 4]]
    assert episodes(hunted, frozenset()) == [[0, 1, 2, 3, 4, 5]]   # any other fault does


def test_a_failure_that_needs_no_fault_shrinks_to_none(run_dir, tmp_path,
                                                       monkeypatch) -> None:
    calls: list = []
    monkeypatch.setattr(schedule_shrink, "run_replays", fake_replays(calls, set()))
    result = ScheduleShrink(run_dir, tmp_path, 2, 1, 1000, lambda s: None).run()
    assert result["kept"] == [] and result["faults_after"] == 0
    assert result["time_limit"] == 3.0 and len(calls) == 3    # whole, none, none in 3 s
