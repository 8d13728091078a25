"""Divergence checker: KIP-279's scenarios by hand, before and after the fix,
plus each rule with data that must fail and data that must pass."""

from __future__ import annotations

import hashlib

import pytest

from checkers import divergence


def entry(offset: int, epoch: int, hw: int, tag: str = "") -> dict:
    # The digest names what was written: the same offset and epoch written by
    # the same leader gives the same bytes on every replica.
    payload = f"{offset}/{epoch}/{tag}".encode()
    return {"offset": offset, "epoch": epoch, "committed": offset < hw,
            "digest": hashlib.sha256(payload).hexdigest()[:16], "payload": None}


def dump(node: str, batches: list[tuple[int, int, int]], hw: int, epoch: int) -> dict:
    """A log made of (first offset, last offset, epoch) batches, like the KIP's tables."""
    entries = [entry(o, ep, hw) for first, last, ep in batches for o in range(first, last + 1)]
    checkpoint: list[list[int]] = []
    for first, _last, ep in batches:
        if not checkpoint or checkpoint[-1][0] != ep:
            checkpoint.append([ep, first])
    return {"node": node, "log_start_offset": 0,
            "log_end_offset": entries[-1]["offset"] + 1 if entries else 0,
            "high_watermark": hw, "epoch": epoch, "epochs": checkpoint, "entries": entries}


def role(t: int, node: str, role_name: str, epoch: int, leader: str | None) -> dict:
    return {"t": t, "node": node, "event": "role", "role": role_name, "epoch": epoch,
            "leader": leader}


def types(v: dict) -> list[str]:
    return [a["type"] for a in v["anomalies"]]


# --- KIP-279 scenario 1: preferred leader election then an immediate change --


def scenario1_events() -> dict[str, list[dict]]:
    return {"A": [role(1, "A", "Leader", 1, "A"), role(3, "A", "Follower", 2, "B"),
                  role(5, "A", "Leader", 3, "A")],
            "B": [role(1, "B", "Follower", 1, "A"), role(2, "B", "Leader", 2, "B"),
                  role(6, "B", "Follower", 3, "A")]}


def test_kip279_scenario1_before_fix_is_flagged_with_offsets_and_epochs():
    # n == 20: B appended [11, 20] in epoch 2, A answered "epoch 3 starts at
    # 21", B did not truncate and fetched [21, 30] on top of its own batch.
    a = dump("A", [(0, 10, 1), (11, 20, 1), (21, 30, 3)], hw=31, epoch=3)
    b = dump("B", [(0, 10, 1), (11, 20, 2), (21, 30, 3)], hw=31, epoch=3)
    v = divergence.check({"A": a, "B": b}, scenario1_events())
    assert v["valid"] is False
    [d] = [x for x in v["anomalies"] if x["type"] == "divergence"]
    assert d["nodes"] == ["A", "B"]
    assert d["offsets"] == [11, 20]
    assert d["sides"]["A"]["epochs"] == [1]
    assert d["sides"]["B"]["epochs"] == [2]
    assert d["sides"]["A"]["first"]["digest"] != d["sides"]["B"]["first"]["digest"]


def test_kip279_scenario1_divergence_below_a_matching_entry_even_if_uncommitted():
    # Before the high watermark moves the logs already break log matching:
    # offset 21 agrees in epoch 3, yet [11, 20] differ below it.
    a = dump("A", [(0, 10, 1), (11, 20, 1), (21, 30, 3)], hw=11, epoch=3)
    b = dump("B", [(0, 10, 1), (11, 20, 2), (21, 30, 3)], hw=11, epoch=3)
    v = divergence.check({"A": a, "B": b})
    assert v["valid"] is False
    [d] = v["anomalies"]
    assert (d["why"], d["offsets"]) == ("below-matching-entry", [11, 20])


def test_kip279_scenario1_after_fix_converges_and_passes():
    # B learns (epoch 1, end offset 21), truncates [11, 20] of epoch 2, refetches.
    a = dump("A", [(0, 10, 1), (11, 20, 1), (21, 30, 3)], hw=31, epoch=3)
    b = dump("B", [(0, 10, 1), (11, 20, 1), (21, 30, 3)], hw=31, epoch=3)
    v = divergence.check({"A": a, "B": b}, scenario1_events())
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["cluster_committed_end"] == 31


# --- KIP-279 scenario 3: fast fail-over with unclean leader election ----------


def test_kip279_scenario3_before_fix_is_flagged():
    # A asked for epoch 2, B (epochs 1, 3) answered "epoch 3 starts at 1": A
    # kept its epoch-0 offset 0 and fetched B's offset 1. HW = 2 (min.isr = 1).
    a = dump("A", [(0, 0, 0), (1, 1, 3)], hw=2, epoch=3)
    b = dump("B", [(0, 0, 1), (1, 1, 3)], hw=2, epoch=3)
    v = divergence.check({"A": a, "B": b})
    assert v["valid"] is False
    [d] = v["anomalies"]
    assert d["type"] == "divergence" and d["offsets"] == [0, 0]
    assert d["sides"]["A"]["epochs"] == [0] and d["sides"]["B"]["epochs"] == [1]


def test_kip279_scenario3_after_fix_converges_and_passes():
    # Two round trips find no common epoch: A truncates to its HW (0) and refetches.
    a = dump("A", [(0, 0, 1), (1, 1, 3)], hw=2, epoch=3)
    b = dump("B", [(0, 0, 1), (1, 1, 3)], hw=2, epoch=3)
    v = divergence.check({"A": a, "B": b})
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["leader_epochs_from"] == "epoch-checkpoints"


# --- each rule: fail and pass ------------------------------------------------


def test_uncommitted_divergent_tail_is_allowed():
    leader = dump("n1", [(0, 4, 1), (5, 7, 2)], hw=5, epoch=2)
    follower = dump("n2", [(0, 4, 1), (5, 6, 1)], hw=5, epoch=2)
    assert divergence.check({"n1": leader, "n2": follower})["valid"] is True


def test_same_epoch_different_digest_at_committed_offset_fails():
    n1 = dump("n1", [(0, 3, 1)], hw=4, epoch=1)
    n2 = dump("n2", [(0, 3, 1)], hw=4, epoch=1)
    n2["entries"][2]["digest"] = "0" * 16
    v = divergence.check({"n1": n1, "n2": n2})
    assert types(v) == ["divergence"] and v["anomalies"][0]["offsets"] == [2, 2]


def test_node_that_lost_offsets_it_had_committed_fails():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=1)
    n2 = dump("n2", [(0, 5, 1)], hw=6, epoch=1)
    events = {"n2": [{"t": 5, "node": "n2", "event": "hw", "hw": 10, "epoch": 1}]}
    v = divergence.check({"n1": n1, "n2": n2}, events)
    assert types(v) == ["lost-committed"]
    lost = v["anomalies"][0]
    assert lost["node"] == "n2" and lost["offsets"] == [[6, 9]]
    assert lost["hw_event"]["hw"] == 10


def test_lagging_follower_that_never_had_the_offsets_passes():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=1)
    n2 = dump("n2", [(0, 5, 1)], hw=6, epoch=1)
    events = {"n2": [{"t": 5, "node": "n2", "event": "hw", "hw": 6, "epoch": 1}]}
    assert divergence.check({"n1": n1, "n2": n2}, events)["valid"] is True


def test_recovery_truncation_of_a_dirty_tail_on_one_node_passes():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=1)
    n2 = dump("n2", [(0, 5, 1)], hw=6, epoch=1)
    events = {"n2": [{"t": 5, "node": "n2", "event": "hw", "hw": 10, "epoch": 1},
                     {"t": 6, "node": "n2", "event": "truncate", "to": 6, "from": 10,
                      "reason": "recovery"}]}
    v = divergence.check({"n1": n1, "n2": n2}, events)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["lagging_after_recovery"] == ["n2"]


def test_committed_offset_missing_from_every_node_fails():
    # Both nodes lost their tail in recovery: no replica holds offsets 6..9.
    n1 = dump("n1", [(0, 5, 1)], hw=6, epoch=1)
    n2 = dump("n2", [(0, 5, 1)], hw=6, epoch=1)
    trunc = {"event": "truncate", "to": 6, "from": 10, "reason": "recovery"}
    events = {n: [{"t": 5, "node": n, "event": "hw", "hw": 10, "epoch": 1},
                  dict(trunc, t=6, node=n)] for n in ("n1", "n2")}
    v = divergence.check({"n1": n1, "n2": n2}, events)
    assert types(v) == ["lost-committed"]
    assert v["anomalies"][0]["node"] is None
    assert v["anomalies"][0]["offsets"] == [[6, 9]]


def test_diverging_epoch_truncation_below_own_hw_fails():
    events = {"n2": [{"t": 5, "node": "n2", "event": "hw", "hw": 8, "epoch": 1},
                     {"t": 6, "node": "n2", "event": "truncate", "to": 4, "from": 9,
                      "reason": "diverging-epoch"}]}
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=2)
    n2 = dump("n2", [(0, 9, 1)], hw=10, epoch=2)
    v = divergence.check({"n1": n1, "n2": n2}, events)
    assert types(v) == ["committed-truncated"]
    assert v["anomalies"][0]["offsets"] == [4, 7]


def test_diverging_epoch_truncation_above_hw_passes():
    events = {"n2": [{"t": 5, "node": "n2", "event": "hw", "hw": 4, "epoch": 1},
                     {"t": 6, "node": "n2", "event": "truncate", "to": 4, "from": 9,
                      "reason": "diverging-epoch"}],
              "n1": [role(1, "n1", "Leader", 1, "n1")]}
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=2)
    n2 = dump("n2", [(0, 9, 1)], hw=10, epoch=2)
    assert divergence.check({"n1": n1, "n2": n2}, events)["valid"] is True


def test_entry_from_an_epoch_nobody_led_fails():
    n1 = dump("n1", [(0, 3, 1), (4, 5, 7)], hw=4, epoch=7)
    events = {"n1": [role(1, "n1", "Leader", 1, "n1"), role(9, "n1", "Candidate", 7, None)]}
    v = divergence.check({"n1": n1}, events)
    assert types(v) == ["unknown-epoch"]
    bad = v["anomalies"][0]
    assert (bad["node"], bad["epoch"], bad["offsets"]) == ("n1", 7, [[4, 5]])


def test_unknown_epoch_from_checkpoints_when_there_are_no_events():
    n1 = dump("n1", [(0, 3, 1)], hw=4, epoch=1)
    n1["entries"][3]["epoch"] = 2  # not in any checkpoint
    v = divergence.check({"n1": n1})
    assert types(v) == ["unknown-epoch"]


def test_no_dumps_is_unknown():
    assert divergence.check({})["valid"] == "unknown"


def test_malformed_entries_and_absurd_hw_do_not_crash_or_hang():
    n1 = dump("n1", [(0, 3, 1)], hw=4, epoch=1)
    n1["entries"].append({"offset": "x"})
    events = {"n1": [{"t": 1, "node": "n1", "event": "hw", "hw": 10**15, "epoch": 1}]}
    v = divergence.check({"n1": n1}, events)
    assert v["anomalies"][0]["offsets"] == [[4, 10**15 - 1]]


# --- a follower that has not caught up yet is not a divergence --------------


def test_uncommitted_stale_tail_on_a_lagging_follower_is_unconverged_not_invalid():
    # n1 led epoch 1 and appended 10-14 that never committed; n2 and n3 moved on in
    # epoch 2 and committed 10-19. n1 was cut off to the end and never fetched again.
    lagging = dump("n1", [(0, 14, 1)], hw=10, epoch=1)
    leader = dump("n2", [(0, 9, 1), (10, 19, 2)], hw=20, epoch=2)
    follower = dump("n3", [(0, 9, 1), (10, 19, 2)], hw=20, epoch=2)
    v = divergence.check({"n1": lagging, "n2": leader, "n3": follower})
    assert v["valid"] is True, v["anomalies"]
    (first, *_rest) = v["stats"]["unconverged"]
    assert first["node"] == "n1" and first["offsets"] == [10, 14]
    assert first["epochs"]["n1"] == [1]


def test_the_same_offsets_committed_on_both_sides_are_divergence():
    # As above, but n1 believes 10-14 committed: two committed histories.
    lagging = dump("n1", [(0, 14, 1)], hw=15, epoch=1)
    leader = dump("n2", [(0, 9, 1), (10, 19, 2)], hw=20, epoch=2)
    v = divergence.check({"n1": lagging, "n2": leader})
    assert v["valid"] is False
    (a,) = [a for a in v["anomalies"] if a["type"] == "divergence"]
    assert a["why"] == "committed" and a["offsets"] == [10, 14]


# --- the committed-truncation boundary, and which truncation excuses a loss ----


def _truncation_after_hw(hw: int, to: int, reason: str = "diverging-epoch") -> dict:
    return {"n2": [{"t": 5, "node": "n2", "event": "hw", "hw": hw, "epoch": 1},
                   {"t": 6, "node": "n2", "event": "truncate", "to": to, "from": 9,
                    "reason": reason}],
            "n1": [role(1, "n1", "Leader", 1, "n1")]}


def test_truncation_to_exactly_hw_keeps_every_committed_offset_and_passes():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=2)
    n2 = dump("n2", [(0, 9, 1)], hw=10, epoch=2)
    v = divergence.check({"n1": n1, "n2": n2}, _truncation_after_hw(hw=8, to=8))
    assert v["valid"] is True, v["anomalies"]


def test_truncation_to_hw_minus_one_cuts_the_last_committed_offset_and_fails():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=2)
    n2 = dump("n2", [(0, 9, 1)], hw=10, epoch=2)
    v = divergence.check({"n1": n1, "n2": n2}, _truncation_after_hw(hw=8, to=7))
    assert types(v) == ["committed-truncated"]
    [a] = v["anomalies"]
    assert a["node"] == "n2" and a["offsets"] == [7, 7]


def _lost_after_truncations(reasons: list[str]) -> dict:
    """n2 reported hw 10, then truncated once per reason (the last one to 6),
    and ends holding [0, 5]: committed offsets 6..9 are gone from it."""
    evs: list[dict] = [{"t": 5, "node": "n2", "event": "hw", "hw": 10, "epoch": 1}]
    for i, reason in enumerate(reasons):
        evs.append({"t": 6 + i, "node": "n2", "event": "truncate", "to": 6 + len(reasons) - 1 - i,
                    "from": 10, "reason": reason})
    return {"n2": evs, "n1": [role(1, "n1", "Leader", 1, "n1")]}


def test_an_earlier_recovery_truncation_does_not_excuse_a_later_committed_loss():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=1)
    n2 = dump("n2", [(0, 5, 1)], hw=6, epoch=1)
    v = divergence.check({"n1": n1, "n2": n2},
                         _lost_after_truncations(["recovery", "diverging-epoch"]))
    lost = [a for a in v["anomalies"] if a["type"] == "lost-committed"]
    assert len(lost) == 1 and lost[0]["node"] == "n2" and lost[0]["offsets"] == [[6, 9]]
    assert "n2" not in v["stats"]["lagging_after_recovery"]


def test_a_node_whose_last_truncation_was_recovery_is_lagging_not_lost():
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=1)
    n2 = dump("n2", [(0, 5, 1)], hw=6, epoch=1)
    v = divergence.check({"n1": n1, "n2": n2},
                         _lost_after_truncations(["diverging-epoch", "recovery"]))
    assert "lost-committed" not in types(v)
    assert v["stats"]["lagging_after_recovery"] == ["n2"]


# --- reading dumps that leave fields out; splitting ranges (mutants that survived)


def test_committed_end_comes_from_the_hw_or_the_committed_flags_whichever_is_further():
    flagged = {o: {"offset": o, "epoch": 1, "committed": o < 4} for o in range(6)}
    assert divergence.committed_end({"high_watermark": 5}, {}) == 5
    assert divergence.committed_end({}, flagged) == 4
    assert divergence.committed_end({"high_watermark": "5"}, flagged) == 4  # not an int
    assert divergence.committed_end({"high_watermark": 2}, flagged) == 4
    assert divergence.committed_end({"high_watermark": 6}, flagged) == 6
    unflagged = {o: {"offset": o, "epoch": 1} for o in range(6)}
    assert divergence.committed_end({"high_watermark": 1}, unflagged) == 1


def test_holes_and_ranges():
    assert divergence.holes([0, 1, 5, 9], 0, 6) == [[2, 4]]
    assert divergence.holes([0, 1, 5, 9], 0, 5) == [[2, 4]]
    assert divergence.holes([], 3, 5) == [[3, 4]]
    assert divergence.holes([3, 4], 3, 5) == []
    assert divergence.ranges([7, 1, 2, 3, 5]) == [[1, 3], [5, 5], [7, 7]]


def test_a_dump_without_offsets_fields_is_read_from_its_entries():
    # A log compacted below offset 5 and dumped without log_start/end fields:
    # offsets 0..4 are not lost, and its end is one past its last entry.
    n1 = dump("n1", [(0, 9, 1)], hw=10, epoch=1)
    n2 = dump("n2", [(5, 9, 1)], hw=10, epoch=1)
    del n2["log_start_offset"], n2["log_end_offset"]
    v = divergence.check({"n1": n1, "n2": n2}, {"n1": [role(1, "n1", "Leader", 1, "n1")]})
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["log_end_offset"] == {"n1": 10, "n2": 10}
    n2["entries"] = []
    v = divergence.check({"n1": n1, "n2": n2}, {"n1": [role(1, "n1", "Leader", 1, "n1")]})
    assert v["stats"]["log_end_offset"]["n2"] == 0


@pytest.mark.parametrize("hw", [4, 5, 7])
def test_a_mismatch_run_is_split_where_its_reason_changes(hw):
    # Offsets 3..7 differ; both committed up to hw; they agree again at 8. So
    # 3..hw-1 differ where both committed, hw..7 below a matching entry.
    a = dump("A", [(0, 9, 1)], hw=hw, epoch=2)
    b = dump("B", [(0, 2, 1), (3, 7, 2), (8, 9, 1)], hw=hw, epoch=2)
    v = divergence.check({"A": a, "B": b}, {"A": [role(1, "A", "Leader", 1, "A"),
                                                  role(2, "A", "Leader", 2, "A")]})
    runs = [(d["why"], d["offsets"], d["count"]) for d in v["anomalies"]
            if d["type"] == "divergence"]
    assert runs == [("committed", [3, hw - 1], hw - 3),
                    ("below-matching-entry", [hw, 7], 8 - hw)]
    assert v["anomalies"][0]["sides"]["B"]["first"] == {
        "offset": 3, "epoch": 2, "digest": b["entries"][3]["digest"], "committed": True}


def test_a_dump_without_log_end_gets_it_from_the_offsets_it_holds():
    # Both nodes lost offsets 3-4 below their HW 5; their dumps give no
    # log_end_offset, so the findings give the end of what each holds.
    dumps = {}
    for n in ("n1", "n2"):
        d = dump(n, [(0, 2, 1)], hw=5, epoch=1)
        del d["log_end_offset"]
        dumps[n] = d
    v = divergence.check(dumps)
    lost = [a for a in v["anomalies"] if a["type"] == "lost-committed"]
    assert [(a["node"], a["offsets"], a["log_end_offset"]) for a in lost] == [
        ("n1", [[3, 4]], 3), ("n2", [[3, 4]], 3), (None, [[3, 4]], {"n1": 3, "n2": 3})]
    for d in dumps.values():
        d["high_watermark"] = 3
        for e in d["entries"]:
            e["committed"] = e["offset"] < 3
    v = divergence.check(dumps)
    assert v["valid"] is True and v["stats"]["log_end_offset"] == {"n1": 3, "n2": 3}


def test_leader_epochs_from_checkpoints_skip_malformed_pairs():
    d = dump("n1", [(0, 2, 2)], hw=3, epoch=2)
    d["epochs"] = [[], ["x", 3], 5, [2, 0], (4, 3)]
    assert divergence.known_leader_epochs({"n1": d}, None) == ({2, 4}, "epoch-checkpoints")


def test_split_by_offset_cuts_equal_ranges_with_every_node_in_each():
    logs = {"a": {o: {"offset": o} for o in range(6)}, "b": {o: {"offset": o} for o in (0, 5)}}
    cuts = divergence.split_by_offset(logs, 3)
    assert [{n: sorted(c[n]) for n in c} for c in cuts] == [
        {"a": [0, 1], "b": [0]}, {"a": [2, 3], "b": []}, {"a": [4, 5], "b": [5]}]
    assert divergence.split_by_offset(logs, 1) == [logs]
