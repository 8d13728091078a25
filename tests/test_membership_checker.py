"""The membership rule of the invariants checker: one voter change in flight."""

from __future__ import annotations

from checkers.membership import changes_in_flight


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
    # The two-voter-changes simulation from tests/test_raft_bugs.py, judged
    # from its event lines as a real run's would be.
    from tests.test_raft_bugs import two_adds_across_a_partition

    def lines(on: bool) -> dict[str, list[dict]]:
        sim, _ = two_adds_across_a_partition(on)
        by_node: dict[str, list[dict]] = {}
        for _, node, event in sim.events:
            by_node.setdefault(node, []).append(event)
        return by_node

    assert [a["type"] for a in changes_in_flight(lines(True))] == [
        "two-voter-changes-in-flight"]
    assert changes_in_flight(lines(False)) == []


# --- leader-resigned-adding-voter (KIP-1186) ---------------------------------

from checkers.membership import resigned_adding_voter  # noqa: E402

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
