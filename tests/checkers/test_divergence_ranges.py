"""The divergence checker one offset range at a time (as the Spark job runs
it, each range a task): the facts of every range, joined, must give exactly
the verdict of the whole check, on logs that pass and on logs with findings
in several ranges and across range boundaries."""

from __future__ import annotations

import json

import pytest

from checkers import divergence
from tests.checkers.test_divergence import dump, entry, role

PARTS = (1, 2, 3, 7, 64)


def by_ranges(dumps: dict, events: dict | None, parts: int) -> dict:
    logs = {n: divergence.entries_by_offset(d) for n, d in sorted(dumps.items())}
    facts = [divergence.range_facts(cut) for cut in divergence.split_by_offset(logs, parts)]
    # The facts travel between machines as JSON.
    return divergence.judge(dumps, json.loads(json.dumps(facts)), events)


def same_either_way(dumps: dict, events: dict | None = None) -> dict:
    whole = divergence.check(dumps, events)
    for parts in PARTS:
        assert by_ranges(dumps, events, parts) == whole, parts
    return whole


def leaders(*epochs: tuple[int, str]) -> dict:
    out: dict[str, list] = {}
    for t, (epoch, node) in enumerate(epochs):
        out.setdefault(node, []).append(role(t, node, "Leader", epoch, node))
    return out


def test_agreeing_logs_pass_in_any_number_of_ranges() -> None:
    batches = [(0, 40, 1), (41, 90, 2), (91, 130, 4)]
    dumps = {n: dump(n, batches, hw=131, epoch=4) for n in "ABC"}
    v = same_either_way(dumps, leaders((1, "A"), (2, "B"), (4, "C")))
    assert v["valid"] is True


def test_an_unconverged_tail_passes_and_is_reported_the_same() -> None:
    a = dump("A", [(0, 50, 1), (51, 60, 2)], hw=61, epoch=2)
    b = dump("B", [(0, 50, 1), (51, 60, 1)], hw=51, epoch=2)  # not fetched since
    v = same_either_way({"A": a, "B": b}, leaders((1, "A"), (2, "A")))
    assert v["valid"] is True
    assert v["stats"]["unconverged"][0]["offsets"] == [51, 60]


def test_divergences_in_several_ranges_and_across_a_boundary() -> None:
    # A and B disagree, committed on both, at three places far apart; the
    # middle one is 30 offsets long, so most cuts split it (it must stay one).
    a = dump("A", [(0, 20, 1), (21, 25, 1), (26, 100, 1), (101, 130, 1), (131, 300, 1),
                   (301, 305, 1), (306, 320, 1)], hw=321, epoch=3)
    b = dump("B", [(0, 20, 1), (21, 25, 2), (26, 100, 1), (101, 130, 2), (131, 300, 1),
                   (301, 305, 2), (306, 320, 1)], hw=321, epoch=3)
    v = same_either_way({"A": a, "B": b}, leaders((1, "A"), (2, "B")))
    found = [(x["offsets"], x["why"]) for x in v["anomalies"] if x["type"] == "divergence"]
    assert found == [([21, 25], "committed"), ([101, 130], "committed"),
                     ([301, 305], "committed")]


def test_a_difference_below_a_later_matching_entry() -> None:
    # Uncommitted on B, but B and A match again far above it: log matching
    # says the prefix must be equal too. The match is in another range.
    a = dump("A", [(0, 10, 1), (11, 19, 2), (20, 200, 3)], hw=15, epoch=3)
    b = dump("B", [(0, 10, 1), (11, 19, 1), (20, 200, 3)], hw=11, epoch=3)
    v = same_either_way({"A": a, "B": b}, leaders((1, "A"), (2, "A"), (3, "A")))
    assert [x["why"] for x in v["anomalies"]] == ["below-matching-entry"]


def test_lost_committed_holes_and_unknown_epochs_across_ranges() -> None:
    # C lost committed offsets in two places; every node lost [150, 160];
    # epoch 5 (no leader) shows up at both ends of B's log.
    full = [(0, 149, 1), (161, 299, 1)]
    a = dump("A", full, hw=300, epoch=1)
    b = dump("B", [(0, 9, 5), (10, 149, 1), (161, 289, 1), (290, 299, 5)], hw=300, epoch=1)
    c = dump("C", [(0, 39, 1), (61, 149, 1), (161, 249, 1), (271, 299, 1)], hw=300, epoch=1)
    v = same_either_way({"A": a, "B": b, "C": c}, leaders((1, "A")))
    lost = [(x["node"], x["offsets"]) for x in v["anomalies"] if x["type"] == "lost-committed"]
    assert ("C", [[40, 60], [150, 160], [250, 270]]) in lost
    assert (None, [[150, 160]]) in lost
    [unknown] = [x for x in v["anomalies"] if x["type"] == "unknown-epoch"]
    assert (unknown["node"], unknown["offsets"], unknown["count"]) == ("B", [[0, 9], [290, 299]],
                                                                       20)


def test_findings_capped_the_same_way() -> None:
    # Every other offset differs, committed: 150 one-offset divergences,
    # capped at 100 in both.
    a = dump("A", [(o, o, 1) for o in range(300)], hw=300, epoch=2)
    b = dump("B", [(o, o, 1 + o % 2) for o in range(300)], hw=300, epoch=2)
    v = same_either_way({"A": a, "B": b}, leaders((1, "A"), (2, "B")))
    assert v["anomalies"][-1]["type"] == "truncated-list"


@pytest.mark.parametrize("parts", PARTS)
def test_the_ranges_cover_every_entry_once(parts: int) -> None:
    logs = {"A": {o: entry(o, 1, 10) for o in range(5, 200, 3)},
            "B": {o: entry(o, 1, 10) for o in range(0, 50)}}
    cuts = divergence.split_by_offset(logs, parts)
    assert len(cuts) <= parts
    for n, log in logs.items():
        seen = [o for c in cuts for o in c[n]]
        assert sorted(seen) == sorted(log)
    # In offset order: every offset of a range is below the next range's.
    highs = [max(o for log in c.values() for o in log) for c in cuts]
    lows = [min(o for log in c.values() for o in log) for c in cuts]
    assert all(h < lo for h, lo in zip(highs, lows[1:], strict=False))


def test_no_dumps_is_unknown_either_way() -> None:
    assert divergence.judge({}, [divergence.range_facts({})])["valid"] == "unknown"
    assert by_ranges({}, None, 4)["valid"] == "unknown"
