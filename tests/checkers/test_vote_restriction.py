"""`vote-for-less-up-to-date-log`: twins over event lines and dump headers."""

from __future__ import annotations

from nodes.raft.checkers import invariants
from nodes.raft.checkers.vote_restriction import epoch_starts, votes_for_less_up_to_date_logs


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
