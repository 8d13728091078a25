"""Protocol invariants from event lines + fault schedule: each one has a log
that must pass and its twin that must fail, written from the seeds' rules."""

from __future__ import annotations

from typing import Any

from checkers.history import Op
from nodes.raft.checkers import invariants

S = 1_000_000_000
START = 5 * 10**12
NODES = ["n1", "n2", "n3"]


def ev(t_s: float, node: str, event: str, **fields: Any) -> dict:
    return {"t": START + int(t_s * S), "node": node, "event": event, **fields}


def start(t_s: float, node: str, epoch: int = 0, voted_for: str | None = None) -> dict:
    return ev(t_s, node, "start", epoch=epoch, voted_for=voted_for, log_end=0, tick_ms=50,
              election_timeout_ms=500, fetch_timeout_ms=750, reports_lateness=True)


def role(t_s: float, node: str, name: str, epoch: int, leader: str | None = None) -> dict:
    return ev(t_s, node, "role", role=name, epoch=epoch, leader=leader)


def vote(t_s: float, node: str, epoch: int, candidate: str) -> dict:
    return ev(t_s, node, "vote", epoch=epoch, candidate=candidate)


class H:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, t_s: float, process: Any, typ: str, f: str, value: Any = None,
            error: str | None = None) -> None:
        self.ops.append(Op(len(self.ops), int(t_s * S), process, typ, f, value, error=error))

    def nemesis(self, t_s: float, f: str, value: Any = None, took_s: float = 0.01) -> None:
        self.add(t_s, "nemesis", "invoke", f, value)
        self.add(t_s + took_s, "nemesis", "info", f, value)

    def isolate(self, t_s: float, node: str) -> None:
        others = [n for n in NODES if n != node]
        cut = [[node, o] for o in others] + [[o, node] for o in others]
        self.nemesis(t_s, "partition", {"shape": "isolate-one", "nodes": [node], "cut": cut})


def run() -> dict:
    return {"run_id": "x", "config": {}, "start_monotonic_ns": START}


def elected_n1() -> dict[str, list[dict]]:
    return {"n1": [start(0, "n1"), role(0.1, "n1", "Prospective", 0),
                   role(0.2, "n1", "Candidate", 1), role(0.3, "n1", "Leader", 1, "n1")],
            "n2": [start(0, "n2"), vote(0.25, "n2", 1, "n1"),
                   role(0.3, "n2", "Follower", 1, "n1")],
            "n3": [start(0, "n3"), vote(0.25, "n3", 1, "n1"),
                   role(0.3, "n3", "Follower", 1, "n1")]}


def types(v: dict) -> list[str]:
    return [a["type"] for a in v["anomalies"]]


def test_quiet_cluster_is_valid_with_limits_from_the_nodes_timers():
    v = invariants.check([], elected_n1(), run())
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["timers_ms"] == {"election_timeout_ms": 500, "fetch_timeout_ms": 750}
    # Plus each node's own measured timer lateness in the window judged; the
    # margin is 4 ticks of the start lines' 50 ms.
    assert v["stats"]["limits_ms"] == {"stranded_leader": 950, "cut_off_before_candidate": 1200,
                                       "voter_change": 2000}
    assert v["stats"]["margin_ms"] == 200 and v["stats"]["timers_late"] == {}
    assert v["stats"]["votes"] == 2


# --- KIP-595 check quorum ---------------------------------------------------------


def isolated_leader(resign_after_s: float | None) -> tuple[H, dict]:
    h = H()
    h.isolate(10, "n1")
    h.nemesis(16, "heal")
    events = elected_n1()
    if resign_after_s is not None:
        events["n1"].append(role(10.01 + resign_after_s, "n1", "Resigned", 1, "n1"))
    events["n2"] += [role(11, "n2", "Prospective", 1, "n1"), role(11.2, "n2", "Candidate", 2),
                     role(11.3, "n2", "Leader", 2, "n2")]
    events["n3"] += [vote(11.25, "n3", 2, "n2"), role(11.3, "n3", "Follower", 2, "n2")]
    return h, events


def test_cut_off_leader_that_resigns_within_its_fetch_timeout_passes():
    h, events = isolated_leader(resign_after_s=0.8)
    v = invariants.check(h.ops, events, run())
    assert v["valid"] is True, v["anomalies"]


def test_cut_off_leader_that_stays_leader_is_stranded():
    h, events = isolated_leader(resign_after_s=None)
    v = invariants.check(h.ops, events, run())
    assert types(v) == ["stranded-leader"]
    a = v["anomalies"][0]
    assert a["node"] == "n1" and a["epoch"] == 1
    assert a["still_leader_s"] == [10.01, 16.0]


def test_a_leader_that_resigns_too_late_is_stranded():
    h, events = isolated_leader(resign_after_s=3.0)
    assert types(invariants.check(h.ops, events, run())) == ["stranded-leader"]


def test_a_killed_leader_is_not_stranded():
    h = H()
    h.isolate(10, "n1")
    h.nemesis(10.2, "kill", {"nodes": ["n1"]})
    h.nemesis(14, "heal")
    h.nemesis(15, "start", {"nodes": ["n1"]})
    events = elected_n1()
    events["n1"].append(start(15.1, "n1", 1))
    assert invariants.check(h.ops, events, run())["valid"] is True


def powered_off_then_isolated(power_cut: bool) -> tuple[H, dict]:
    """n1 leads; a power cut that restarts it inside its own op (lose-unsynced)
    takes it at 5 s; its start line comes only at 14 s (a slow restart under
    load); it is cut off from 10 s to 16 s."""
    h = H()
    if power_cut:
        h.nemesis(5, "lose-unsynced", {"nodes": ["n1"]}, took_s=0.5)
    h.isolate(10, "n1")
    h.nemesis(16, "heal")
    events = elected_n1()
    if power_cut:
        events["n1"].append(start(14, "n1", 1))
    return h, events


def test_a_leader_a_power_cut_restarted_is_not_stranded_before_its_start_line():
    h, events = powered_off_then_isolated(power_cut=True)
    assert invariants.check(h.ops, events, run())["valid"] is True


def test_without_the_power_cut_the_same_isolation_strands_it():
    h, events = powered_off_then_isolated(power_cut=False)
    assert types(invariants.check(h.ops, events, run())) == ["stranded-leader"]


def elected_inside_a_fault_that_takes_it(taken: bool) -> tuple[H, dict]:
    """A fault that waits for a leader, then kills it (raft's lose-state):
    n1 is elected at 6 s inside its op (5-7 s) and killed by it; started at
    9 s, its start line comes only at 14 s (a slow boot under load: the
    correct build's hunt, list-append seed 2, 2026-11-27, load 9); cut off
    from 10 s to 16 s. Untaken (the op names
    another node), the same leader stays cut off for 4 s."""
    h = H()
    killed = "n1" if taken else "n3"
    h.nemesis(5, "lose-state", {"nodes": [killed], "leader": killed}, took_s=2.0)
    h.nemesis(9, "start", {"nodes": [killed]})
    h.isolate(10, "n1")
    h.nemesis(16, "heal")
    events = elected_n1()
    events["n1"] += [role(5.5, "n1", "Resigned", 1, "n1"), role(6, "n1", "Leader", 2, "n1")]
    if taken:
        events["n1"].append(start(14, "n1", 2, "n1"))
    return h, events


def test_a_leader_elected_inside_the_op_that_killed_it_is_not_stranded_before_its_start():
    h, events = elected_inside_a_fault_that_takes_it(taken=True)
    v = invariants.check(h.ops, events, run())
    assert "stranded-leader" not in types(v), v["anomalies"]


def test_the_same_leader_not_taken_by_that_op_is_stranded():
    h, events = elected_inside_a_fault_that_takes_it(taken=False)
    assert "stranded-leader" in types(invariants.check(h.ops, events, run()))


def test_a_leader_whose_two_followers_are_paused_must_resign_too():
    h = H()
    h.nemesis(10, "pause", {"nodes": ["n2", "n3"]})
    h.nemesis(15, "resume", {"nodes": ["n2", "n3"]})
    assert types(invariants.check(h.ops, elected_n1(), run())) == ["stranded-leader"]


def _swapped_cut(second_cut_isolates_leader: bool) -> H:
    """n2 cut off first (a minority falls behind); then one partition replaces
    that cut, with no heal between them: it cuts n3 off (n1 keeps n2), or n1."""
    h = H()
    h.isolate(10, "n2")
    h.isolate(12, "n1" if second_cut_isolates_leader else "n3")
    h.nemesis(16, "heal")
    return h


def test_a_partition_replaces_the_cut_in_force_so_the_leader_keeps_its_quorum():
    # The union of both cuts would leave n1 with itself only: stranded.
    events = elected_n1()
    assert invariants.check(_swapped_cut(False).ops, events, run())["valid"] is True


def test_a_partition_that_replaces_the_cut_with_one_isolating_the_leader_strands_it():
    v = invariants.check(_swapped_cut(True).ops, elected_n1(), run())
    assert types(v) == ["stranded-leader"]
    assert v["anomalies"][0]["cut_off_s"][0] == 12.01


def test_a_leader_whose_outbound_packets_are_cut_still_hears_fetches():
    # One-way: n1 cannot send to n2 and n3, but their fetches still reach it.
    h = H()
    h.nemesis(10, "partition", {"shape": "one-way", "nodes": ["n1"],
                                "cut": [["n1", "n2"], ["n1", "n3"]]})
    h.nemesis(16, "heal")
    assert invariants.check(h.ops, elected_n1(), run())["valid"] is True
    h = H()
    h.nemesis(10, "partition", {"shape": "one-way", "nodes": ["n2", "n3"],
                                "cut": [["n2", "n1"], ["n3", "n1"]]})
    h.nemesis(16, "heal")
    assert types(invariants.check(h.ops, elected_n1(), run())) == ["stranded-leader"]


def test_majorities_ring_leaves_everyone_a_majority():
    h = H()
    h.nemesis(10, "partition", {"shape": "majorities-ring", "cut": [["n1", "n3"], ["n3", "n1"]]})
    h.nemesis(16, "heal")
    assert invariants.check(h.ops, elected_n1(), run())["valid"] is True


def test_a_failed_partition_cuts_nothing():
    h = H()
    h.add(10, "nemesis", "invoke", "partition", {"nodes": ["n1"], "cut": [["n1", "n2"]]})
    h.add(10.1, "nemesis", "info", "partition", None, error="RuntimeError: nft failed")
    h.nemesis(16, "heal")
    assert invariants.check(h.ops, elected_n1(), run())["valid"] is True


# --- KIP-996 pre-vote --------------------------------------------------------------


def isolated_follower(candidate_at_s: list[float]) -> tuple[H, dict]:
    h = H()
    h.isolate(10, "n3")
    h.nemesis(20, "heal")
    events = elected_n1()
    events["n3"].append(role(11, "n3", "Prospective", 1, "n1"))
    for i, t in enumerate(candidate_at_s):
        events["n3"] += [role(t, "n3", "Candidate", 2 + i), role(t + 0.6, "n3", "Prospective",
                                                                   2 + i)]
    return h, events


def test_a_cut_off_node_that_only_canvasses_passes():
    h, events = isolated_follower([])
    assert invariants.check(h.ops, events, run())["valid"] is True


def test_a_cut_off_node_that_raises_its_epoch_fails():
    h, events = isolated_follower([12.0, 13.0])
    v = invariants.check(h.ops, events, run())
    assert types(v) == ["epoch-raised-while-cut-off"] * 2
    assert v["anomalies"][0]["node"] == "n3" and v["anomalies"][0]["epoch"] == 2


def test_a_candidate_right_after_the_cut_may_have_won_its_pre_vote_before_it():
    # A pre-vote round that started before the cut can still finish after it.
    h, events = isolated_follower([10.8])
    assert invariants.check(h.ops, events, run())["valid"] is True


def test_a_candidate_after_the_heal_is_not_cut_off():
    h, events = isolated_follower([20.5])
    assert invariants.check(h.ops, events, run())["valid"] is True


# --- votes ---------------------------------------------------------------------------


def test_two_votes_in_one_epoch_for_different_candidates_fail():
    events = elected_n1()
    events["n3"] += [start(5, "n3", 1, "n1"), vote(6, "n3", 1, "n2")]
    v = invariants.check([], events, run())
    assert types(v) == ["double-vote"]
    assert v["anomalies"][0]["candidates"] == ["n1", "n2"]


def test_votes_for_different_candidates_in_different_epochs_pass():
    events = elected_n1()
    events["n3"] += [vote(6, "n3", 2, "n2"), vote(7, "n3", 3, "n1")]
    assert invariants.check([], events, run())["valid"] is True


def test_a_double_vote_after_losing_the_disk_is_still_a_double_vote():
    events = elected_n1()
    events["n3"] += [ev(5, "n3", "data_loss", what="quorum-state-missing"), start(5, "n3", 0),
                     vote(6, "n3", 1, "n2")]
    assert "double-vote" in types(invariants.check([], events, run()))


def test_a_restart_that_keeps_the_vote_passes():
    events = elected_n1()
    events["n2"] += [start(5, "n2", 1, "n1")]
    assert invariants.check([], events, run())["valid"] is True


def test_a_restart_in_the_same_epoch_without_the_vote_fails():
    events = elected_n1()
    events["n2"] += [start(5, "n2", 1, None)]
    v = invariants.check([], events, run())
    assert types(v) == ["vote-forgotten"]
    assert v["anomalies"][0]["node"] == "n2"


def test_a_restart_that_reports_data_loss_is_excused_from_remembering():
    events = elected_n1()
    events["n2"] += [ev(5, "n2", "data_loss", what="quorum-state-missing"), start(5, "n2", 0)]
    assert invariants.check([], events, run())["valid"] is True


def test_without_timers_the_timed_invariants_are_skipped_not_passed():
    events = {n: [e for e in evs if e["event"] != "start"] for n, evs in elected_n1().items()}
    v = invariants.check([], events, run())
    assert v["valid"] == "unknown"
    assert "skipped" in v["stats"]["timed_invariants"]


# --- KIP-996: resigned leaders and following followers ------------------------------


def test_a_resigned_leader_that_moves_to_a_later_epoch_passes():
    events = elected_n1()
    events["n1"] += [role(10, "n1", "Resigned", 1, "n1"), role(10.6, "n1", "Unattached", 2),
                     role(10.6, "n1", "Prospective", 2)]
    assert invariants.check([], events, run())["valid"] is True


def test_a_resigned_leader_that_stays_in_its_epoch_and_follows_itself_fails():
    events = elected_n1()
    events["n1"] += [role(10, "n1", "Resigned", 1, "n1"),
                     role(10.6, "n1", "Unattached", 1, "n1"),
                     role(10.6, "n1", "Prospective", 1, "n1"),
                     role(11.2, "n1", "Follower", 1, "n1")]
    v = invariants.check([], events, run())
    assert sorted(types(v)) == ["follows-itself", "resigned-leader-stayed-in-epoch"]


def pre_vote(t_s: float, node: str, candidate: str, epoch: int, leader: str) -> dict:
    return ev(t_s, node, "pre_vote", epoch=epoch, candidate=candidate, role="Follower",
              leader=leader)


def bridge(h: H) -> None:
    # n3 cannot reach the leader n1; n2 reaches both.
    h.nemesis(10, "partition", {"shape": "bridge", "nodes": ["n2"],
                                "cut": [["n1", "n3"], ["n3", "n1"]]})
    h.nemesis(20, "heal")


def test_a_follower_still_fetching_from_its_leader_that_grants_a_pre_vote_fails():
    h = H()
    bridge(h)
    events = elected_n1()
    events["n2"].append(pre_vote(11.5, "n2", "n3", 1, "n1"))
    # The grant unseats the leader at once: it still counts.
    events["n1"].append(role(11.6, "n1", "Unattached", 2))
    v = invariants.check(h.ops, events, run())
    assert types(v) == ["pre-vote-from-fetching-follower"]
    assert v["anomalies"][0]["node"] == "n2" and v["anomalies"][0]["candidate"] == "n3"


def test_pre_votes_a_follower_may_grant_pass():
    h = H()
    bridge(h)
    h.nemesis(30, "partition", {"shape": "isolate-one", "nodes": ["n1"],
                                "cut": [["n1", "n2"], ["n2", "n1"]]})
    h.nemesis(40, "heal")
    events = elected_n1()
    events["n2"] += [
        pre_vote(0.5, "n2", "n3", 1, "n1"),       # before its first fetch answer
        pre_vote(31.0, "n2", "n3", 1, "n1"),      # its link to the leader is cut
    ]
    events["n3"] += [role(50, "n3", "Follower", 2, "n2"), pre_vote(50.3, "n3", "n1", 2, "n2")]
    events["n2"] += [role(49.9, "n2", "Leader", 2, "n2")]
    # The leader resigns right after the grant (its line may come after ours).
    events["n3"] += [pre_vote(45.0, "n3", "n2", 1, "n1")]
    events["n1"].append(role(45.2, "n1", "Resigned", 1, "n1"))
    v = invariants.check(h.ops, events, run())
    assert "pre-vote-from-fetching-follower" not in types(v), v["anomalies"]


# --- the voter set in force (KIP-853) -------------------------------------------------

FIVE = ["n1", "n2", "n3", "n4", "n5"]


def voters_line(t_s: float, node: str, voters: list[str], state: str = "appended",
                offset: int = 5) -> dict:
    return ev(t_s, node, "voters", state=state, voters=voters, offset=offset, epoch=1)


def five_nodes_three_voters() -> dict[str, list[dict]]:
    """n1 leads epoch 1 over the bootstrap voters n1-n3; n4 and n5 observe."""
    events = elected_n1()
    for node in NODES:
        events[node][0]["voters"] = NODES
    for node in ("n4", "n5"):
        events[node] = [ev(0, node, "start", epoch=0, voted_for=None, log_end=0, tick_ms=50,
                           election_timeout_ms=500, fetch_timeout_ms=750, voters=NODES),
                        role(0.3, node, "Follower", 1, "n1")]
    return events


def cut_from(h: H, node: str, others: list[str], t_s: float) -> None:
    cut = [[node, o] for o in others] + [[o, node] for o in others]
    h.nemesis(t_s, "partition", {"shape": "isolate-one", "nodes": [node], "cut": cut})


def n1_isolated_after(voter_lines: list[dict]) -> dict:
    """n1 leads n1-n3, its voter set changes by `voter_lines`, then a
    partition isolates it from 10 s to 16 s: the invariants' verdict."""
    h = H()
    h.isolate(10, "n1")
    h.nemesis(16, "heal")
    events = elected_n1()
    for node in NODES:
        events[node][0]["voters"] = NODES
    events["n1"] += voter_lines
    return invariants.check(h.ops, events, run())


def test_a_lone_remaining_voter_isolated_is_not_a_stranded_leader():
    # Every voter but n1 was removed: n1 alone is a majority of its voter set,
    # so it rightly leads on when a partition isolates it from the observers.
    v = n1_isolated_after([voters_line(5, "n1", ["n1", "n2"], offset=5),
                           voters_line(6, "n1", ["n1"], offset=6)])
    assert v["valid"] is True, v["anomalies"]


def test_the_same_isolation_of_a_leader_with_three_voters_is_stranded():
    # The twin: the second removal was truncated, so n1 needs one more voter
    # and must resign.
    v = n1_isolated_after([voters_line(5, "n1", ["n1", "n2"], offset=5),
                           voters_line(6, "n1", NODES, state="truncated", offset=5)])
    assert types(v) == ["stranded-leader"]


def test_a_leader_cut_off_from_its_voters_but_not_from_observers_is_stranded():
    # 5 nodes, voters n1-n3: n1 still reaches the observers n4 and n5 (three
    # of five nodes) but only itself of its three voters.
    h = H()
    cut_from(h, "n1", ["n2", "n3"], 10)
    h.nemesis(16, "heal")
    v = invariants.check(h.ops, five_nodes_three_voters(), run())
    assert types(v) == ["stranded-leader"]
    assert v["anomalies"][0]["still_leader_s"] == [10.01, 16.0]


def test_a_leader_cut_off_from_observers_only_keeps_its_quorum():
    h = H()
    cut_from(h, "n1", ["n4", "n5"], 10)
    h.nemesis(16, "heal")
    v = invariants.check(h.ops, five_nodes_three_voters(), run())
    assert v["valid"] is True, v["anomalies"]


def test_a_candidate_that_reaches_a_majority_of_its_voters_is_not_cut_off():
    # Voters n1-n3 of five nodes; the leader n1 is killed and n4, n5 cut off:
    # n2 reaches n3, a majority of its voters (two of five nodes would not be).
    h = H()
    h.nemesis(10, "kill", {"nodes": ["n1"]})
    h.nemesis(10, "partition", {"shape": "random-halves", "nodes": ["n4", "n5"],
                                "cut": [[a, b] for a in ("n2", "n3") for b in ("n4", "n5")]
                                + [[b, a] for a in ("n2", "n3") for b in ("n4", "n5")]})
    h.nemesis(20, "heal")
    h.nemesis(20, "start", {"nodes": ["n1"]})
    events = five_nodes_three_voters()
    events["n2"] += [role(12, "n2", "Prospective", 1, "n1"), role(13, "n2", "Candidate", 2)]
    v = invariants.check(h.ops, events, run())
    assert v["valid"] is True, v["anomalies"]


def test_a_voter_cut_off_from_the_voters_that_raises_its_epoch_fails():
    # The twin: n3 reaches the observers n4 and n5 (three of five nodes) but
    # none of the other voters, so its pre-vote cannot win.
    h = H()
    cut_from(h, "n3", ["n1", "n2"], 10)
    h.nemesis(20, "heal")
    events = five_nodes_three_voters()
    events["n3"] += [role(11, "n3", "Prospective", 1, "n1"), role(13, "n3", "Candidate", 2)]
    v = invariants.check(h.ops, events, run())
    assert types(v) == ["epoch-raised-while-cut-off"]
    assert v["anomalies"][0]["node"] == "n3"


def test_the_voter_set_follows_each_nodes_own_lines_across_a_restart():
    steps = invariants.voters_in_force({"n1": [
        ev(0, "n1", "start", voters=["n1", "n2", "n3"]),
        voters_line(1, "n1", ["n1", "n2"]),
        voters_line(2, "n1", ["n1", "n2"], state="committed"),
        ev(3, "n1", "start"),                      # a line from before voters were reported
        ev(4, "n1", "start", voters=["n1", "n2"]),
    ]}, START)["n1"]
    assert [(t // S, v) for t, v in steps] == [
        (0, frozenset(NODES)), (1, frozenset({"n1", "n2"})), (3, None),
        (4, frozenset({"n1", "n2"}))]


# --- KIP-595 cluster id ---------------------------------------------------------------


def in_cluster(line: dict, cluster_id: str) -> dict:
    return line | {"cluster_id": cluster_id}


def n3_reformatted(follows_n1: bool, votes_for_n1: bool = False) -> dict[str, list[dict]]:
    """Cluster A elects n1 in epoch 1; n3 is re-formatted for cluster B at 10 s
    and put back at 20 s."""
    events = elected_n1()
    for node in NODES:
        events[node][0] = in_cluster(events[node][0], "A")
    events["n3"].append(in_cluster(start(10, "n3"), "B"))
    events["n3"] += [role(10.5, "n3", "Prospective", 0)]
    if follows_n1:
        events["n3"].append(role(11, "n3", "Follower", 1, "n1"))
    if votes_for_n1:
        events["n1"] += [role(12, "n1", "Candidate", 2)]
        events["n3"].append(vote(12.1, "n3", 2, "n1"))
    events["n3"] += [in_cluster(start(20, "n3", 1, "n1"), "A"),
                     role(20.2, "n3", "Follower", 1, "n1")]
    return events


def test_a_node_formatted_for_another_cluster_that_stays_alone_passes():
    v = invariants.check([], n3_reformatted(follows_n1=False), run())
    assert v["valid"] is True, v["anomalies"]


def test_a_node_of_another_cluster_following_our_leader_fails():
    v = invariants.check([], n3_reformatted(follows_n1=True), run())
    assert types(v) == ["follows-other-cluster"]
    a = v["anomalies"][0]
    assert (a["node"], a["cluster_id"], a["other"], a["other_cluster_ids"], a["epoch"]) == (
        "n3", "B", "n1", ["A"], 1)


def test_a_node_of_another_cluster_voting_for_our_candidate_fails():
    v = invariants.check([], n3_reformatted(follows_n1=False, votes_for_n1=True), run())
    assert types(v) == ["votes-for-other-cluster"]


def test_a_vote_before_a_re_format_is_not_a_forgotten_vote():
    # n3 voted in epoch 1 as a node of A; its run in B starts at epoch 0.
    events = n3_reformatted(follows_n1=False)
    assert "vote-forgotten" not in types(invariants.check([], events, run()))
    # The same restart in its own cluster forgot the vote.
    events["n3"][3] = in_cluster(start(10, "n3"), "A")
    assert "vote-forgotten" in types(invariants.check([], events, run()))

# --- a voter that lost its quorum state (KIP-996 "Disk failure") ------------------------


def lost_state(events: dict[str, list[dict]], t_s: float, node: str) -> None:
    events[node] += [ev(t_s, node, "data_loss", what="quorum-state-missing"),
                     start(t_s, node, 0), role(t_s, node, "Unattached", 0)]


def test_a_vote_after_losing_the_quorum_state_before_following_a_leader_fails():
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [vote(6, "n3", 2, "n2")]
    v = invariants.check([], events, run())
    assert types(v) == ["vote-after-state-loss"]
    assert v["anomalies"][0]["node"] == "n3" and v["anomalies"][0]["epoch"] == 2


def test_standing_for_election_after_losing_the_quorum_state_fails():
    events = elected_n1()
    lost_state(events, 5, "n2")
    events["n2"] += [role(6, "n2", "Candidate", 1)]
    assert types(invariants.check([], events, run())) == ["vote-after-state-loss"]


def test_votes_once_a_leader_answered_it_again_pass():
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [role(6, "n3", "Follower", 1, "n1"), ev(6.1, "n3", "hw", hw=7, epoch=1),
                     vote(9, "n3", 2, "n2"), role(10, "n3", "Candidate", 3)]
    assert invariants.check([], events, run())["valid"] is True


def test_votes_after_its_own_votes_again_line_pass():
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [ev(6, "n3", "votes_again", epoch=1, leader="n1", hw=7),
                     vote(9, "n3", 2, "n2")]
    assert invariants.check([], events, run())["valid"] is True


def test_a_vote_after_following_a_leader_that_never_answered_fails():
    """lose-state took n1 down with n3's state: n2, not yet timed out on n1,
    names it, n3 follows it, hears nothing, and votes for n2."""
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [role(5.6, "n3", "Follower", 1, "n1"), role(6.4, "n3", "Prospective", 1),
                     vote(6.5, "n3", 2, "n2"), role(6.6, "n3", "Follower", 2, "n2"),
                     ev(6.7, "n3", "hw", hw=8, epoch=2)]
    v = invariants.check([], events, run())
    assert types(v) == ["vote-after-state-loss"]
    assert v["anomalies"][0]["epoch"] == 2


def test_votes_after_a_restart_that_found_its_quorum_state_pass():
    """Killed after writing the file that ends its abstention and before the
    lines that say so: back with that file, it votes again."""
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [role(6, "n3", "Follower", 1, "n1"), start(7, "n3", 1),
                     role(7.1, "n3", "Unattached", 1), vote(8, "n3", 2, "n2")]
    assert invariants.check([], events, run())["valid"] is True


def test_a_second_loss_opens_the_window_again():
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [start(6, "n3", 1)]
    lost_state(events, 7, "n3")
    events["n3"] += [vote(8, "n3", 2, "n2")]
    assert types(invariants.check([], events, run())) == ["vote-after-state-loss"]


def test_an_hw_line_before_following_anyone_does_not_end_the_loss():
    events = elected_n1()
    lost_state(events, 5, "n3")
    events["n3"] += [ev(5.1, "n3", "hw", hw=3, epoch=0), vote(6, "n3", 2, "n2")]
    assert types(invariants.check([], events, run())) == ["vote-after-state-loss"]


def cut_leader_resigning_at(resign_s: float) -> tuple[H, dict]:
    """n1 leads epoch 1 and is cut off from 10.25 s (partition in force) to
    the heal at 16 s, resigning at `resign_s`."""
    h = H()
    cut = [[a, b] for a in NODES for b in NODES if a != b and "n1" in (a, b)]
    h.nemesis(10, "partition", {"shape": "isolate-one", "nodes": ["n1"], "cut": cut},
              took_s=0.25)
    h.nemesis(16, "heal")
    events = elected_n1()
    events["n1"].append(role(resign_s, "n1", "Resigned", 1, "n1"))
    return h, events


def test_a_leader_cut_off_for_exactly_the_limit_is_not_stranded():
    # The limit is 0.95 s (fetch timeout + 4 ticks, from the nodes' start
    # lines) when the leader's timers never ran late.
    h, events = cut_leader_resigning_at(10.25 + 0.95)
    assert invariants.check(h.ops, events, run())["valid"] is True
    h, events = cut_leader_resigning_at(10.25 + 0.95 + 0.001)
    v = invariants.check(h.ops, events, run())
    assert [(a["type"], a["still_leader_s"]) for a in v["anomalies"]] == [
        ("stranded-leader", [10.25, 11.201])]


# --- the node's own timer lateness (tick_late lines) ----------------------------------


def tick_late(t_s: float, node: str, late_ms: float) -> dict:
    return ev(t_s, node, "tick_late", late_ms=late_ms)


def test_a_late_resignation_within_the_leaders_own_measured_lateness_passes():
    """The measured false alarm (seed 54 under stress-ng --cpu 2): resigned
    1.256 s after the cut. Its timers stood still 0.4 s in that window (a
    tick 0.3 s late, another 0.1 s): allowed 0.75 + 0.4 + 0.2 s."""
    h, events = cut_leader_resigning_at(10.25 + 1.256)
    events["n1"] += [tick_late(10.6, "n1", 300), tick_late(11.0, "n1", 100)]
    v = invariants.check(h.ops, events, run())
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["timers_late"] == {"n1": {"late_ticks": 2, "total_s": 0.4, "max_s": 0.3}}


def test_a_late_resignation_beyond_the_leaders_measured_lateness_is_stranded():
    """The same resignation with only 0.1 s of lateness measured: allowed 1.05 s."""
    h, events = cut_leader_resigning_at(10.25 + 1.256)
    events["n1"].append(tick_late(11.0, "n1", 100))
    v = invariants.check(h.ops, events, run())
    [a] = v["anomalies"]
    assert a["type"] == "stranded-leader"
    assert (a["fetch_timeout_s"], a["timers_late_s"], a["margin_s"], a["limit_s"]) == (
        0.75, 0.1, 0.2, 1.05)


def test_lateness_outside_the_cut_window_excuses_nothing():
    """A 2 s stall before the cut, and one after the leader resigned, do not
    stretch the window in between."""
    h, events = cut_leader_resigning_at(10.25 + 1.256)
    events["n1"] += [tick_late(7.0, "n1", 2000), tick_late(14.0, "n1", 2000)]
    v = invariants.check(h.ops, events, run())
    assert [(a["type"], a["timers_late_s"]) for a in v["anomalies"]] == [("stranded-leader", 0.0)]


def test_a_slightly_late_leader_that_stays_for_seconds_is_stranded():
    """Lateness is no blanket excuse: 0.15 s measured, leader for 5.75 s of the cut."""
    h, events = cut_leader_resigning_at(16.0)
    events["n1"] += [tick_late(11.0, "n1", 100), tick_late(13.0, "n1", 50)]
    v = invariants.check(h.ops, events, run())
    [a] = v["anomalies"]
    assert a["type"] == "stranded-leader" and a["still_leader_s"] == [10.25, 16.0]
    assert a["timers_late_s"] == 0.15 and a["limit_s"] == 1.1


def test_a_stall_straddling_the_cut_counts_only_its_part_inside():
    h, events = cut_leader_resigning_at(10.25 + 1.256)
    # Stood still 10.0-10.6 s: 0.35 s of it after the cut at 10.25 s.
    events["n1"].append(tick_late(10.6, "n1", 600))
    v = invariants.check(h.ops, events, run())
    assert v["valid"] is True, v["anomalies"]
    events["n1"][-1] = tick_late(10.4, "n1", 400)   # 0.15 s inside: allowed 1.1 s
    assert types(invariants.check(h.ops, events, run())) == ["stranded-leader"]


def test_a_run_whose_nodes_do_not_report_their_lateness_keeps_the_constant_grace():
    """Recorded before the nodes measured it: no tick_late line is no evidence
    that their timers kept time, so the old 0.5 s grace stands (1.25 s)."""
    h, events = cut_leader_resigning_at(10.25 + 1.2)
    for evs in events.values():
        for line in evs:
            line.pop("reports_lateness", None)
    v = invariants.check(h.ops, events, run())
    assert v["valid"] is True and v["stats"]["margin_ms"] == 500
    h, events = cut_leader_resigning_at(10.25 + 1.2)
    assert types(invariants.check(h.ops, events, run())) == ["stranded-leader"]


def test_a_cut_off_candidate_within_its_own_measured_lateness_passes():
    """Candidate 1.49 s after the cut: past 2 x election timeout + 4 ticks
    (1.2 s) unless its timers ran late; 0.4 s measured makes 1.6 s."""
    h, events = isolated_follower([11.5])
    assert types(invariants.check(h.ops, events, run())) == ["epoch-raised-while-cut-off"]
    events["n3"].append(tick_late(11.0, "n3", 400))
    events["n3"].sort(key=lambda e: e["t"])
    assert invariants.check(h.ops, events, run())["valid"] is True


def test_a_cut_that_outlasts_a_fault_change_is_one_span():
    # A second partition at 12 s keeps n1 cut off: one span, one finding.
    h = H()
    h.isolate(10, "n1")
    h.isolate(12, "n1")
    h.nemesis(16, "heal")
    v = invariants.check(h.ops, elected_n1(), run())
    assert [(a["type"], a["cut_off_s"]) for a in v["anomalies"]] == [
        ("stranded-leader", [10.01, 16.0])]


def test_follows_itself_finding_carries_the_line():
    events = elected_n1()
    line = role(11.2, "n1", "Follower", 2, "n1")
    events["n1"].append(line)
    v = invariants.check([], events, run())
    assert v["anomalies"] == [
        {"type": "follows-itself", "node": "n1", "epoch": 2, "event": line}]


def pre_vote_after_a_cut_between_follower_and_leader(t_s: float) -> list[str]:
    """n1-n2 cut from 10 s until the heal completes at 12.25 s; n2, following
    n1 throughout, grants n3 a pre-vote at `t_s`."""
    h = H()
    h.nemesis(10, "partition", {"shape": "isolate-one", "nodes": ["n1"],
                                "cut": [["n1", "n2"], ["n2", "n1"]]}, took_s=0.25)
    h.nemesis(12, "heal", took_s=0.25)
    events = elected_n1()
    events["n2"].append(pre_vote(t_s, "n2", "n3", 1, "n1"))
    return types(invariants.check(h.ops, events, run()))


def test_a_pre_vote_a_whole_window_after_the_cut_healed_is_judged():
    # The window is the fetch timeout + grace (1.25 s): a cut that ended
    # exactly that long before the grant no longer excuses it.
    assert pre_vote_after_a_cut_between_follower_and_leader(12.25 + 1.25) == [
        "pre-vote-from-fetching-follower"]
    assert pre_vote_after_a_cut_between_follower_and_leader(12.25 + 1.0) == []
