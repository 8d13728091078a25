"""The election restriction's two rules: `vote-for-less-up-to-date-log` (twins over
event lines and dump headers) and `vote-granted-to-less-up-to-date-log` (per grant)."""

from __future__ import annotations

from nodes.raft.checkers import invariants
from nodes.raft.checkers.vote_restriction import (
    epoch_starts,
    grants_to_less_up_to_date_logs,
    votes_for_less_up_to_date_logs,
)
from nodes.raft.events import GRANT_LOGS
from nodes.raft.sim import Sim


def lines(*evs: dict) -> list[dict]:
    return [{"t": i, **ev} for i, ev in enumerate(evs)]


def voter(truncate_to: int, *, follows: str = "n1", restart: bool = False) -> list[dict]:
    """n2 votes for n1 in epoch 5, follows `follows` in 5, then cuts its log
    from 110 back to `truncate_to` (after a restart, if asked)."""
    evs = [{"event": "start", "epoch": 4, "log_end": 110},
           {"event": "vote", "epoch": 5, "candidate": "n1"},
           {"event": "role", "role": "Follower", "epoch": 5, "leader": follows}]
    if restart:
        evs += [{"event": "start", "epoch": 5, "log_end": 110},
                {"event": "role", "role": "Follower", "epoch": 5, "leader": follows}]
    evs.append({"event": "truncate", "from": 110, "to": truncate_to,
                "reason": "diverging-epoch"})
    return lines(*evs)


DUMPS = {"n1": {"epochs": [[4, 50], [5, 104]]}, "n3": {"epochs": [[4, 50], [5, 104]]}}


def test_a_voter_that_cuts_entries_past_its_leaders_whole_log_voted_for_a_shorter_log() -> None:
    [a] = votes_for_less_up_to_date_logs({"n2": voter(104)}, epoch_starts(DUMPS))
    assert a["type"] == "vote-for-less-up-to-date-log"
    assert (a["node"], a["epoch"], a["candidate"]) == ("n2", 5, "n1")
    assert (a["candidate_log_end"], a["voter_log_end"]) == (104, 110)


def test_a_cut_below_the_leaders_end_is_a_diverging_tail_not_a_longer_log() -> None:
    """The leader's log ends with a later epoch than the voter's tail: the
    voter's last epoch was older, so its vote was right."""
    assert votes_for_less_up_to_date_logs({"n2": voter(100)}, epoch_starts(DUMPS)) == []


def test_a_cut_while_following_a_leader_it_did_not_elect_is_not_judged() -> None:
    """It may have had the longer log, and the others elected a shorter one: legal."""
    assert votes_for_less_up_to_date_logs({"n2": voter(104, follows="n3")},
                                          epoch_starts(DUMPS)) == []


def test_a_restart_between_the_vote_and_the_cut_ends_the_judgment() -> None:
    """Its log after a restart (a power cut, a truncation fault) is not the one it voted with."""
    assert votes_for_less_up_to_date_logs({"n2": voter(104, restart=True)},
                                          epoch_starts(DUMPS)) == []


def test_an_epoch_start_the_dumps_disagree_on_is_no_evidence() -> None:
    split = {"n1": {"epochs": [[5, 104]]}, "n3": {"epochs": [[5, 106]]}}
    assert epoch_starts(split) == {}
    assert votes_for_less_up_to_date_logs({"n2": voter(104)}, epoch_starts(split)) == []
    assert votes_for_less_up_to_date_logs({"n2": voter(104)}, {}) == []


def test_epoch_starts_skip_malformed_pairs() -> None:
    assert epoch_starts({"n1": {"epochs": [[5, 104], ["6", 1], [7], None]},
                         "n2": {}}) == {5: 104}


def test_the_invariants_checker_reports_it_and_passes_the_right_vote() -> None:
    run = {"start_monotonic_ns": 0}
    bad = invariants.check([], {"n2": voter(104)}, run, DUMPS)
    assert bad["valid"] is False
    assert [a["type"] for a in bad["anomalies"]] == ["vote-for-less-up-to-date-log"]
    good = invariants.check([], {"n2": voter(100)}, run, DUMPS)
    assert all(a["type"] != "vote-for-less-up-to-date-log" for a in good["anomalies"])
    assert good["stats"]["epoch_starts_known"] == 2


# --- vote-granted-to-less-up-to-date-log: judged per grant, from the line --------------


def grant(kind: str = "vote", *, mine: tuple[int, int], theirs: tuple[int, int]) -> dict:
    return {"t": 7, "event": kind, "epoch": 6, "candidate": "n1",
            "last_epoch": mine[0], "log_end": mine[1],
            "candidate_last_epoch": theirs[0], "candidate_log_end": theirs[1]}


def test_a_vote_for_a_shorter_log_of_the_same_last_epoch_is_flagged_naming_both_logs() -> None:
    [a] = grants_to_less_up_to_date_logs({"n2": [grant(mine=(5, 110), theirs=(5, 104))]})
    assert a["type"] == "vote-granted-to-less-up-to-date-log"
    assert (a["node"], a["grant"], a["epoch"], a["candidate"]) == ("n2", "vote", 6, "n1")
    assert a["voter_log"] == {"last_epoch": 5, "log_end": 110}
    assert a["candidate_log"] == {"last_epoch": 5, "log_end": 104}


def test_a_longer_log_of_an_older_last_epoch_is_less_up_to_date() -> None:
    [a] = grants_to_less_up_to_date_logs({"n2": [grant(mine=(5, 100), theirs=(4, 130))]})
    assert a["candidate_log"] == {"last_epoch": 4, "log_end": 130}


def test_a_pre_vote_is_judged_by_the_same_rule() -> None:
    [a] = grants_to_less_up_to_date_logs(
        {"n3": [grant("pre_vote", mine=(5, 110), theirs=(5, 109))]})
    assert (a["node"], a["grant"]) == ("n3", "pre-vote")


def test_votes_for_logs_at_least_as_up_to_date_pass() -> None:
    """Equal logs, a longer log of the same epoch, a shorter log of a later epoch."""
    evs = [grant(mine=(5, 110), theirs=(5, 110)), grant(mine=(5, 110), theirs=(5, 111)),
           grant("pre_vote", mine=(5, 110), theirs=(6, 104))]
    assert grants_to_less_up_to_date_logs({"n2": evs}) == []


def test_a_grant_line_without_both_logs_is_not_judged() -> None:
    """An older node's line (epoch and candidate only) is no evidence either way."""
    assert grants_to_less_up_to_date_logs(
        {"n2": [{"t": 1, "event": "vote", "epoch": 6, "candidate": "n1"}]}) == []


def test_the_invariants_checker_reports_the_grant() -> None:
    v = invariants.check([], {"n2": [grant(mine=(5, 110), theirs=(5, 104))]}, {})
    assert v["valid"] is False
    assert [a["type"] for a in v["anomalies"]] == ["vote-granted-to-less-up-to-date-log"]


def test_the_nodes_own_grant_lines_carry_both_logs_and_pass_in_the_simulation() -> None:
    """The correct core's lines, through elections under partitions: every grant
    names both logs, and none is to a less up-to-date one."""
    sim = Sim(("n1", "n2", "n3", "n4", "n5"), seed=5)
    sim.settle()
    for round_ in range(6):
        leader = sim.leader()
        if leader is not None:
            sim.propose(b"x%d" % round_)
            sim.run(20)
            sim.isolate(leader)
        sim.run(150)
        sim.heal()
        sim.run(100)
    by_node: dict[str, list[dict]] = {}
    for t, node, ev in sim.events:
        by_node.setdefault(node, []).append({"t": t, **ev})
    grants = [ev for evs in by_node.values() for ev in evs if ev["event"] in ("vote", "pre_vote")]
    assert len([g for g in grants if g["event"] == "vote"]) >= 6
    assert all(set(GRANT_LOGS) <= set(g) for g in grants)
    assert grants_to_less_up_to_date_logs(by_node) == []
