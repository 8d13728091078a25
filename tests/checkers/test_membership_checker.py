"""The membership rule of the invariants checker: one voter change in flight."""

from __future__ import annotations

from nodes.raft.checkers.membership import changes_in_flight


def change(offset: int, node: str = "n4") -> dict:
    return {"event": "voter_change", "change": "add", "voter": node, "offset": offset,
            "epoch": 2}


def voters(state: str, offset: int, vs: list[str]) -> dict:
    return {"event": "voters", "state": state, "offset": offset, "voters": vs, "epoch": 2}


FOUR = ["n1", "n2", "n3", "n4"]


def test_changes_one_after_another_commit_pass():
    lines = [change(5), voters("appended", 5, FOUR), voters("committed", 5, FOUR),
             change(9, "n5"), voters("appended", 9, FOUR + ["n5"])]
    assert changes_in_flight({"n1": lines}) == []


def test_a_change_while_the_last_is_uncommitted_fails():
    lines = [change(5), voters("appended", 5, FOUR), change(6, "n5"),
             voters("appended", 6, FOUR + ["n5"]), voters("committed", 6, FOUR + ["n5"])]
    found = changes_in_flight({"n1": lines})
    assert [(a["type"], a["offset"], a["in_flight"]["offset"]) for a in found] == [
        ("two-voter-changes-in-flight", 6, 5)]


def test_a_truncated_record_is_no_longer_in_flight():
    lines = [voters("appended", 5, FOUR), voters("truncated", 2, ["n1", "n2", "n3"]),
             change(5)]
    assert changes_in_flight({"n2": lines}) == []


def test_a_restart_forgets_what_was_pending():
    lines = [voters("appended", 5, FOUR), {"event": "start", "epoch": 2}, change(5)]
    assert changes_in_flight({"n1": lines}) == []


def test_the_core_event_lines_of_the_switch_are_flagged_and_the_correct_ones_not():
    # The two-voter-changes simulation from tests/raft/test_raft_bugs.py, judged
    # from its event lines as a real run's would be.
    from nodes.raft.bugs import TWO_VOTER_CHANGES
    from tests.raft.test_raft_bugs import two_adds_across_a_partition

    def lines(on: bool) -> dict[str, list[dict]]:
        sim, _ = two_adds_across_a_partition(*([TWO_VOTER_CHANGES] if on else []))
        by_node: dict[str, list[dict]] = {}
        for _, node, event in sim.events:
            by_node.setdefault(node, []).append(event)
        return by_node

    assert [a["type"] for a in changes_in_flight(lines(True))] == [
        "two-voter-changes-in-flight"]
    assert changes_in_flight(lines(False)) == []


# --- leader-resigned-adding-voter (KIP-1186) ---------------------------------

from nodes.raft.checkers.membership import resigned_adding_voter  # noqa: E402

START = 1_000


def at(t: int, ev: dict) -> dict:
    return {"t": START + t} | ev


def adding_then(last: dict) -> dict[str, list[dict]]:
    return {"n1": [at(10, change(5, "n2")), at(11, voters("appended", 5, ["n1", "n2"])),
                   at(500, last)]}


RESIGNED = {"event": "role", "role": "Resigned", "epoch": 2, "leader": "n1"}
NO_FAULTS: list[dict] = []


def test_a_leader_resigning_while_its_add_is_uncommitted_fails():
    found = resigned_adding_voter(adding_then(RESIGNED), NO_FAULTS, START, 10_000)
    assert [(a["type"], a["voter"]) for a in found] == [("leader-resigned-adding-voter", "n2")]


def test_resigning_after_the_add_committed_or_under_a_fault_or_at_the_stop_passes():
    events = adding_then(voters("committed", 5, ["n1", "n2"]))
    events["n1"].append(at(600, RESIGNED))
    assert resigned_adding_voter(events, NO_FAULTS, START, 10_000) == []
    cut = [{"start": 100, "end": 200, "cut": {("n1", "n2")}, "down": set()}]
    assert resigned_adding_voter(adding_then(RESIGNED), cut, START, 10_000) == []
    assert resigned_adding_voter(adding_then(RESIGNED), NO_FAULTS, START, 400) == []


def test_the_autojoin_switch_is_flagged_from_its_event_lines_and_the_fix_is_not():
    from nodes.raft import bugs
    from nodes.raft.sim import Sim

    def lines(on: bool) -> dict[str, list[dict]]:
        sim = Sim(("n1",), seed=5, observers=("n2",),
                  config={"bugs": frozenset({bugs.ACK_WHEN_COMMITTED_AUTOJOIN})} if on else None)
        sim.nodes["n2"].config.auto_join = True
        sim.settle()
        sim.propose(b"x")
        sim.run(400)
        by_node: dict[str, list[dict]] = {}
        for tick, node, event in sim.events:
            by_node.setdefault(node, []).append({"t": START + tick} | event)
        return by_node

    assert resigned_adding_voter(lines(True), NO_FAULTS, START, 10_000)
    assert resigned_adding_voter(lines(False), NO_FAULTS, START, 10_000) == []


# --- voter-change-incomplete (KIP-853) ----------------------------------------------

from nodes.raft.checkers.membership import changes_incomplete  # noqa: E402

BOUND = 2_000
LEADS = {"event": "role", "role": "Leader", "epoch": 2, "leader": "n1"}


def change_then(*after: tuple[int, dict]) -> dict[str, list[dict]]:
    """n1 leads and adds n2 at t=10; `after` are its later lines."""
    return {"n1": [at(0, LEADS), at(10, change(5, "n2")),
                   at(11, voters("appended", 5, ["n1", "n2"]))]
            + [at(t, ev) for t, ev in after]}


def incomplete(events: dict, faults: list[dict] = NO_FAULTS, end: int = 10_000) -> list:
    return [(a["type"], a["voter"]) for a in changes_incomplete(events, faults, START, end,
                                                                  BOUND)]


def test_a_change_that_commits_within_the_bound_passes():
    assert incomplete(change_then((1_500, voters("committed", 5, ["n1", "n2"])))) == []


def test_a_change_that_fails_cleanly_within_the_bound_passes():
    assert incomplete(change_then((1_000, RESIGNED))) == []
    assert incomplete(change_then((1_000, voters("truncated", 4, ["n1"])))) == []
    assert incomplete(change_then((1_000, {"event": "start", "epoch": 2}))) == []


def test_a_change_still_open_past_the_bound_fails():
    assert incomplete(change_then()) == [("voter-change-incomplete", "n2")]
    # Committed at last, but too late.
    late = change_then((2_500, voters("committed", 5, ["n1", "n2"])))
    found = changes_incomplete(late, NO_FAULTS, START, 10_000, BOUND)
    assert [(a["type"], a["offset"], a["changed_s"]) for a in found] == [
        ("voter-change-incomplete", 5, 0.0)]


def test_a_change_under_a_fault_or_cut_short_by_the_end_is_not_judged():
    paused = [{"start": 500, "end": 700, "cut": set(), "down": {"n3"}}]
    assert incomplete(change_then(), paused) == []
    assert incomplete(change_then(), end=1_500) == []


def test_the_core_commits_a_change_within_the_bound_and_a_stalled_one_is_flagged():
    from nodes.raft.sim import Sim

    def lines(stall: bool) -> dict[str, list[dict]]:
        # One tick stands for 1 ms of the bound here (BOUND = 2,000 ticks).
        sim = Sim(("n1", "n2", "n3"), seed=2, observers=("n4",))
        leader = sim.settle()
        sim.propose(b"x")
        sim.run(50)
        if stall:   # no voter can make the new record durable
            for name in ("n1", "n2", "n3", "n4"):
                sim.stall_flush(name)
        assert isinstance(sim.change_voters("add", "n4", ack_when_committed=False), tuple)
        sim.run(2_500)
        assert sim.leader() == leader
        by_node: dict[str, list[dict]] = {}
        for tick, node, event in sim.events:
            by_node.setdefault(node, []).append({"t": START + tick} | event)
        return by_node

    assert incomplete(lines(stall=False)) == []
    assert incomplete(lines(stall=True)) == [("voter-change-incomplete", "n4")]


# --- voter-changes-out-of-order (KIP-853) -----------------------------------------

def out_of_order(lines: list[dict]) -> list[tuple]:
    from nodes.raft.checkers.membership import changes_out_of_order
    return [(a["type"], a["node"], a["offset"], a["in_force"])
            for a in changes_out_of_order({"n2": lines})]


THREE = ["n1", "n2", "n3"]


def test_voter_sets_adopted_in_log_order_pass():
    lines = [{"event": "start", "voters": THREE}, voters("appended", 5, FOUR),
             voters("committed", 5, FOUR), voters("appended", 9, FOUR + ["n5"]),
             voters("committed", 5, FOUR)]  # a committed line is no adoption
    assert out_of_order(lines) == []


def test_an_older_voter_set_adopted_after_a_newer_one_fails():
    # The same adoptions, swapped: the record at 5 put in force after 9's.
    lines = [{"event": "start", "voters": THREE}, voters("appended", 9, FOUR + ["n5"]),
             voters("appended", 5, FOUR)]
    assert out_of_order(lines) == [("voter-changes-out-of-order", "n2", 5, 9)]


def test_falling_back_after_truncating_below_the_newer_record_passes():
    # KIP-853: truncating the record in force puts the previous one back. The
    # core reports the set before its truncate line; either order is fine.
    for cut in ({"event": "truncate", "from": 12, "to": 9, "reason": "diverged"},):
        assert out_of_order([voters("appended", 5, FOUR), voters("appended", 9, FOUR + ["n5"]),
                             voters("truncated", 5, FOUR), cut]) == []
        assert out_of_order([voters("appended", 5, FOUR), voters("appended", 9, FOUR + ["n5"]),
                             cut, voters("truncated", 5, FOUR)]) == []


def test_a_truncation_above_the_newer_record_does_not_excuse_a_fallback():
    cut = {"event": "truncate", "from": 12, "to": 10, "reason": "diverged"}
    lines = [voters("appended", 9, FOUR + ["n5"]), cut, voters("truncated", 5, FOUR)]
    assert out_of_order(lines) == [("voter-changes-out-of-order", "n2", 5, 9)]


def test_a_restart_starts_the_order_over():
    # A power cut loses the unflushed record at 9 and reports nothing of it.
    lines = [voters("appended", 9, FOUR + ["n5"]), {"event": "start", "voters": FOUR},
             voters("appended", 5, FOUR)]
    assert out_of_order(lines) == []


def test_the_cores_own_lines_of_a_truncated_voters_record_pass():
    # The core's lines as it writes them (the set, then the truncate line),
    # for KIP-853's fallback; without the truncate line the rule fires.
    from nodes.raft import voters as vs
    from nodes.raft.checkers.membership import changes_out_of_order
    from tests.raft.test_raft_membership import make, msg

    follower, lines = make("n1"), []
    steps = [
        msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"),
        msg("fetch_response", "n2", "n1", 2, leader="n2", error=None, fetch_offset=0,
            last_fetched_epoch=0, entries=[[0, 1, b"a"], [1, 2, vs.record_payload(["n1", "n2"])]],
            diverging_epoch=None, diverging_end_offset=None, high_watermark=1),
        msg("begin_quorum_epoch", "n3", "n1", 3, leader="n3"),
        msg("fetch_response", "n3", "n1", 3, leader="n3", error=None, fetch_offset=2,
            last_fetched_epoch=2, entries=[], diverging_epoch=1, diverging_end_offset=1,
            high_watermark=1),
    ]
    for step in steps:
        follower.receive(step)
        lines += follower.ready().events
    kinds = [(e["event"], e.get("state"), e.get("offset"), e.get("to")) for e in lines
             if e["event"] in ("voters", "truncate")]
    assert kinds == [("voters", "appended", 1, None), ("voters", "truncated", -1, None),
                     ("truncate", None, None, 1)]
    assert changes_out_of_order({"n1": lines}) == []
    without_cut = [e for e in lines if e["event"] != "truncate"]
    assert [(a["node"], a["offset"], a["in_force"])
            for a in changes_out_of_order({"n1": without_cut})] == [("n1", -1, 1)]
