"""The raft node's tick schedule (nodes/raft/ticker.py): a stalled process
drops the ticks it missed instead of replaying them in a burst."""

import pytest

from nodes.raft.ticker import next_tick_due, timers_behind

TICK = 0.05


def ticks_run(wakes: list[float], start: float = 0.0) -> int:
    """How many ticks the driver runs when it gets the CPU only at `wakes`
    (each wake runs the tick due, if one is due, then sleeps till the next)."""
    due, ran = start + TICK, 0
    for now in wakes:
        while due <= now:
            ran += 1
            due = next_tick_due(due, now, TICK)
    return ran


def test_a_tick_on_time_keeps_the_grid():
    assert next_tick_due(1.0, 1.001, TICK) == 1.0 + TICK


def test_a_tick_late_by_less_than_an_interval_keeps_the_grid():
    assert next_tick_due(1.0, 1.0 + 0.9 * TICK, TICK) == 1.0 + TICK


def test_a_tick_late_by_a_whole_interval_drops_the_missed_ones():
    assert next_tick_due(1.0, 3.0, TICK) == 3.0 + TICK


def test_the_next_tick_is_always_after_now():
    for now in (1.0, 1.049, 1.05, 1.2, 10.0):
        assert next_tick_due(1.0, now, TICK) > now


def test_a_two_second_stall_is_one_tick_not_forty():
    # The process wakes once, 2 s after its last tick: before this schedule
    # it ran 40 ticks back to back there, enough to pass a leader's
    # check-quorum window (15 ticks) before reading the fetches that arrived.
    assert ticks_run([2.0 + TICK]) == 1


def test_a_process_that_keeps_up_runs_every_tick():
    wakes = [TICK * i + 0.001 for i in range(1, 101)]
    assert ticks_run(wakes) == 100


def test_a_tick_that_keeps_the_grid_leaves_the_timers_on_time():
    assert timers_behind(1.0, 1.0 + 0.9 * TICK, TICK) == 0.0


def test_a_tick_that_drops_missed_ones_puts_the_timers_behind_by_its_lateness():
    """What the node's `tick_late` line reports: the timers ran from `due` only at `now`."""
    assert timers_behind(1.0, 3.0, TICK) == 2.0
    assert next_tick_due(1.0, 3.0, TICK) - (1.0 + TICK) == pytest.approx(2.0)
