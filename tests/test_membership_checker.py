"""The membership rule of the invariants checker: one voter change in flight."""

from __future__ import annotations

from checkers.membership import changes_in_flight


def change(offset: int, node: str = "n4") -> dict:
    return {"event": "voter_change", "change": "add", "node": node, "offset": offset,
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
