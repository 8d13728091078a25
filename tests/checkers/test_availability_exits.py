"""A node whose process exited with no kill of the harness (a host fault's OOM
kill, a crash: the harness's exit records) is out from that moment until it
starts again, as if a fault had killed it. Twins: the same resignation with
and without the exit record."""

from __future__ import annotations

from checkers import availability, impairment
from tests.checkers.test_availability_health import (
    START,
    H,
    S,
    check,
    n1_resigns_and_n2_leads,
    run,
    types,
)


def start_line(t_s: float, node: str) -> dict:
    return {"t": START + int(t_s * S), "node": node, "event": "start", "epoch": 1}


def minority_killed_after_n5_died() -> H:
    """n2 and n3 killed at 23 s, started again at 30 s with n5 (the heal names
    every node that is down)."""
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "memory", {"nodes": ["n5"]})
    h.nemesis(15, "memory-restore", {"nodes": ["n5"], "oom_kills": {"n5": 1}})
    h.nemesis(23, "kill", {"nodes": ["n2", "n3"]})
    h.nemesis(30, "start", {"nodes": ["n2", "n3", "n5"]})
    return h


N5_EXIT = [{"node": "n5", "monotonic_ns": START + 13 * S, "status": -9, "signal": "SIGKILL"}]


def test_a_leader_resigning_once_an_exited_node_leaves_no_quorum_passes():
    h = minority_killed_after_n5_died()
    v = availability.check(h.ops, n1_resigns_and_n2_leads(24), run(), exits=N5_EXIT)
    assert types(v) == []


def test_the_same_resignation_without_the_exit_record_is_flagged():
    h = minority_killed_after_n5_died()
    assert types(check(h, n1_resigns_and_n2_leads(24))) == ["leader-change-while-healthy"]


def test_an_exited_node_is_back_at_its_next_start_line_or_the_next_heal_starting_it():
    h = minority_killed_after_n5_died()
    exited = {"n5": [13 * S]}
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S,
                             exited=exited)
    assert "n5" in tl.at(20 * S).out and "n5" in tl.at(29 * S).out
    # The memory fault's heal at 15 s names it but starts nothing; `start` at 30 s does.
    assert "n5" not in tl.at(31 * S).out
    # Its own start line, earlier than any heal, brings it back first.
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S,
                             exited=exited, started={"n5": [18 * S]})
    assert "n5" in tl.at(17 * S).out and "n5" not in tl.at(19 * S).out
    # Exit times come from the records and the run's start.
    assert availability.exit_times(N5_EXIT, START) == {"n5": [13 * S]}
    assert availability.exit_times(N5_EXIT, None) == {}

