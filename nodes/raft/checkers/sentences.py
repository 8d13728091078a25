"""The raft store's anomaly kinds in one human sentence each (its invariants,
membership and durable-epochs checkers'), brought with its checkers
(`Contributed.sentences`) to checkers.anomaly_text, which every reader of
verdicts uses. Pure: dicts in, strings out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checkers.anomaly_text import value_text as _v


def _node(a: dict[str, Any]) -> str:
    return f"Node {a['node']}"


def _double_vote(a: dict[str, Any]) -> str:
    return (f"{_node(a)} voted twice in epoch {a['epoch']}, for "
            f"{' and '.join(map(str, a['candidates']))}.")


def _vote_forgotten(a: dict[str, Any]) -> str:
    vote = a.get("vote") or {}
    return (f"{_node(a)} forgot its vote for {vote.get('candidate')} in epoch "
            f"{vote.get('epoch')} across a restart.")


def _vote_for_less_up_to_date_log(a: dict[str, Any]) -> str:
    return (f"{_node(a)} voted for {a['candidate']} in epoch {a['epoch']}, whose log ended "
            f"at {a['candidate_log_end']}, while its own reached {a['voter_log_end']} "
            "(it later cut those entries back to follow it).")


def _grant_to_less_up_to_date_log(a: dict[str, Any]) -> str:
    mine, theirs = a["voter_log"], a["candidate_log"]
    return (f"{_node(a)} granted its {a['grant']} in epoch {a['epoch']} to {a['candidate']}, "
            f"whose log (last epoch {theirs['last_epoch']}, end {theirs['log_end']}) is less "
            f"up to date than its own (last epoch {mine['last_epoch']}, end {mine['log_end']}).")


def _other_cluster(what: str) -> Callable[[dict[str, Any]], str]:
    def read(a: dict[str, Any]) -> str:
        return (f"{_node(a)} (cluster {a['cluster_id']}) {what} {a['other']}, which "
                f"belongs to cluster {_v(a['other_cluster_ids'])}, in epoch {a['epoch']}.")
    return read


def _vote_after_state_loss(a: dict[str, Any]) -> str:
    return (f"{_node(a)} voted or stood for election in epoch {a['epoch']} after "
            "restarting without its quorum state, before a leader answered it again.")


def _made_of(a: dict[str, Any], timer: str) -> str:
    """What a timed limit allowed: the timer, the node's own measured lateness, the margin."""
    if a.get("timers_late_s") is None:
        return ""
    base = f"{a[timer]} s timer + " if timer in a else ""
    return f": {base}{a['timers_late_s']} s its timers ran late + {a.get('margin_s')} s margin"


def _stranded_leader(a: dict[str, Any]) -> str:
    lo, hi = a["still_leader_s"]
    return (f"{_node(a)} stayed leader of epoch {a['epoch']} from {lo} s to {hi} s while "
            f"cut off from a majority (limit {a['limit_s']} s{_made_of(a, 'fetch_timeout_s')}).")


def _epoch_raised_while_cut_off(a: dict[str, Any]) -> str:
    lo, hi = a["cut_off_s"]
    return (f"{_node(a)} became a candidate (epoch {a['epoch']}) at {a['time_s']} s "
            f"while cut off from a majority ({lo} s to {hi} s; limit {a.get('limit_s')} s"
            f"{_made_of(a, 'pre_vote_round_s')}).")


def _follows_itself(a: dict[str, Any]) -> str:
    return f"{_node(a)} followed itself as leader in epoch {a['epoch']}."


def _resigned_stayed(a: dict[str, Any]) -> str:
    return (f"{_node(a)} resigned as leader of epoch {a['epoch']} but its next role was "
            "in that same epoch.")


def _pre_vote_from_fetching(a: dict[str, Any]) -> str:
    return (f"{_node(a)} granted a pre-vote to {a['candidate']} at {a['time_s']} s while "
            f"still fetching from the live leader {a['leader']} of epoch {a['epoch']}.")


def _two_voter_changes(a: dict[str, Any]) -> str:
    return (f"{_node(a)} started a voter change ({a['change']} {a['voter']} at offset "
            f"{a['offset']}) while another was in flight (offset "
            f"{a['in_flight']['offset']}).")


def _resigned_adding_voter(a: dict[str, Any]) -> str:
    return (f"{_node(a)} resigned as leader at {a['resigned_s']} s while adding voter "
            f"{a['voter']} (offset {a['offset']}, started at {a['added_s']} s).")


def _voter_change_incomplete(a: dict[str, Any]) -> str:
    return (f"{_node(a)}'s voter change ({a['change']} {a['voter']} at offset "
            f"{a['offset']}) did not finish within {a['bound_s']} s.")


def _voter_changes_out_of_order(a: dict[str, Any]) -> str:
    return (f"{_node(a)} applied the voter set at offset {a['offset']} while the one at "
            f"offset {a['in_force']} was already in force.")


def _epoch_regression(a: dict[str, Any]) -> str:
    restarted = " across a restart" if a.get("restarted_between") else ""
    return (f"{_node(a)}'s epoch went back from {a['from_epoch']} to "
            f"{a['to_epoch']}{restarted}, with no data loss reported.")


SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    # durable-epochs
    "epoch-regression": _epoch_regression,
    # invariants
    "double-vote": _double_vote,
    "vote-forgotten": _vote_forgotten,
    "vote-for-less-up-to-date-log": _vote_for_less_up_to_date_log,
    "vote-granted-to-less-up-to-date-log": _grant_to_less_up_to_date_log,
    "follows-other-cluster": _other_cluster("followed leader"),
    "votes-for-other-cluster": _other_cluster("voted for"),
    "vote-after-state-loss": _vote_after_state_loss,
    "stranded-leader": _stranded_leader,
    "epoch-raised-while-cut-off": _epoch_raised_while_cut_off,
    "follows-itself": _follows_itself,
    "resigned-leader-stayed-in-epoch": _resigned_stayed,
    "pre-vote-from-fetching-follower": _pre_vote_from_fetching,
    # membership
    "two-voter-changes-in-flight": _two_voter_changes,
    "leader-resigned-adding-voter": _resigned_adding_voter,
    "voter-change-incomplete": _voter_change_incomplete,
    "voter-changes-out-of-order": _voter_changes_out_of_order,
}
