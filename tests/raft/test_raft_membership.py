"""KIP-853 / KIP-1186 voter changes and KIP-595 quorum-state rules, each as a
deterministic test of the I/O-free core (alone or in the simulation)."""

from __future__ import annotations

import pytest

from nodes.raft import messages as m
from nodes.raft import voters as vs
from nodes.raft.core import Config, Core, Entry, QuorumState, VoterChangeRefused
from nodes.raft.roles import CANDIDATE, FOLLOWER, LEADER, PROSPECTIVE, RESIGNED, UNATTACHED
from nodes.raft.sim import Sim

CID = "test-cluster"
THREE = ("n1", "n2", "n3")


def make(node: str = "n1", voters=THREE, state=None, log=None, **cfg) -> Core:
    return Core(Config(node, voters, CID, **cfg), state, log or [], seed=1)


def msg(kind: str, sender: str, to: str, epoch: int, **fields) -> dict:
    return m.message(kind, sender, to, CID, epoch, **fields)


def tick_until_prospective(core: Core, limit: int = 40) -> None:
    """Let an election timeout pass: the core starts its pre-vote."""
    for _ in range(limit):
        core.tick()
        if core.role == PROSPECTIVE:
            return
    raise AssertionError(f"still {core.role} after {limit} ticks")


def elected_n1() -> Core:
    """n1 of n1-n3 after n2 granted its pre-vote and then its vote."""
    core = make("n1")
    core.ready()
    tick_until_prospective(core)
    for pre_vote in (True, False):
        core.receive(msg("vote_response", "n2", "n1", core.epoch, granted=True,
                         pre_vote=pre_vote, leader=None))
    return core


def sent(core: Core, kind: str) -> list[dict]:
    return [x for x in core.ready().messages if x["type"] == kind]


def commit_one(sim: Sim, payload: bytes, max_ticks: int = 300) -> int:
    proposed = sim.propose(payload)
    assert proposed is not None, sim.describe()
    _, offset = proposed
    assert sim.run_until(
        lambda: all(n.core.high_watermark > offset for n in sim.nodes.values() if n.alive),
        max_ticks,
    ), sim.describe()
    return offset


def settled(sim: Sim) -> str:
    """A stable leader that has committed in its epoch (may change voters)."""
    leader = sim.settle()
    commit_one(sim, b"warm-up")
    return leader


def roles_of(sim: Sim, name: str) -> list[str]:
    return [e["role"] for _, _, e in sim.role_events(name)]


def assert_safe(sim: Sim) -> None:
    sim.check_logs_agree()
    sim.check_committed_durable()
    assert sim.violations == []


# ------------------------------------------------------------ AddRaftVoter


def test_kip853_added_voter_is_in_force_from_the_append_not_the_commit():
    sim = Sim(THREE, seed=1, observers=("n4",))
    leader = settled(sim)
    for name in ("n1", "n2", "n3"):
        if name != leader:
            sim.stall_flush(name)
    result = sim.change_voters("add", "n4")
    assert isinstance(result, tuple), result
    _, offset = result
    core = sim.core(leader)
    # In force at once: four voters, three make a majority, before any commit.
    assert core.voters == ("n1", "n2", "n3", "n4") and core.high_watermark <= offset
    assert core.committed_voters == THREE
    # The leader and n4 alone (2 of 4) cannot commit the record.
    sim.run(60)
    assert core.high_watermark <= offset
    assert sim.nodes["n4"].core.voters == ("n1", "n2", "n3", "n4")
    for name in THREE:
        sim.stall_flush(name, False)
    assert sim.run_until(lambda: core.high_watermark > offset, 100), sim.describe()
    assert core.committed_voters == ("n1", "n2", "n3", "n4")
    assert sim.core("n4").is_voter
    commit_one(sim, b"after-add")
    assert_safe(sim)


def test_kip853_one_voter_change_in_flight_at_a_time():
    sim = Sim(THREE, seed=2, observers=("n4", "n5"))
    leader = settled(sim)
    for name in THREE:
        if name != leader:
            sim.stall_flush(name)
    assert isinstance(sim.change_voters("add", "n4"), tuple)
    assert sim.change_voters("add", "n5") == m.VOTER_CHANGE_IN_FLIGHT
    follower = next(n for n in THREE if n != leader)
    assert sim.change_voters("remove", follower) == m.VOTER_CHANGE_IN_FLIGHT
    for name in THREE:
        sim.stall_flush(name, False)
    assert sim.run_until(lambda: sim.core(leader).committed_voters == ("n1", "n2", "n3", "n4"),
                         100)
    # Once committed, the next change is accepted.
    assert isinstance(sim.change_voters("add", "n5"), tuple)
    assert_safe(sim)


def test_kip853_leader_changes_voters_only_after_committing_in_its_epoch():
    core = make("n1", voters=("n1", "n2"))
    core.ready()
    tick_until_prospective(core)
    core.receive(msg("vote_response", "n2", "n1", core.epoch, granted=True, pre_vote=True,
                     leader=None))
    core.receive(msg("vote_response", "n2", "n1", core.epoch, granted=True, pre_vote=False,
                     leader=None))
    assert core.role == LEADER
    core.ready()
    with pytest.raises(VoterChangeRefused) as refused:
        core.remove_voter("n2")
    assert refused.value.code == m.NOT_COMMITTED_IN_EPOCH


def test_kip853_add_refuses_duplicates_and_replicas_that_do_not_fetch():
    sim = Sim(THREE, seed=3)
    leader = settled(sim)
    other = next(n for n in THREE if n != leader)
    assert sim.change_voters("add", other) == m.DUPLICATE_VOTER
    assert sim.change_voters("add", "n9") == m.NOT_CAUGHT_UP
    assert sim.change_voters("remove", "n9") == m.VOTER_NOT_FOUND


def test_kip1186_operator_add_of_an_empty_disk_node():
    sim = Sim(THREE, seed=4)
    settled(sim)
    commit_one(sim, b"x")
    sim.add_node("n4")
    assert sim.run_until(lambda: sim.core("n4").role == FOLLOWER
                         and sim.core("n4").log_end == sim.core(sim.leader()).log_end, 200)
    assert not sim.core("n4").is_voter
    sim.run(5)  # the leader learns from n4's next fetch that it caught up
    result = sim.change_voters("add", "n4", ack_when_committed=True)
    assert isinstance(result, tuple), result
    leader, offset = result
    assert sim.run_until(lambda: sim.core(leader).high_watermark > offset, 100)
    # The new voter's flushed log counts now: with two old voters down, the
    # leader and n4 are not a majority of four, with one down they are.
    commit_one(sim, b"y")
    assert_safe(sim)


def test_kip1186_auto_join_acks_after_the_append_and_the_leader_stays():
    # --standalone bootstrap: one voter, an observer auto-joining (1 -> 2).
    sim = Sim(("n1",), seed=5, observers=("n2",), config={})
    sim.nodes["n2"].config.auto_join = True
    leader = sim.settle()
    commit_one(sim, b"x")
    assert sim.run_until(lambda: sim.core("n2").is_voter, 300), sim.describe()
    assert sim.run_until(lambda: sim.core(leader).committed_voters == ("n1", "n2"), 100)
    sim.run(100)
    assert RESIGNED not in roles_of(sim, leader)
    assert sim.core(leader).role == LEADER
    commit_one(sim, b"after-join")
    assert_safe(sim)


def test_auto_join_answer_is_sent_at_once_without_ack_when_committed():
    # The leader's side of KIP-1186: AckWhenCommitted=false is answered in
    # the same Ready as the append, true only once the record commits.
    sim = Sim(THREE, seed=6, observers=("n4",))
    leader = settled(sim)
    core = sim.core(leader)
    sim.run(5)
    core.receive(m.message(m.ADD_RAFT_VOTER, "n4", leader, sim.cluster_id, core.epoch,
                           ack_when_committed=False))
    ready = core.ready()
    answers = [x for x in ready.messages if x["type"] == m.ADD_RAFT_VOTER_RESPONSE]
    assert [a["error"] for a in answers] == [None]
    assert any(vs.parse_record(e.payload) for e in ready.append)


def _removed_while_running(sim: Sim, victim: str) -> str:
    leader = settled(sim)
    assert victim != leader
    sim.change_voters("remove", victim)
    remaining = tuple(n for n in sim.bootstrap if n != victim)
    assert sim.run_until(lambda: sim.core(leader).committed_voters == remaining, 200)
    return leader


def test_kafka19850_a_voter_removed_while_running_does_not_auto_join_back():
    # Every node auto-joins; the operator removes n3 and means it: n3 stays
    # an observer (it would add itself back within a few ticks otherwise,
    # racing every later removal). The operator's add still works.
    sim = Sim(THREE, seed=7, config={"auto_join": True})
    leader = _removed_while_running(sim, "n3")
    sim.run(300)
    assert sim.core(leader).voters == ("n1", "n2"), sim.describe()
    assert not sim.core("n3").is_voter and sim.core("n3").role == FOLLOWER
    assert isinstance(sim.change_voters("add", "n3"), tuple)
    assert sim.run_until(lambda: sim.core(leader).committed_voters == THREE, 200)
    assert_safe(sim)


def test_kafka19850_a_removed_voter_started_again_auto_joins_once():
    sim = Sim(THREE, seed=7, config={"auto_join": True})
    leader = _removed_while_running(sim, "n3")
    sim.crash("n3")
    sim.restart("n3")   # a new process: it has not been a voter since it started
    assert sim.run_until(lambda: sim.core(leader).committed_voters == THREE, 300), \
        sim.describe()
    assert_safe(sim)


def test_kafka19850_a_voter_removed_while_down_auto_joins_when_started():
    # Its log still names it a voter when it starts; that is not being one.
    sim = Sim(THREE, seed=11, config={"auto_join": True})
    leader = settled(sim)
    victim = next(n for n in THREE if n != leader)
    sim.crash(victim)
    sim.change_voters("remove", victim)
    remaining = tuple(n for n in THREE if n != victim)
    assert sim.run_until(lambda: sim.core(leader).committed_voters == remaining, 200)
    sim.restart(victim)
    assert sim.run_until(lambda: sim.core(leader).committed_voters == THREE, 300), \
        sim.describe()
    assert_safe(sim)


def test_kafka19850_a_leader_that_removed_itself_does_not_auto_join_back():
    sim = Sim(THREE, seed=8, config={"auto_join": True})
    leader = settled(sim)
    sim.change_voters("remove", leader)
    assert sim.run_until(lambda: sim.core(leader).role != LEADER, 200)
    new = sim.settle(800)
    commit_one(sim, b"after-leader-left")
    sim.run(300)
    assert sim.core(new).voters == tuple(n for n in THREE if n != leader), sim.describe()
    assert sim.core(leader).role == FOLLOWER and not sim.core(leader).is_voter
    assert_safe(sim)


# --------------------------------------------------------- RemoveRaftVoter


def test_kip853_removed_voter_becomes_an_observer_and_majority_shrinks():
    sim = Sim(THREE, seed=7)
    leader = settled(sim)
    victim = next(n for n in THREE if n != leader)
    _, offset = sim.change_voters("remove", victim)
    remaining = tuple(n for n in THREE if n != victim)
    assert sim.run_until(lambda: sim.core(leader).committed_voters == remaining, 100)
    assert sim.run_until(lambda: not sim.core(victim).is_voter, 100)
    # Two voters left: the removed node's flushes no longer count.
    sim.stall_flush(victim)
    commit_one(sim, b"after-remove")
    assert sim.core(victim).role == FOLLOWER  # it still fetches, as an observer
    # An observer cut off never canvasses (no Prospective, no epoch bump).
    sim.isolate(victim)
    before = sim.core(victim).epoch
    sim.run(200)
    assert PROSPECTIVE not in roles_of(sim, victim)[-5:]
    assert sim.core(victim).role == UNATTACHED and sim.core(victim).epoch == before
    sim.heal()
    assert sim.run_until(lambda: sim.core(victim).role == FOLLOWER, 200), sim.describe()
    assert_safe(sim)


def test_kip853_leader_removing_itself_resigns_once_committed():
    sim = Sim(THREE, seed=8)
    leader = settled(sim)
    _, offset = sim.change_voters("remove", leader)
    core = sim.core(leader)
    assert not core.is_voter and core.role == LEADER  # leads on until committed
    assert sim.run_until(lambda: core.role != LEADER, 200), sim.describe()
    assert core.high_watermark > offset
    new = sim.settle(800)
    assert new != leader and sim.core(new).voters == tuple(n for n in THREE if n != leader)
    commit_one(sim, b"after-leader-left")
    assert_safe(sim)


def test_kip853_truncated_voters_record_puts_the_previous_set_back():
    follower = make("n1")
    follower.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    follower.ready()
    rows = [[0, 1, b"a"], [1, 2, vs.record_payload(["n1", "n2"])]]
    follower.receive(msg("fetch_response", "n2", "n1", 2, leader="n2", error=None,
                         fetch_offset=0, last_fetched_epoch=0, entries=rows,
                         diverging_epoch=None, diverging_end_offset=None, high_watermark=1))
    ready = follower.ready()
    assert follower.voters == ("n1", "n2")
    assert ready.quorum_state.target_voters == ("n1", "n2")
    assert ready.quorum_state.applied_offset == 1
    # A later leader's log ends epoch 1 at offset 1: the record goes, so does the set.
    follower.receive(msg("begin_quorum_epoch", "n3", "n1", 3, leader="n3"))
    follower.ready()
    follower.receive(msg("fetch_response", "n3", "n1", 3, leader="n3", error=None,
                         fetch_offset=2, last_fetched_epoch=2, entries=[],
                         diverging_epoch=1, diverging_end_offset=1, high_watermark=1))
    ready = follower.ready()
    assert follower.voters == THREE and follower.log_end == 1
    assert ready.quorum_state.target_voters is None and ready.quorum_state.applied_offset == -1


# ------------------------------------------------ KIP-595 quorum-state file


def test_kip595_quorum_state_has_applied_offset_current_and_target_voters():
    sim = Sim(THREE, seed=9, observers=("n4",))
    leader = settled(sim)
    for name in THREE:
        if name != leader:
            sim.stall_flush(name)
    _, offset = sim.change_voters("add", "n4")
    state = sim.nodes[leader].disk.state
    assert state.applied_offset == offset
    assert state.current_voters is None  # still the bootstrap voters
    assert state.target_voters == ("n1", "n2", "n3", "n4")
    for name in THREE:
        sim.stall_flush(name, False)
    assert sim.run_until(lambda: sim.nodes[leader].disk.state.target_voters is None, 100)
    state = sim.nodes[leader].disk.state
    assert state.current_voters == ("n1", "n2", "n3", "n4") and state.applied_offset == offset


def test_restart_rebuilds_the_voter_set_from_the_log():
    log = [Entry(0, 1, b"a"), Entry(1, 1, vs.record_payload(["n1", "n2"]))]
    core = make("n1", state=QuorumState(1, None, None, CID), log=log)
    assert core.voters == ("n1", "n2") and core.is_voter
    observer = make("n3", state=QuorumState(1, None, None, CID), log=log)
    assert not observer.is_voter


# ------------------------------------------------- paths the issue lists


def test_kip996_prospective_grants_a_standard_vote_and_keeps_it():
    core = make("n1")
    core.ready()
    tick_until_prospective(core)
    assert core.role == PROSPECTIVE and core.voted_for is None
    core.ready()
    core.receive(msg("vote_request", "n2", "n1", core.epoch, pre_vote=False, last_epoch=0,
                     log_end=0))
    ready = core.ready()
    answer = [x for x in ready.messages if x["type"] == "vote_response"][0]
    assert answer["granted"] is True
    assert core.role == PROSPECTIVE and core.voted_for == "n2"
    assert ready.quorum_state.voted_for == "n2"  # persisted with the grant
    # "If it has already granted a vote to a specific replica, it will continue
    # responding granted to that replica", and refuses anyone else.
    core.receive(msg("vote_request", "n3", "n1", core.epoch, pre_vote=False, last_epoch=0,
                     log_end=0))
    core.receive(msg("vote_request", "n2", "n1", core.epoch, pre_vote=False, last_epoch=0,
                     log_end=0))
    answers = {x["to"]: x["granted"] for x in sent(core, "vote_response")}
    assert answers == {"n3": False, "n2": True}


def test_kip996_follower_keeps_voted_key_in_the_same_epoch():
    core = make("n1")
    core.receive(msg("vote_request", "n2", "n1", 4, pre_vote=False, last_epoch=0, log_end=0))
    core.ready()
    assert core.voted_for == "n2" and core.epoch == 4
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 4, leader="n2"))
    ready = core.ready()
    assert core.role == FOLLOWER and core.voted_for == "n2"
    assert ready.quorum_state == QuorumState(4, "n2", "n2", CID)


def test_kip595_begin_quorum_epoch_is_re_sent_until_acknowledged():
    core = elected_n1()
    assert core.role == LEADER
    assert {x["to"] for x in sent(core, "begin_quorum_epoch")} == {"n2", "n3"}
    # n2 acknowledges; n3 stays silent and is asked again, n2 is not.
    core.receive(msg("begin_quorum_epoch_response", "n2", "n1", core.epoch, leader="n1",
                     error=None))
    resent = []
    for _ in range(core._cfg.election_timeout_ticks):
        core.tick()
        resent += [x["to"] for x in core.ready().messages if x["type"] == "begin_quorum_epoch"]
    assert resent and set(resent) == {"n3"}


def test_kip595_fenced_epoch_for_stale_fetch_begin_and_end_quorum_epoch():
    core = make("n1", state=QuorumState(5, None, None, CID))
    core.ready()
    core.receive(msg("fetch", "n2", "n1", 3, fetch_offset=0, last_fetched_epoch=0,
                     flushed_offset=0))
    assert [x["error"] for x in sent(core, "fetch_response")] == [m.FENCED_EPOCH]
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 3, leader="n2"))
    answers = sent(core, "begin_quorum_epoch_response")
    assert [(a["error"], a["epoch"]) for a in answers] == [(m.FENCED_EPOCH, 5)]
    core.receive(msg("end_quorum_epoch", "n2", "n1", 3, leader="n2"))
    errors = sent(core, "error")
    assert [(e["error"], e["epoch"]) for e in errors] == [(m.FENCED_EPOCH, 5)]
    assert core.epoch == 5 and core.role == UNATTACHED
    # The stale side learns the newer epoch from the error.
    stale = make("n2", state=QuorumState(3, "n2", None, CID))
    stale.ready()
    stale.receive(errors[0])
    assert stale.epoch == 5


def test_kip853_grants_from_non_voters_never_count():
    core = make("n1")
    core.ready()
    # Our log may lag the VotersRecord that made n9 a voter: n9 is not refused.
    core.receive(msg("vote_request", "n9", "n1", 1, pre_vote=False, last_epoch=0, log_end=0))
    answer = sent(core, "vote_response")[0]
    assert answer["granted"] is True and core.voted_for == "n9"
    core = make("n1")
    core.ready()
    tick_until_prospective(core)
    core.receive(msg("vote_response", "n9", "n1", core.epoch, granted=True, pre_vote=True,
                     leader=None))
    assert core.role == PROSPECTIVE  # n9's grant is no majority
    core.receive(msg("vote_response", "n2", "n1", core.epoch, granted=True, pre_vote=True,
                     leader=None))
    assert core.role == CANDIDATE


def test_truncation_below_the_high_watermark_is_refused():
    core = make("n1")
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    core.ready()
    rows = [[0, 2, b"a"], [1, 2, b"b"], [2, 2, b"c"]]
    core.receive(msg("fetch_response", "n2", "n1", 2, leader="n2", error=None, fetch_offset=0,
                     last_fetched_epoch=0, entries=rows, diverging_epoch=None,
                     diverging_end_offset=None, high_watermark=3))
    core.ready()
    assert core.high_watermark == 3
    with pytest.raises(RuntimeError, match="committed"):
        core.receive(msg("fetch_response", "n2", "n1", 2, leader="n2", error=None,
                         fetch_offset=3, last_fetched_epoch=2, entries=[],
                         diverging_epoch=1, diverging_end_offset=0, high_watermark=3))
    assert core.log_end == 3


def test_event_lines_leave_the_node_field_to_the_server():
    # The server writes {"node": <emitter>} | event: an event's own "node"
    # key would overwrite who emitted it.
    sim = Sim(THREE, seed=12, observers=("n4",))
    settled(sim)
    sim.run(5)
    assert isinstance(sim.change_voters("add", "n4"), tuple)
    sim.run(50)
    assert not [e for _, _, e in sim.events if "node" in e]


# ----------------------- KIP-996 with KIP-853: Prospective keeps fetching


def test_kip996_prospective_fetches_from_bootstrap_voters_its_pre_vote_misses():
    # n3 saw n1 removed (its view: n2, n3) and lost touch; n1 was added back
    # and leads, so it sends n3 no BeginQuorumEpoch. n3's pre-vote reaches only
    # n2; a fetch to the bootstrap voter n1 finds the leader.
    removed_n1 = Entry(0, 1, vs.record_payload(("n2", "n3")))
    core = make("n3", state=QuorumState(1, None, None, CID), log=[removed_n1])
    core.ready()
    tick_until_prospective(core)
    out = core.ready().messages
    assert {x["to"] for x in out if x["type"] == m.VOTE_REQUEST} == {"n2"}
    fetches = [x for x in out if x["type"] == m.FETCH]
    assert [x["to"] for x in fetches] == ["n1"] and fetches[0]["fetch_offset"] == 1
    core.receive(msg(m.FETCH_RESPONSE, "n1", "n3", 1, leader="n1", error=None,
                     fetch_offset=1, last_fetched_epoch=1, high_watermark=1, entries=[],
                     diverging_epoch=None, diverging_end_offset=None))
    assert (core.role, core.epoch, core.leader) == (FOLLOWER, 1, "n1")
    assert [x["to"] for x in sent(core, m.FETCH)] == ["n1"]


def test_kip996_prospective_learns_the_leader_from_a_not_leader_answer():
    removed_n1 = Entry(0, 1, vs.record_payload(("n2", "n3")))
    core = make("n3", state=QuorumState(1, None, None, CID), log=[removed_n1])
    tick_until_prospective(core)
    core.ready()
    # n1 follows n2 in our epoch: its NOT_LEADER answer names the leader.
    core.receive(msg(m.FETCH_RESPONSE, "n1", "n3", 1, leader="n2", error=m.NOT_LEADER,
                     fetch_offset=1, last_fetched_epoch=1, high_watermark=None, entries=[],
                     diverging_epoch=None, diverging_end_offset=None))
    assert (core.role, core.epoch, core.leader) == (FOLLOWER, 1, "n2")


def test_kip996_prospective_with_the_bootstrap_voters_only_pre_votes():
    # Nothing to discover beyond its pre-vote: no fetch goes out (as before KIP-853).
    core = make("n3", state=QuorumState(1, None, None, CID))
    tick_until_prospective(core)
    out = core.ready().messages
    assert {x["to"] for x in out if x["type"] == m.VOTE_REQUEST} == {"n1", "n2"}
    assert [x for x in out if x["type"] == m.FETCH] == []


def test_kip996_voter_removed_while_cut_off_finds_the_leader_and_observes():
    # The seed's case (Jose Sancio's): n3 is removed while it cannot reach the
    # leader; back in touch, it learns its removal from the leader's log.
    sim = Sim(THREE, seed=3)
    leader = settled(sim)
    stuck = next(n for n in THREE if n != leader)
    sim.isolate(stuck)
    result = sim.change_voters("remove", stuck)
    assert isinstance(result, tuple), result
    assert sim.run_until(lambda: stuck not in sim.core(leader).committed_voters, 300)
    sim.run(200)   # it canvasses in vain for several rounds, a voter in its own view
    assert sim.core(stuck).is_voter and sim.core(stuck).role != LEADER
    sim.heal()
    assert sim.run_until(lambda: sim.core(stuck).role == FOLLOWER
                         and sim.core(stuck).leader == sim.leader()
                         and not sim.core(stuck).is_voter, 400), sim.describe()
    assert sim.core(sim.leader()).voters == tuple(sorted(set(THREE) - {stuck}))
    assert_safe(sim)


def test_kip996_prospective_does_not_follow_a_resigned_leader_naming_itself():
    removed_n1 = Entry(0, 1, vs.record_payload(("n2", "n3")))
    core = make("n3", state=QuorumState(1, None, None, CID), log=[removed_n1])
    tick_until_prospective(core)
    core.ready()
    # n1 resigned epoch 1: it refuses the fetch and still names itself.
    core.receive(msg(m.FETCH_RESPONSE, "n1", "n3", 1, leader="n1", error=m.NOT_LEADER,
                     fetch_offset=1, last_fetched_epoch=1, high_watermark=None, entries=[],
                     diverging_epoch=None, diverging_end_offset=None))
    assert core.role == PROSPECTIVE


# ------------------------------- voter-change event lines and AddRaftVoter acks
# The membership checker reads voter_change and voters lines by field name.


def leader_with_observer() -> Core:
    """n1 leads epoch 1 of n1-n3, has committed its LeaderChange record (n2
    fetched it) and n4 fetches as an observer caught up to the HW."""
    core = elected_n1()
    assert core.role == LEADER and core.epoch == 1
    core.ready()
    core.flushed(1)
    for node in ("n2", "n4"):
        core.receive(msg("fetch", node, "n1", 1, fetch_offset=1, last_fetched_epoch=1,
                         flushed_offset=1))
    assert core.high_watermark == 1
    core.ready()
    return core


def commit_through(core: Core, end: int, fetchers=("n2", "n4")) -> None:
    core.flushed(end)
    for node in fetchers:
        core.receive(msg("fetch", node, "n1", core.epoch, fetch_offset=end,
                         last_fetched_epoch=core.epoch, flushed_offset=end))


def test_add_voter_event_lines_name_change_voter_offset_and_the_new_set():
    core = leader_with_observer()
    assert core.add_voter("n4") == 1  # right after the LeaderChange record at 0
    assert core.ready().events == [
        {"event": "voter_change", "change": "add", "voter": "n4", "offset": 1, "epoch": 1},
        {"event": "voters", "state": "appended", "voters": ["n1", "n2", "n3", "n4"],
         "offset": 1, "epoch": 1},
    ]


def commit_lines(events: list[dict]) -> list[dict]:
    """The hw and voters lines, without the durable-end bookkeeping (`flushed`
    lines, the hw line's `counted`) that tests/raft/test_counted_copies_sim.py judges."""
    return [{k: v for k, v in e.items() if k != "counted"}
            for e in events if e["event"] != "flushed"]


def test_voters_committed_event_line_names_the_committed_set_once():
    core = leader_with_observer()
    core.add_voter("n4")
    core.ready()
    commit_through(core, 2)
    assert core.high_watermark == 2
    assert commit_lines(core.ready().events) == [
        {"event": "hw", "hw": 2, "epoch": 1},
        {"event": "voters", "state": "committed", "voters": ["n1", "n2", "n3", "n4"],
         "offset": 1, "epoch": 1},
    ]
    core.propose(b"x")
    core.ready()
    commit_through(core, 3)
    assert commit_lines(core.ready().events) == [{"event": "hw", "hw": 3, "epoch": 1}]


def test_remove_voter_event_lines_name_the_removal_and_the_set_left():
    core = leader_with_observer()
    assert core.remove_voter("n3") == 1
    assert core.ready().events == [
        {"event": "voter_change", "change": "remove", "voter": "n3", "offset": 1, "epoch": 1},
        {"event": "voters", "state": "appended", "voters": ["n1", "n2"], "offset": 1,
         "epoch": 1},
    ]


def test_voters_truncated_event_line_names_the_set_put_back():
    follower = make("n1")
    follower.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    rows = [[0, 1, b"a"], [1, 2, vs.record_payload(["n1", "n2"])]]
    follower.receive(msg("fetch_response", "n2", "n1", 2, leader="n2", error=None,
                         fetch_offset=0, last_fetched_epoch=0, entries=rows,
                         diverging_epoch=None, diverging_end_offset=None, high_watermark=1))
    follower.ready()
    follower.receive(msg("begin_quorum_epoch", "n3", "n1", 3, leader="n3"))
    follower.ready()
    follower.receive(msg("fetch_response", "n3", "n1", 3, leader="n3", error=None,
                         fetch_offset=2, last_fetched_epoch=2, entries=[],
                         diverging_epoch=1, diverging_end_offset=1, high_watermark=1))
    voters = [e for e in follower.ready().events if e["event"] == "voters"]
    assert voters == [{"event": "voters", "state": "truncated", "voters": list(THREE),
                       "offset": -1, "epoch": 3}]


def test_add_raft_voter_waiting_for_commit_is_answered_when_the_record_commits():
    core = leader_with_observer()
    core.receive(msg(m.ADD_RAFT_VOTER, "n4", "n1", 1, ack_when_committed=True))
    assert sent(core, m.ADD_RAFT_VOTER_RESPONSE) == []  # appended, not committed
    commit_through(core, 2)
    answers = sent(core, m.ADD_RAFT_VOTER_RESPONSE)
    assert [(a["to"], a["error"], a["leader"]) for a in answers] == [("n4", None, "n1")]
    commit_through(core, 2)
    assert sent(core, m.ADD_RAFT_VOTER_RESPONSE) == []  # answered once


def auto_joiner_waiting_for_its_answer() -> Core:
    """Observer n4 follows n1 in epoch 1, caught up, its AddRaftVoter in flight."""
    core = make("n4", auto_join=True)
    core.receive(msg("begin_quorum_epoch", "n1", "n4", 1, leader="n1"))
    core.ready()
    core.receive(msg("fetch_response", "n1", "n4", 1, leader="n1", error=None,
                     fetch_offset=0, last_fetched_epoch=0, entries=[[0, 1, b"a"]],
                     diverging_epoch=None, diverging_end_offset=None, high_watermark=1))
    core.ready()
    core.tick()
    assert [x["to"] for x in sent(core, m.ADD_RAFT_VOTER)] == ["n1"]
    return core


def test_auto_joiner_told_of_a_newer_epoch_follows_the_leader_the_answer_names():
    core = auto_joiner_waiting_for_its_answer()
    core.receive(msg(m.ADD_RAFT_VOTER_RESPONSE, "n1", "n4", 2, error=m.NOT_LEADER,
                     leader="n2"))
    assert (core.role, core.epoch, core.leader) == (FOLLOWER, 2, "n2")


def test_auto_joiner_told_of_a_newer_epoch_without_a_leader_waits_unattached():
    core = auto_joiner_waiting_for_its_answer()
    core.receive(msg(m.ADD_RAFT_VOTER_RESPONSE, "n1", "n4", 2, error=m.NOT_LEADER,
                     leader=None))
    assert (core.role, core.epoch, core.leader) == (UNATTACHED, 2, None)


def test_auto_joiner_asks_to_join_only_once_a_fetch_shows_it_caught_up():
    core = make("n4", auto_join=True)
    core.receive(msg("begin_quorum_epoch", "n1", "n4", 1, leader="n1"))
    core.ready()
    for _ in range(3):
        core.tick()
    assert sent(core, m.ADD_RAFT_VOTER) == []  # no fetch answered yet
    core.receive(msg("fetch_response", "n1", "n4", 1, leader="n1", error=None,
                     fetch_offset=0, last_fetched_epoch=0, entries=[[0, 1, b"a"]],
                     diverging_epoch=None, diverging_end_offset=None, high_watermark=1))
    core.ready()
    core.tick()
    assert [x["to"] for x in sent(core, m.ADD_RAFT_VOTER)] == ["n1"]


def test_add_raft_voter_from_a_later_epoch_is_observed_and_refused():
    # The requester has seen epoch 3: the epoch-1 leader learns it is stale,
    # leaves the role, and answers that it is not the leader.
    core = leader_with_observer()
    core.receive(msg(m.ADD_RAFT_VOTER, "n4", "n1", 3, ack_when_committed=False))
    answers = sent(core, m.ADD_RAFT_VOTER_RESPONSE)
    assert [(a["to"], a["error"]) for a in answers] == [("n4", m.NOT_LEADER)]
    assert core.epoch == 3 and core.role == UNATTACHED
    # Twin: in its own epoch the same request is taken.
    core = leader_with_observer()
    core.receive(msg(m.ADD_RAFT_VOTER, "n4", "n1", 1, ack_when_committed=False))
    assert [(a["to"], a["error"]) for a in sent(core, m.ADD_RAFT_VOTER_RESPONSE)] == [
        ("n4", None)]
    assert core.epoch == 1 and core.role == LEADER
