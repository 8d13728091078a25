"""committed-without-quorum: a leader's hw claim against the diverging-epoch
truncations of its voters afterwards. Twins: the same claim with one
non-holder fewer (the rest still a majority) passes."""

from __future__ import annotations

from checkers import commit_quorum, divergence

FIVE = ["n1", "n2", "n3", "n4", "n5"]


def start(t: int, node: str, voters: list[str]) -> dict:
    return {"t": t, "node": node, "event": "start", "epoch": 0, "log_end": 0,
            "voters": voters}


def leader(t: int, node: str, epoch: int) -> dict:
    return {"t": t, "node": node, "event": "role", "role": "Leader", "epoch": epoch,
            "leader": node}


def follower(t: int, node: str, epoch: int, of: str) -> dict:
    return {"t": t, "node": node, "event": "role", "role": "Follower", "epoch": epoch,
            "leader": of}


def hw(t: int, node: str, value: int, epoch: int) -> dict:
    return {"t": t, "node": node, "event": "hw", "hw": value, "epoch": epoch}


def cut(t: int, node: str, frm: int, to: int, reason: str = "diverging-epoch") -> dict:
    return {"t": t, "node": node, "event": "truncate", "from": frm, "to": to, "reason": reason}


def run(cut_nodes: dict[str, dict], voters_changes: list[dict] | None = None,
        claim_at: int = 100) -> dict[str, list[dict]]:
    """n1 leads epoch 3 on five voters and claims hw 10 at `claim_at`; each
    node of `cut_nodes` adds its own later lines."""
    events = {n: [start(0, n, FIVE)] for n in FIVE}
    events["n1"] += [leader(50, "n1", 3), *(voters_changes or []), hw(claim_at, "n1", 10, 3)]
    for n in FIVE[1:]:
        events[n] += [follower(60, n, 3, "n1")]
    for n, ev in cut_nodes.items():
        events[n].append(ev)
    return events


def test_two_of_five_never_holding_leaves_a_majority():
    events = run({"n4": cut(200, "n4", 12, 5), "n5": cut(210, "n5", 12, 9)})
    assert commit_quorum.check(events) == []


def test_three_of_five_never_holding_is_a_commit_without_quorum():
    events = run({"n3": cut(150, "n3", 11, 8), "n4": cut(200, "n4", 12, 5),
                  "n5": cut(210, "n5", 12, 9)})
    [a] = commit_quorum.check(events)
    assert a["type"] == "committed-without-quorum"
    assert (a["leader"], a["epoch"], a["hw"]) == ("n1", 3, 10)
    assert sorted(a["did_not_hold"]) == ["n3", "n4", "n5"]
    v = divergence.check({}, events)
    assert v["valid"] is False
    assert "committed-without-quorum" in [x["type"] for x in v["anomalies"]]


def test_what_does_not_show_a_node_lacked_the_entry():
    # Before the claim, at or above the hw, or a recovery (unflushed data lost):
    # none of these says the node did not hold offset 9 durably when hw 10 was claimed.
    events = run({"n3": cut(90, "n3", 11, 8), "n4": cut(200, "n4", 14, 10),
                  "n5": cut(210, "n5", 12, 2, reason="recovery")})
    events["n2"].append(cut(220, "n2", 12, 3))
    assert commit_quorum.check(events) == []


def test_hw_lines_of_a_follower_are_not_claims():
    events = run({"n3": cut(150, "n3", 11, 8), "n4": cut(200, "n4", 12, 5),
                  "n5": cut(210, "n5", 12, 9)})
    # The same hw line, written by n2 while it follows.
    events["n2"].append(hw(100, "n2", 10, 3))
    events["n1"] = [start(0, "n1", FIVE), follower(50, "n1", 3, "n2")]
    assert commit_quorum.check(events) == []


def test_every_voter_set_in_force_must_be_short():
    # n1 shrank its voters to three (n1, n2, n3) before the claim: with n2
    # apart, two of three remain, a majority of that set. Not flagged though
    # the five-voter set would be short.
    shrink = {"t": 70, "node": "n1", "event": "voters", "state": "appended",
              "voters": ["n1", "n2", "n3"], "offset": 4, "epoch": 3}
    cuts = {"n2": cut(150, "n2", 11, 8), "n4": cut(200, "n4", 12, 5),
            "n5": cut(210, "n5", 12, 9)}
    assert commit_quorum.check(run(cuts, [shrink])) == []
    # With n3 apart too, both sets are short.
    cuts["n3"] = cut(220, "n3", 12, 7)
    [a] = commit_quorum.check(run(cuts, [shrink]))
    assert a["voters"] == [FIVE, ["n1", "n2", "n3"]]


def test_a_restart_ends_the_leadership():
    events = run({"n3": cut(150, "n3", 11, 8), "n4": cut(200, "n4", 12, 5),
                  "n5": cut(210, "n5", 12, 9)})
    # n1 restarts before it writes the hw line: it no longer leads.
    events["n1"] = [start(0, "n1", FIVE), leader(50, "n1", 3), start(90, "n1", FIVE),
                    hw(100, "n1", 10, 3)]
    assert commit_quorum.check(events) == []
