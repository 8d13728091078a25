"""counted-not-durable and counted-then-diverged: a leader's hw line names the
durable ends it counted; each counted voter's own lines must bear them out.
Twins: each failing history beside the one that passes, one line apart."""

from __future__ import annotations

from checkers import counted_copies, divergence

THREE = ["n1", "n2", "n3"]


def start(t: int, node: str, log_end: int = 0) -> dict:
    return {"t": t, "node": node, "event": "start", "epoch": 0, "log_end": log_end,
            "voters": THREE}


def leader(t: int, node: str, epoch: int) -> dict:
    return {"t": t, "node": node, "event": "role", "role": "Leader", "epoch": epoch,
            "leader": node}


def flushed(t: int, node: str, end: int) -> dict:
    return {"t": t, "node": node, "event": "flushed", "end": end}


def cut(t: int, node: str, frm: int, to: int, reason: str = "diverging-epoch") -> dict:
    return {"t": t, "node": node, "event": "truncate", "from": frm, "to": to, "reason": reason}


def hw(t: int, node: str, value: int, epoch: int, counted: dict | None) -> dict:
    line = {"t": t, "node": node, "event": "hw", "hw": value, "epoch": epoch}
    return line if counted is None else line | {"counted": counted}


def run(n2: list[dict], counted: dict | None = None, claim_at: int = 100,
        n2_start: int = 0) -> dict[str, list[dict]]:
    """n1 leads epoch 2 and raises hw to 10 at `claim_at`, counting n1 and n2
    at 10 (n3 behind at 4); n2's own lines are `n2`, after its start."""
    counted = {"n1": 10, "n2": 10, "n3": 4} if counted is None else counted
    return {
        "n1": [start(0, "n1"), leader(50, "n1", 2), flushed(90, "n1", 10),
               hw(claim_at, "n1", 10, 2, counted)],
        "n2": [start(n2_start, "n2"), *n2],
        "n3": [start(0, "n3"), flushed(95, "n3", 4)],
    }


def types(events: dict) -> list[str]:
    return [a["type"] for a in counted_copies.check(events)[0]]


def test_a_count_the_voter_flushed_before_passes():
    assert types(run([flushed(80, "n2", 10)])) == []
    # At the very moment of the claim counts too: the voter wrote it first.
    assert types(run([flushed(100, "n2", 12)])) == []


def test_a_count_ahead_of_the_voters_flushed_end_fails():
    [a] = counted_copies.check(run([flushed(80, "n2", 7)]))[0]
    assert a["type"] == "counted-not-durable"
    assert (a["leader"], a["voter"], a["hw"], a["counted_end"], a["durable_end"]) == \
        ("n1", "n2", 10, 10, 7)
    # Flushed only after the claim: not on its disk when it was counted.
    assert types(run([flushed(80, "n2", 7), flushed(120, "n2", 10)])) == ["counted-not-durable"]


def test_a_truncation_lowers_the_durable_end():
    # n2 had flushed 12, cut back to 5 (a diverging tail), refilled: it must
    # say it flushed again before it may be counted at 10.
    refilled = [flushed(40, "n2", 12), cut(60, "n2", 12, 5), flushed(80, "n2", 10)]
    assert types(run(refilled)) == []
    not_yet = [flushed(40, "n2", 12), cut(60, "n2", 12, 5)]
    assert types(run(not_yet)) == ["counted-not-durable"]


def follower(t: int, node: str, epoch: int, of: str) -> dict:
    return {"t": t, "node": node, "event": "role", "role": "Follower", "epoch": epoch,
            "leader": of}


def test_a_voter_counted_below_the_hw_is_judged_only_while_it_follows_that_leader():
    # n3 counted at 4, its lines at 4: borne out.
    assert types(run([flushed(80, "n2", 10)], {"n1": 10, "n2": 10, "n3": 4})) == []
    # n3 counted at 6 but its lines say 4, while it follows n1 in epoch 2:
    # the leader's belief of that copy is wrong (the next commit rests on it).
    events = run([flushed(80, "n2", 10)], {"n1": 10, "n2": 10, "n3": 6})
    events["n3"].insert(1, follower(60, "n3", 2, "n1"))
    [a] = counted_copies.check(events)[0]
    assert (a["type"], a["voter"], a["counted_end"], a["durable_end"]) == \
        ("counted-not-durable", "n3", 6, 4)
    # The same count once n3 follows a later leader: it may have cut what was
    # not committed since, so only a count at or above the hw is judged.
    events["n3"][1] = follower(60, "n3", 3, "n2")
    assert types(events) == []
    # A count at or above the hw is judged whoever the voter follows.
    assert types(run([flushed(80, "n2", 10)], {"n1": 10, "n2": 10, "n3": 10})) == \
        ["counted-not-durable"]


def test_a_voter_that_moved_on_may_have_cut_what_was_not_committed():
    # n2, counted at 12 for hw 10, follows n3 in epoch 3 and cut back to 11:
    # offsets 10 and 11 were never committed. Below 10 it may not cut.
    moved = [follower(20, "n2", 3, "n3"), flushed(40, "n2", 12), cut(60, "n2", 12, 11)]
    counted = {"n1": 10, "n2": 12, "n3": 4}
    assert types(run(moved, counted)) == []
    moved[-1] = cut(60, "n2", 12, 9)
    assert types(run(moved, counted)) == ["counted-not-durable"]


def test_a_diverging_cut_below_a_counted_commit_fails():
    later = [flushed(80, "n2", 10), cut(150, "n2", 11, 6)]
    [a] = counted_copies.check(run(later))[0]
    assert a["type"] == "counted-then-diverged"
    assert a["cut"] == {"t": 150, "from": 11, "to": 6}
    # The same cut at or above the hw, or before the claim, passes.
    assert types(run([flushed(80, "n2", 10), cut(150, "n2", 11, 10)])) == []
    assert types(run([flushed(20, "n2", 3), cut(30, "n2", 5, 2), flushed(80, "n2", 10)])) == []


def test_a_voter_that_lost_durable_data_is_excused_for_older_counts():
    # n2 restarts at 70 recovering 3 of the 10 it had flushed (a fault wiped
    # flushed data): the leader, leading since 50, may still count its old report.
    lost = [flushed(40, "n2", 10), start(70, "n2", 3)]
    assert types(run(lost)) == []
    # The same loss by a recovery cut, then a restart that finds what is left.
    assert types(run([flushed(40, "n2", 10), cut(70, "n2", None, 3, "recovery")])) == []
    # A leadership that began after the loss counts afresh: judged.
    events = run(lost)
    events["n1"][1] = leader(75, "n1", 2)
    assert types(events) == ["counted-not-durable"]
    # A diverging cut after the loss says nothing of the copy counted before.
    events = run([flushed(80, "n2", 10), start(120, "n2", 2), cut(150, "n2", 5, 1)])
    assert types(events) == []


def test_one_anomaly_per_leader_epoch_voter_and_rule():
    events = run([flushed(80, "n2", 7)])
    events["n1"] += [flushed(105, "n1", 11), hw(110, "n1", 11, 2, {"n1": 11, "n2": 11, "n3": 4})]
    assert [(a["voter"], a["hw"]) for a in counted_copies.check(events)[0]] == [("n2", 10)]
    # The leader's own count is held against its own lines like any voter's.
    events["n1"].remove(flushed(105, "n1", 11))
    assert [(a["voter"], a["hw"]) for a in counted_copies.check(events)[0]] == \
        [("n2", 10), ("n1", 11)]


def test_without_counts_nothing_is_judged_and_the_reason_is_given():
    events = run([flushed(80, "n2", 7)])
    events["n1"][-1] = hw(100, "n1", 10, 2, None)
    anomalies, stats = counted_copies.check(events)
    assert anomalies == [] and stats["claims"] == 0
    assert "no hw line names" in stats["reason"]


def test_without_flushed_lines_only_later_cuts_are_judged():
    events = run([cut(150, "n2", 11, 6)])
    events = {n: [e for e in evs if e["event"] != "flushed"] for n, evs in events.items()}
    anomalies, stats = counted_copies.check(events)
    assert [a["type"] for a in anomalies] == ["counted-then-diverged"]
    assert "durable ends not judged" in stats["reason"]


def test_divergence_reports_them():
    events = run([flushed(80, "n2", 7)])
    v = divergence.check({}, events)
    assert v["valid"] is False
    assert [a["type"] for a in v["anomalies"]] == ["counted-not-durable"]
    assert v["stats"]["counted_copies"] == {"claims": 1}


# --- commit-off-counted-quorum: the hw line against its own counts -----------------


def quorum_claim(value: int, counted: dict) -> dict[str, list[dict]]:
    """n1 leads epoch 2 of five voters and raises hw to `value`, counting
    `counted`; every voter's lines bear its count out."""
    voters = sorted(counted)
    return {v: [start(0, v), *([leader(50, v, 2)] if v == "n1" else []),
                flushed(90, v, counted[v]),
                *([hw(100, v, value, 2, counted)] if v == "n1" else [])] for v in voters}


FIVE = {"n1": 16, "n2": 15, "n3": 15, "n4": 13, "n5": 12}


def test_an_hw_at_the_end_a_majority_holds_passes():
    # Sorted down 16 15 15 13 12: three of five hold 15.
    assert types(quorum_claim(15, FIVE)) == []


def test_an_hw_below_what_a_majority_holds_fails():
    # What a quorum of one copy too many gives (the fourth largest).
    [a] = counted_copies.check(quorum_claim(13, FIVE))[0]
    assert (a["type"], a["leader"], a["hw"], a["majority_end"]) == (
        "commit-off-counted-quorum", "n1", 13, 15)
    assert "withheld" in a["explanation"]


def test_an_hw_above_what_a_majority_holds_fails():
    # Only two of five hold 16: the commit rests on a minority.
    [a] = counted_copies.check(quorum_claim(16, FIVE))[0]
    assert (a["type"], a["majority_end"]) == ("commit-off-counted-quorum", 15)
    assert "miscounted" in a["explanation"]


def test_the_majority_is_of_the_voters_the_line_names():
    # Four voters (a leader that removed a fifth): a majority is three, 15.
    four = {v: e for v, e in FIVE.items() if v != "n5"}
    assert types(quorum_claim(15, four)) == []
    assert types(quorum_claim(13, four)) == ["commit-off-counted-quorum"]


def test_an_off_quorum_leader_is_named_once_per_epoch():
    events = quorum_claim(13, FIVE)
    later = {"n1": 17, "n2": 16, "n3": 16, "n4": 14, "n5": 12}
    for v, end in later.items():
        events[v].append(flushed(105, v, end))
    events["n1"].append(hw(110, "n1", 14, 2, later))
    assert types(events) == ["commit-off-counted-quorum"]
