"""Unit tests of the raft core driven by hand: one Core, messages in, Ready out."""

from __future__ import annotations

import msgpack
import pytest

from nodes.raft import epoch_cache as ec
from nodes.raft.core import (
    Config,
    Core,
    Entry,
    MalformedMessage,
    NotLeader,
    QuorumState,
    Ready,
)
from nodes.raft.messages import message
from nodes.raft.roles import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    IllegalTransition,
    check_transition,
)

CID = "test-cluster"
THREE = ("n1", "n2", "n3")


def make(
    node: str = "n1",
    voters: tuple[str, ...] = THREE,
    state: QuorumState | None = None,
    log: list[Entry] | None = None,
    **cfg,
) -> Core:
    return Core(Config(node, voters, CID, **cfg), state, log or [], seed=1)


def msg(kind: str, sender: str, to: str, epoch: int, **fields) -> dict:
    return message(kind, sender, to, CID, epoch, **fields)


def entries(*epochs: int) -> list[Entry]:
    return [Entry(i, e, b"e%d" % i) for i, e in enumerate(epochs)]


def tick_until(core: Core, predicate, limit: int = 100) -> None:
    for _ in range(limit):
        if predicate():
            return
        core.tick()
    assert predicate()


def sent(ready: Ready, kind: str) -> list[dict]:
    return [m for m in ready.messages if m["type"] == kind]


def grant_votes(core: Core, pre_vote: bool, voters=("n2",)) -> None:
    for v in voters:
        core.receive(
            msg(
                "vote_response",
                v,
                core.node_id,
                core.epoch,
                granted=True,
                pre_vote=pre_vote,
                leader=None,
            )
        )


def elect(core: Core) -> None:
    """Drive a fresh core to leadership with n2's votes."""
    tick_until(core, lambda: core.role == PROSPECTIVE)
    grant_votes(core, pre_vote=True)
    assert core.role == CANDIDATE
    grant_votes(core, pre_vote=False)
    assert core.role == LEADER


def follower_of(leader: str = "n2", epoch: int = 1, node: str = "n1", **kw) -> Core:
    core = make(node, **kw)
    core.receive(msg("begin_quorum_epoch", leader, node, epoch, leader=leader))
    assert core.role == FOLLOWER
    return core


def fetch_ok(core: Core, leader: str = "n2", hw: int = 0, rows: list | None = None) -> None:
    core.receive(
        msg(
            "fetch_response",
            leader,
            core.node_id,
            core.epoch,
            leader=leader,
            error=None,
            fetch_offset=core.log_end,
            last_fetched_epoch=core.last_epoch,
            entries=rows or [],
            diverging_epoch=None,
            diverging_end_offset=None,
            high_watermark=hw,
        )
    )


def diverging(core: Core, fetch_offset: int, last_fetched_epoch: int, epoch: int,
              end_offset: int, leader: str = "n2") -> dict:
    """The leader's answer to a fetch whose (offset, epoch) is not in its log."""
    return msg("fetch_response", leader, core.node_id, core.epoch, leader=leader, error=None,
               fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch, entries=[],
               diverging_epoch=epoch, diverging_end_offset=end_offset, high_watermark=0)


# ------------------------------------------------------------------ roles


def test_only_prospective_becomes_candidate():
    for role in (UNATTACHED, FOLLOWER, RESIGNED, LEADER):
        with pytest.raises(IllegalTransition):
            check_transition(role, CANDIDATE)
    check_transition(PROSPECTIVE, CANDIDATE)
    check_transition(CANDIDATE, PROSPECTIVE)
    with pytest.raises(IllegalTransition):
        check_transition(LEADER, FOLLOWER)


def test_pre_vote_canvasses_without_bumping_epoch():
    core = make()
    core.ready()
    tick_until(core, lambda: core.role == PROSPECTIVE)
    ready = core.ready()
    requests = sent(ready, "vote_request")
    assert {r["to"] for r in requests} == {"n2", "n3"}
    assert all(r["pre_vote"] and r["epoch"] == 0 for r in requests)
    assert core.epoch == 0
    assert ready.quorum_state is None  # nothing to persist while canvassing


def test_won_pre_vote_bumps_epoch_and_persists_own_vote():
    core = make()
    tick_until(core, lambda: core.role == PROSPECTIVE)
    core.ready()
    grant_votes(core, pre_vote=True)
    ready = core.ready()
    assert core.role == CANDIDATE and core.epoch == 1
    assert ready.quorum_state == QuorumState(1, None, "n1", CID)
    assert all(not r["pre_vote"] and r["epoch"] == 1 for r in sent(ready, "vote_request"))


def test_candidate_falls_back_to_prospective_on_timeout_and_on_loss():
    core = make()
    tick_until(core, lambda: core.role == PROSPECTIVE)
    grant_votes(core, pre_vote=True)
    tick_until(core, lambda: core.role != CANDIDATE)
    assert core.role == PROSPECTIVE and core.epoch == 1
    grant_votes(core, pre_vote=True)
    assert core.role == CANDIDATE and core.epoch == 2
    for v in ("n2", "n3"):
        core.receive(msg("vote_response", v, "n1", 2, granted=False, pre_vote=False, leader=None))
    # A lost election backs off for the rest of its timeout, then canvasses again.
    assert core.role == CANDIDATE
    tick_until(core, lambda: core.role != CANDIDATE, limit=20)
    assert core.role == PROSPECTIVE and core.epoch == 2


def test_lost_pre_vote_without_leader_goes_unattached_with_leader_goes_follower():
    core = make()
    tick_until(core, lambda: core.role == PROSPECTIVE)
    for v in ("n2", "n3"):
        core.receive(msg("vote_response", v, "n1", 0, granted=False, pre_vote=True, leader=None))
    assert core.role == UNATTACHED and core.epoch == 0

    follower = follower_of("n2", 3)
    tick_until(follower, lambda: follower.role == PROSPECTIVE)
    follower.receive(msg("vote_response", "n3", "n1", 3, granted=False, pre_vote=True, leader="n2"))
    assert follower.role == FOLLOWER and follower.leader == "n2" and follower.epoch == 3


def test_lost_pre_vote_goes_back_to_the_leader_it_remembers():
    # The rejections name no leader: the prospective's own memory of n2 decides.
    follower = follower_of("n2", 3)
    tick_until(follower, lambda: follower.role == PROSPECTIVE)
    for v in ("n2", "n3"):
        follower.receive(msg("vote_response", v, "n1", 3, granted=False, pre_vote=True,
                             leader=None))
    assert follower.role == FOLLOWER and follower.leader == "n2" and follower.epoch == 3


def test_leader_appends_leader_change_and_announces():
    core = make()
    elect(core)
    ready = core.ready()
    assert core.leader == "n1"
    assert ready.append[0].epoch == core.epoch
    assert msgpack.unpackb(ready.append[0].payload) == {
        "op": "leader_change",
        "leader": "n1",
        "epoch": 1,
    }
    assert {m["to"] for m in sent(ready, "begin_quorum_epoch")} == {"n2", "n3"}


def test_resigned_goes_unattached_with_epoch_plus_one():
    core = make(state=QuorumState(4, "n1", "n1", CID))
    assert core.role == RESIGNED  # a restarted leader never resumes
    tick_until(core, lambda: core.role != RESIGNED)
    roles = [(e["role"], e["epoch"]) for e in core.ready().events if e["event"] == "role"]
    assert roles[-2:] == [(UNATTACHED, 5), (PROSPECTIVE, 5)]


def test_single_voter_elects_itself_and_commits_on_own_flush():
    core = make(voters=("n1",))
    tick_until(core, lambda: core.role == LEADER)
    offset = core.propose(b"x")
    assert core.high_watermark == 0  # written, not flushed
    core.ready()
    core.flushed(offset + 1)
    ready = core.ready()
    assert core.high_watermark == offset + 1
    assert [e.payload for e in ready.committed][-1] == b"x"


def test_propose_on_follower_raises_not_leader_with_hint():
    core = follower_of("n2", 1)
    with pytest.raises(NotLeader) as info:
        core.propose(b"x")
    assert info.value.leader == "n2"
    assert str(info.value) == "not the leader (leader hint: n2)"


def test_ready_is_empty_only_with_nothing_in_any_field():
    assert Ready().is_empty()
    for field_value in ({"quorum_state": QuorumState(1, None, None, CID)}, {"truncate_to": 0},
                        {"append": entries(1)}, {"epoch_cache": []}, {"messages": [{}]},
                        {"committed": entries(1)}, {"high_watermark": 0},
                        {"events": [{"event": "x"}]}):
        assert not Ready(**field_value).is_empty(), field_value


def test_entry_at_covers_exactly_the_log():
    core = make(log=entries(1, 1, 2))
    assert [core.entry_at(o) for o in (-1, 0, 2, 3)] == [None, entries(1)[0],
                                                         entries(1, 1, 2)[2], None]


# ------------------------------------------------------------------ votes


def vote_request(core: Core, sender: str, epoch: int, pre_vote: bool, last_epoch=0, log_end=0):
    core.receive(
        msg(
            "vote_request",
            sender,
            core.node_id,
            epoch,
            pre_vote=pre_vote,
            last_epoch=last_epoch,
            log_end=log_end,
        )
    )
    responses = sent(core.ready(), "vote_response")
    assert len(responses) == 1
    return responses[0]


@pytest.mark.parametrize(
    "candidate_last, expect",
    [((2, 3), True), ((2, 5), True), ((3, 0), True), ((2, 2), False), ((1, 9), False)],
)
def test_pre_vote_granted_when_log_at_least_as_up_to_date(candidate_last, expect):
    core = make(state=QuorumState(2, None, None, CID), log=entries(1, 2, 2))
    core.ready()
    last_epoch, log_end = candidate_last
    response = vote_request(core, "n2", 2, True, last_epoch, log_end)
    assert response["granted"] is expect and response["pre_vote"] is True
    assert core.epoch == 2 and core.voted_for is None  # pre-votes bind nothing



@pytest.mark.parametrize(
    "candidate_last, expect",
    [((2, 3), True), ((2, 5), True), ((3, 0), True), ((2, 2), False), ((1, 9), False)],
)
def test_standard_vote_granted_only_when_log_at_least_as_up_to_date(candidate_last, expect):
    # Raft's election restriction on the real vote (not the pre-vote): a
    # candidate missing a committed entry must not win this voter.
    core = make(state=QuorumState(2, None, None, CID), log=entries(1, 2, 2))
    core.ready()
    last_epoch, log_end = candidate_last
    response = vote_request(core, "n2", 3, False, last_epoch, log_end)
    assert response["granted"] is expect and response["pre_vote"] is False
    assert core.epoch == 3
    assert core.voted_for == ("n2" if expect else None)
    # A stale candidate's request leaves the vote free for an up-to-date one.
    assert vote_request(core, "n3", 3, False, 2, 3)["granted"] is (not expect)

def test_leader_rejects_pre_vote():
    core = make()
    elect(core)
    core.ready()
    assert vote_request(core, "n2", core.epoch, True, 9, 9)["granted"] is False
    assert core.role == LEADER


def test_follower_rejects_pre_vote_once_it_fetched_from_leader():
    core = follower_of("n2", 1)
    core.ready()
    assert vote_request(core, "n3", 1, True)["granted"] is True  # never heard from n2 yet
    fetch_ok(core)
    assert vote_request(core, "n3", 1, True)["granted"] is False
    assert core.role == FOLLOWER and core.epoch == 1


def test_standard_vote_once_per_epoch_persisted_with_the_grant():
    core = make(state=QuorumState(1, None, None, CID))
    core.ready()
    core.receive(msg("vote_request", "n2", "n1", 2, pre_vote=False, last_epoch=0, log_end=0))
    ready = core.ready()
    assert ready.quorum_state == QuorumState(2, None, "n2", CID)
    assert sent(ready, "vote_response")[0]["granted"] is True
    assert vote_request(core, "n3", 2, False)["granted"] is False
    assert vote_request(core, "n2", 2, False)["granted"] is True  # retry of the same vote


def test_restart_keeps_vote():
    core = make(state=QuorumState(2, None, "n2", CID))
    assert vote_request(core, "n3", 2, False)["granted"] is False
    assert vote_request(core, "n3", 3, False)["granted"] is True


def test_standard_vote_with_higher_epoch_dethrones_leader():
    core = make()
    elect(core)
    core.ready()
    response = vote_request(core, "n2", core.epoch + 1, False, 9, 9)
    assert response["granted"] is True
    assert core.role == UNATTACHED and core.epoch == 2


# ------------------------------------------------------------ replication


def test_leader_answers_unknown_epoch_with_diverging_epoch():
    core = make(state=QuorumState(2, None, None, CID), log=entries(1, 1, 1))
    core.ready()
    tick_until(core, lambda: core.role == PROSPECTIVE)
    grant_votes(core, pre_vote=True)
    grant_votes(core, pre_vote=False)
    assert core.role == LEADER and core.epoch == 3
    core.ready()
    core.receive(
        msg("fetch", "n2", "n1", 3, fetch_offset=5, last_fetched_epoch=2, flushed_offset=5)
    )
    (response,) = sent(core.ready(), "fetch_response")
    assert response["diverging_epoch"] == 1 and response["diverging_end_offset"] == 3
    assert response["entries"] == []


def test_follower_truncates_and_refetches_then_ignores_stale_response():
    core = follower_of("n2", 3, log=entries(1, 1, 2, 2), state=QuorumState(3, None, None, CID))
    core.ready()
    stale = diverging(core, fetch_offset=4, last_fetched_epoch=2, epoch=1, end_offset=3)
    core.receive(dict(stale))
    ready = core.ready()
    assert ready.truncate_to == 2
    assert [e for e in ready.events if e["event"] == "truncate"] == [
        {"event": "truncate", "from": 4, "to": 2, "reason": "diverging-epoch"}
    ]
    (refetch,) = sent(ready, "fetch")
    assert (refetch["fetch_offset"], refetch["last_fetched_epoch"]) == (2, 1)
    # A duplicate of the old answer describes a log we no longer have.
    core.receive(stale)
    assert core.log_end == 2 and core.ready().truncate_to is None



def _response_in_epoch(core: Core, epoch: int, **fields) -> dict:
    base = dict(leader="n2", error=None, fetch_offset=core.log_end,
                last_fetched_epoch=core.last_epoch, entries=[], diverging_epoch=None,
                diverging_end_offset=None, high_watermark=0)
    return msg("fetch_response", "n2", core.node_id, epoch, **dict(base, **fields))


@pytest.mark.parametrize("answer_epoch, applied", [(3, True), (2, False)])
def test_follower_applies_a_fetch_response_only_from_its_current_epoch(answer_epoch, applied):
    # n2 led epoch 2 and leads epoch 3: an answer it sent in epoch 2, arriving
    # late, describes a leader's log from before this epoch's election.
    core = follower_of("n2", 3, log=entries(1, 1, 2), state=QuorumState(3, None, None, CID))
    core.ready()
    core.receive(_response_in_epoch(core, answer_epoch, entries=[[3, 2, b"x"]],
                                    high_watermark=4))
    ready = core.ready()
    assert core.log_end == (4 if applied else 3)
    assert core.high_watermark == (4 if applied else 0)
    assert [e.offset for e in ready.append] == ([3] if applied else [])


@pytest.mark.parametrize("answer_epoch, truncated", [(3, True), (2, False)])
def test_follower_truncates_only_on_a_diverging_answer_from_its_current_epoch(
        answer_epoch, truncated):
    core = follower_of("n2", 3, log=entries(1, 1, 2, 2), state=QuorumState(3, None, None, CID))
    core.ready()
    core.receive(_response_in_epoch(core, answer_epoch, diverging_epoch=1,
                                    diverging_end_offset=2))
    ready = core.ready()
    assert ready.truncate_to == (2 if truncated else None)
    assert core.log_end == (2 if truncated else 4)


@pytest.mark.parametrize("fetch_epoch, error", [(2, "fenced_epoch"), (3, "not_leader")])
def test_fetch_to_a_non_leader_or_in_an_old_epoch_gets_an_error_echoing_the_request(
        fetch_epoch, error):
    core = follower_of("n2", 3, state=QuorumState(3, None, None, CID))
    core.ready()
    core.receive(msg("fetch", "n3", "n1", fetch_epoch, fetch_offset=7, last_fetched_epoch=2,
                     flushed_offset=7))
    (response,) = sent(core.ready(), "fetch_response")
    assert response["to"] == "n3" and response["epoch"] == 3
    assert (response["error"], response["leader"]) == (error, "n2")
    assert (response["fetch_offset"], response["last_fetched_epoch"]) == (7, 2)
    assert response["entries"] == [] and response["diverging_epoch"] is None


def test_two_truncations_before_a_ready_cut_to_the_lower_and_rewrite_the_epoch_cache():
    core = follower_of("n2", 3, log=entries(1, 1, 2, 2, 2), state=QuorumState(3, None, None, CID))
    core.ready()
    core.receive(diverging(core, fetch_offset=5, last_fetched_epoch=2, epoch=2, end_offset=4))
    core.receive(diverging(core, fetch_offset=4, last_fetched_epoch=2, epoch=1, end_offset=2))
    ready = core.ready()
    assert ready.truncate_to == 2 and core.log_end == 2
    assert ready.epoch_cache == [(1, 0)]
    assert [(e["from"], e["to"]) for e in ready.events if e["event"] == "truncate"] == [
        (5, 4), (4, 2)]


def test_a_later_higher_truncation_keeps_the_lower_one_pending_for_the_disk():
    # Cut to 2, fetch new entries 2..4, then cut to 4, all before one Ready:
    # the disk still holds the old 2..4, so it must be cut at 2.
    core = follower_of("n2", 3, log=entries(1, 1, 2, 2, 2), state=QuorumState(3, None, None, CID))
    core.ready()
    core.receive(diverging(core, fetch_offset=5, last_fetched_epoch=2, epoch=1, end_offset=2))
    fetch_ok(core, rows=[[2, 3, b"a"], [3, 3, b"b"], [4, 3, b"c"]])
    core.receive(diverging(core, fetch_offset=5, last_fetched_epoch=3, epoch=3, end_offset=4))
    ready = core.ready()
    assert ready.truncate_to == 2
    assert [e.offset for e in ready.append] == [2, 3]

def test_follower_hw_is_min_of_leader_hw_and_own_end_and_never_goes_back():
    core = follower_of("n2", 1)
    core.ready()
    fetch_ok(core, hw=5, rows=[[0, 1, b"a"], [1, 1, b"b"]])
    assert core.high_watermark == 2
    ready = core.ready()
    assert ready.high_watermark == 2 and [e.payload for e in ready.committed] == [b"a", b"b"]
    fetch_ok(core, hw=1)
    assert core.high_watermark == 2


def test_leader_commits_only_majority_flushed_offsets_of_its_epoch():
    core = make()
    elect(core)
    core.ready()
    offset = core.propose(b"x")
    core.ready()
    core.flushed(offset + 1)
    # n2 has everything but flushed nothing: dirty offsets do not count.
    core.receive(
        msg("fetch", "n2", "n1", 1, fetch_offset=offset + 1, last_fetched_epoch=1, flushed_offset=0)
    )
    assert core.high_watermark == 0
    core.receive(
        msg(
            "fetch",
            "n2",
            "n1",
            1,
            fetch_offset=offset + 1,
            last_fetched_epoch=1,
            flushed_offset=offset + 1,
        )
    )
    assert core.high_watermark == offset + 1


def test_leader_does_not_commit_older_epoch_entries_by_counting():
    core = make(state=QuorumState(1, None, None, CID), log=entries(1, 1))
    elect(core)
    core.ready()
    core.flushed(2)  # the LeaderChange record at offset 2 is not flushed yet
    core.receive(
        msg("fetch", "n2", "n1", 2, fetch_offset=2, last_fetched_epoch=1, flushed_offset=2)
    )
    assert core.high_watermark == 0
    core.flushed(3)
    core.receive(
        msg("fetch", "n2", "n1", 2, fetch_offset=3, last_fetched_epoch=2, flushed_offset=3)
    )
    assert core.high_watermark == 3


def test_check_quorum_resigns_and_sends_end_quorum_epoch():
    core = make(fetch_timeout_ticks=15)
    elect(core)
    core.ready()
    for _ in range(15):
        core.tick()
    ready = core.ready()
    assert core.role == RESIGNED
    assert {m["to"] for m in sent(ready, "end_quorum_epoch")} == {"n2", "n3"}


def test_check_quorum_keeps_leader_with_fetching_majority():
    core = make(fetch_timeout_ticks=15)
    elect(core)
    for _ in range(60):
        core.tick()
        core.receive(
            msg("fetch", "n2", "n1", 1, fetch_offset=0, last_fetched_epoch=0, flushed_offset=0)
        )
    assert core.role == LEADER


def test_flushed_claim_is_clamped_by_undrained_truncation():
    core = follower_of("n2", 2, log=entries(1, 1, 1, 1), state=QuorumState(2, None, None, CID))
    core.ready()
    core.receive(diverging(core, fetch_offset=4, last_fetched_epoch=1, epoch=1, end_offset=2))
    assert core.log_end == 2 and core.flushed_end == 2
    core.flushed(4)  # an fsync of the old disk log, before the truncation was applied
    assert core.flushed_end == 2
    ready = core.ready()
    assert ready.truncate_to == 2 and ready.append == []


def test_truncation_drops_undrained_appends():
    core = follower_of("n2", 2, log=entries(1, 1), state=QuorumState(2, None, None, CID))
    core.ready()
    fetch_ok(core, rows=[[2, 1, b"x"], [3, 1, b"y"]])
    core.receive(diverging(core, fetch_offset=4, last_fetched_epoch=1, epoch=1, end_offset=3))
    ready = core.ready()
    assert ready.truncate_to is None  # never reached the disk
    assert [e.offset for e in ready.append] == [2]


# ------------------------------------------------------------- cluster id


@pytest.mark.parametrize(
    "kind, fields",
    [
        ("vote_request", {"pre_vote": False, "last_epoch": 9, "log_end": 9}),
        ("begin_quorum_epoch", {"leader": "n2"}),
        ("end_quorum_epoch", {"leader": "n2"}),
        ("fetch", {"fetch_offset": 0, "last_fetched_epoch": 0, "flushed_offset": 0}),
    ],
)
def test_foreign_cluster_request_gets_error_and_changes_nothing(kind, fields):
    core = follower_of("n2", 1)
    core.ready()
    foreign = message(kind, "n2", "n1", "other-cluster", 7, **fields)
    core.receive(foreign)
    ready = core.ready()
    assert core.role == FOLLOWER and core.epoch == 1 and core.voted_for is None
    assert ready.quorum_state is None and ready.events == []
    (error,) = ready.messages
    assert error["type"] == "error" and error["error"] == "cluster_id_mismatch"
    assert error["in_reply_to"] == kind and error["cluster_id"] == CID
    assert error["to"] == "n2"


def test_foreign_cluster_response_is_dropped_silently():
    core = follower_of("n2", 1)
    core.ready()
    core.receive(
        message(
            "fetch_response",
            "n2",
            "n1",
            "other-cluster",
            1,
            leader="n2",
            error=None,
            fetch_offset=0,
            last_fetched_epoch=0,
            entries=[[0, 1, b"evil"]],
            diverging_epoch=None,
            diverging_end_offset=None,
            high_watermark=1,
        )
    )
    assert core.ready().is_empty()
    assert core.log_end == 0


def test_malformed_message_raises():
    core = make()
    with pytest.raises(MalformedMessage):
        core.receive({"type": "vote_request", "to": "n1", "cluster_id": CID, "from": "n2"})
    with pytest.raises(MalformedMessage):
        core.receive(msg("bogus", "n2", "n1", 0))


def test_constructor_rejects_foreign_state_and_gappy_log():
    with pytest.raises(ValueError):
        make(state=QuorumState(1, None, None, "other"))
    with pytest.raises(ValueError):
        make(log=[Entry(1, 1, b"")])


# ------------------------------------------------------------ epoch cache


def test_epoch_cache_build_truncate_and_lookup():
    cache = ec.build([(0, 1), (1, 1), (2, 3), (3, 3), (4, 5)])
    assert cache == [(1, 0), (3, 2), (5, 4)]
    assert ec.end_offset_for_epoch(cache, 4, 5) == (3, 4)
    assert ec.end_offset_for_epoch(cache, 9, 5) == (5, 5)
    assert ec.end_offset_for_epoch(cache, 0, 5) == (ec.NO_EPOCH, 0)
    assert ec.truncate(cache, 3) and cache == [(1, 0), (3, 2)]
    with pytest.raises(ValueError):
        ec.build([(0, 2), (1, 1)])


def test_graceful_resign_hands_over_quickly():
    core = make()
    elect(core)
    core.ready()
    core.resign()
    ready = core.ready()
    assert core.role == RESIGNED
    assert {m["to"] for m in sent(ready, "end_quorum_epoch")} == {"n2", "n3"}
    with pytest.raises(NotLeader):
        core.propose(b"x")
    # A follower told so stops shielding the old leader and canvasses soon.
    follower = follower_of("n1", core.epoch, node="n2")
    fetch_ok(follower, leader="n1")
    follower.receive(msg("end_quorum_epoch", "n1", "n2", core.epoch, leader="n1"))
    follower.ready()
    assert vote_request(follower, "n3", core.epoch, True)["granted"] is True
    tick_until(follower, lambda: follower.role == PROSPECTIVE, limit=11)


# ------------------------------------------- event lines (what checkers read)
# The server writes each event as a line of the node's event log; the
# invariants, divergence and membership checkers read these fields by name.
# One test per shape, each comparing the whole line.


def test_role_event_line_names_role_epoch_and_leader():
    core = make()
    assert core.ready().events == [
        {"event": "role", "role": UNATTACHED, "epoch": 0, "leader": None}]
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 4, leader="n2"))
    roles = [e for e in core.ready().events if e["event"] == "role"]
    assert roles[-1] == {"event": "role", "role": FOLLOWER, "epoch": 4, "leader": "n2"}


def test_pre_vote_event_line_names_candidate_and_the_granter_role_and_leader():
    # What the KIP-996 invariant judges: a follower of a live leader granting.
    core = follower_of("n2", epoch=3)
    core.ready()
    answer = vote_request(core, "n3", 3, True)
    assert answer["granted"] is True
    core.receive(msg("vote_request", "n3", "n1", 3, pre_vote=True, last_epoch=0, log_end=0))
    assert [e for e in core.ready().events if e["event"] == "pre_vote"] == [
        {"event": "pre_vote", "epoch": 3, "candidate": "n3", "role": FOLLOWER, "leader": "n2",
         "last_epoch": 0, "log_end": 0, "candidate_last_epoch": 0, "candidate_log_end": 0}]


def test_no_pre_vote_event_line_for_a_refused_pre_vote():
    core = follower_of("n2", epoch=3)
    fetch_ok(core)
    core.ready()
    answer = vote_request(core, "n3", 3, True)
    assert answer["granted"] is False
    core.receive(msg("vote_request", "n3", "n1", 3, pre_vote=True, last_epoch=0, log_end=0))
    assert [e for e in core.ready().events if e["event"] == "pre_vote"] == []


def test_vote_event_line_names_epoch_candidate_and_both_logs():
    # Both logs as the grant compared them: the election restriction's evidence.
    core = make()
    core.ready()
    core.receive(msg("vote_request", "n3", "n1", 2, pre_vote=False, last_epoch=1, log_end=4))
    assert [e for e in core.ready().events if e["event"] == "vote"] == [
        {"event": "vote", "epoch": 2, "candidate": "n3", "last_epoch": 0, "log_end": 0,
         "candidate_last_epoch": 1, "candidate_log_end": 4}]


def test_hw_event_line_names_the_new_high_watermark_and_epoch():
    core = make()
    elect(core)
    core.ready()
    core.flushed(1)  # the leader's own LeaderChange record, now durable
    core.receive(msg("fetch", "n2", "n1", 1, fetch_offset=1, last_fetched_epoch=1,
                     flushed_offset=1))
    # The leader names each voter's durable end it counted, its own included,
    # after the line that says its own end became durable.
    assert core.ready().events == [{"event": "flushed", "end": 1},
                                   {"event": "hw", "hw": 1, "epoch": 1,
                                    "counted": {"n1": 1, "n2": 1, "n3": 0}}]
    # A follower's line carries the HW it learned from the leader.
    follower = follower_of("n2", epoch=2)
    follower.ready()
    fetch_ok(follower, hw=2, rows=[[0, 2, b"a"], [1, 2, b"b"], [2, 2, b"c"]])
    assert [e for e in follower.ready().events if e["event"] == "hw"] == [
        {"event": "hw", "hw": 2, "epoch": 2}]


def test_truncate_event_line_names_from_to_and_reason():
    core = follower_of("n2", epoch=3, state=QuorumState(2, None, None, CID),
                       log=entries(1, 2, 2))
    core.ready()
    core.receive(diverging(core, 3, 2, epoch=1, end_offset=1))
    assert [e for e in core.ready().events if e["event"] == "truncate"] == [
        {"event": "truncate", "from": 3, "to": 1, "reason": "diverging-epoch"}]


def test_votes_again_event_line_names_epoch_leader_and_the_hw_caught_up_to():
    core = make(state=QuorumState(0, None, None, CID, abstain=True), log=entries(1))
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    core.ready()
    fetch_ok(core, hw=1)
    assert [e for e in core.ready().events if e["event"] == "votes_again"] == [
        {"event": "votes_again", "epoch": 2, "leader": "n2", "hw": 1}]


def test_no_votes_again_event_line_while_behind_the_leader_hw():
    core = make(state=QuorumState(0, None, None, CID, abstain=True), log=entries(1))
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    core.ready()
    fetch_ok(core, hw=5)
    assert [e for e in core.ready().events if e["event"] == "votes_again"] == []


# --------------------------------------- message fields other nodes act on


def test_a_later_answer_from_the_same_voter_replaces_its_earlier_one():
    # Five voters: three refusals lose the pre-vote. n2 first refuses, then
    # grants (a retried request answered after its state changed): only the
    # grant counts, so two further refusals are not yet a lost pre-vote.
    core = make(voters=("n1", "n2", "n3", "n4", "n5"))
    tick_until(core, lambda: core.role == PROSPECTIVE)

    def answer(voter: str, granted: bool) -> None:
        core.receive(msg("vote_response", voter, "n1", core.epoch, granted=granted,
                         pre_vote=True, leader=None))

    answer("n2", False)
    answer("n2", True)
    answer("n3", False)
    answer("n4", False)
    assert core.role == PROSPECTIVE
    answer("n5", False)
    assert core.role == UNATTACHED  # n3, n4, n5: three of five refused


def test_fenced_begin_quorum_epoch_answer_names_the_leader_the_stale_one_then_follows():
    core = follower_of("n3", epoch=3)
    core.ready()
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    answers = sent(core.ready(), "begin_quorum_epoch_response")
    assert [(a["error"], a["epoch"], a["leader"]) for a in answers] == [
        ("fenced_epoch", 3, "n3")]
    stale = make("n2", state=QuorumState(2, "n2", None, CID))
    stale.ready()
    stale.receive(answers[0])
    assert (stale.role, stale.epoch, stale.leader) == (FOLLOWER, 3, "n3")


def test_fenced_begin_quorum_epoch_answer_without_a_leader_leaves_the_stale_one_unattached():
    core = make(state=QuorumState(3, None, None, CID))
    core.ready()
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 2, leader="n2"))
    answers = sent(core.ready(), "begin_quorum_epoch_response")
    assert [(a["error"], a["leader"]) for a in answers] == [("fenced_epoch", None)]
    stale = make("n2", state=QuorumState(2, "n2", None, CID))
    stale.ready()
    stale.receive(answers[0])
    assert (stale.role, stale.epoch, stale.leader) == (UNATTACHED, 3, None)


def test_a_voter_that_fetched_is_not_sent_begin_quorum_epoch_again():
    # A fetch in the leader's epoch acknowledges it as BeginQuorumEpoch's answer would.
    core = make()
    elect(core)
    core.ready()
    core.receive(msg("fetch", "n2", "n1", core.epoch, fetch_offset=0, last_fetched_epoch=0,
                     flushed_offset=0))
    resent = []
    for _ in range(core._cfg.election_timeout_ticks):
        core.tick()
        resent += [x["to"] for x in sent(core.ready(), "begin_quorum_epoch")]
    assert resent and set(resent) == {"n3"}


def test_end_quorum_epoch_names_the_resigning_leader():
    # KIP-595 EndQuorumEpoch carries LeaderId: the leader that gives the epoch up.
    core = make()
    elect(core)
    core.ready()
    core.resign()
    ends = sent(core.ready(), "end_quorum_epoch")
    assert sorted((e["to"], e["epoch"], e["leader"]) for e in ends) == [
        ("n2", core.epoch, "n1"), ("n3", core.epoch, "n1")]


def test_constructor_errors_name_the_foreign_cluster_and_the_first_misplaced_entry():
    with pytest.raises(ValueError, match="belongs to cluster 'other'"):
        make(state=QuorumState(1, None, None, "other"))
    with pytest.raises(ValueError, match="not contiguous from 0 at index 1"):
        make(log=[Entry(0, 1, b""), Entry(2, 1, b"")])


def test_epoch_cache_refuses_an_append_from_an_older_epoch_naming_both():
    cache = ec.build([(0, 1), (1, 3)])
    with pytest.raises(ValueError, match="append of epoch 2 after epoch 3"):
        ec.note_append(cache, 2, 2)
    assert ec.note_append(cache, 3, 2) is False and ec.note_append(cache, 4, 3) is True


def test_a_fresh_core_reports_no_high_watermark_change():
    ready = make().ready()
    assert ready.high_watermark is None and ready.committed == []


def test_followers_told_of_a_resignation_canvass_staggered_over_the_election_timeout():
    # Each waits 1 + a random share of the election timeout (KIP-595's
    # EndQuorumEpoch back-off), so the followers do not split their votes.
    delays = set()
    for seed in range(20):
        core = Core(Config("n2", THREE, CID), None, [], seed=seed)
        core.receive(msg("begin_quorum_epoch", "n1", "n2", 1, leader="n1"))
        fetch_ok(core, leader="n1")
        core.ready()
        core.receive(msg("end_quorum_epoch", "n1", "n2", 1, leader="n1"))
        start = core.now
        tick_until(core, lambda c=core: c.role == PROSPECTIVE, limit=30)
        delays.add(core.now - start)
    timeout = Config("n2", THREE, CID).election_timeout_ticks
    assert min(delays) >= 1 and max(delays) <= timeout and len(delays) > 3, delays


def test_a_fetch_answer_from_a_newer_epoch_sends_the_fetcher_to_the_leader_it_names():
    core = follower_of("n2", epoch=1)
    core.ready()
    core.receive(msg("fetch_response", "n3", "n1", 5, leader="n3", error="not_leader",
                     fetch_offset=0, last_fetched_epoch=0, high_watermark=None, entries=[],
                     diverging_epoch=None, diverging_end_offset=None))
    assert (core.role, core.epoch, core.leader) == (FOLLOWER, 5, "n3")
    assert [f["to"] for f in sent(core.ready(), "fetch")] == ["n3"]


def test_a_fetch_answer_from_a_newer_epoch_naming_no_leader_leaves_the_fetcher_unattached():
    core = follower_of("n2", epoch=1)
    core.ready()
    core.receive(msg("fetch_response", "n3", "n1", 5, leader=None, error="not_leader",
                     fetch_offset=0, last_fetched_epoch=0, high_watermark=None, entries=[],
                     diverging_epoch=None, diverging_end_offset=None))
    assert (core.role, core.epoch, core.leader) == (UNATTACHED, 5, None)


def test_a_repeated_begin_quorum_epoch_changes_nothing_for_a_follower_of_that_leader():
    # Leaders re-announce until acknowledged: a follower that already fetched
    # keeps shielding its leader from pre-votes and writes no new role line.
    core = follower_of("n2", epoch=3)
    fetch_ok(core)
    core.ready()
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 3, leader="n2"))
    ready = core.ready()
    assert [e for e in ready.events if e["event"] == "role"] == []
    assert [(a["error"], a["leader"]) for a in sent(ready, "begin_quorum_epoch_response")] == [
        (None, "n2")]
    assert vote_request(core, "n3", 3, True)["granted"] is False


def test_malformed_message_error_names_the_message_type():
    core = make()
    with pytest.raises(MalformedMessage, match="malformed 'vote_request' message"):
        core.receive({"type": "vote_request", "to": "n1", "cluster_id": CID, "from": "n2"})
