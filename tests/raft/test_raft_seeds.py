"""Each scenario from the protocol seeds (../shared/seeds) as a deterministic test."""

from __future__ import annotations

import pytest

from nodes.raft import bugs
from nodes.raft import epoch_cache as ec
from nodes.raft.core import Entry, QuorumState
from nodes.raft.roles import FOLLOWER, LEADER, PROSPECTIVE, RESIGNED
from nodes.raft.sim import NetworkConfig, Sim

FIVE = ("n1", "n2", "n3", "n4", "n5")


def entries(*epochs: int) -> list[Entry]:
    return [Entry(i, e, b"seed-%d" % i) for i, e in enumerate(epochs)]


def assert_no_violations(sim: Sim) -> None:
    sim.check_logs_agree()
    assert sim.violations == []


def commit_one(sim: Sim, payload: bytes, max_ticks: int = 200, on: list[str] | None = None) -> int:
    """Propose and wait until the nodes ``on`` (default: all live) know it is committed."""
    proposed = sim.propose(payload)
    assert proposed is not None, sim.describe()
    _, offset = proposed
    everyone = [n for n in sim.nodes.values() if n.alive and (on is None or n.name in on)]
    assert sim.run_until(
        lambda: all(n.core.high_watermark > offset for n in everyone), max_ticks
    ), sim.describe()
    return offset


def truncations(sim: Sim, name: str) -> list[tuple[int, int, str]]:
    return [
        (e["from"], e["to"], e["reason"])
        for _, n, e in sim.events
        if n == name and e["event"] == "truncate"
    ]


# --------------------------------------------------------------- KIP-996


def test_kip996_partitioned_follower_rejoins_without_disrupting_leader():
    sim = Sim(FIVE, seed=7)
    leader = sim.settle()
    epoch = sim.core(leader).epoch
    follower = next(n for n in FIVE if n != leader)
    start = sim.now
    sim.isolate(follower)
    sim.run(300)  # twenty fetch timeouts: the follower canvasses again and again
    assert sim.core(follower).epoch == epoch, "pre-vote must not inflate the epoch"
    assert any(e["role"] == PROSPECTIVE for _, _, e in sim.role_events(follower))
    # The other four are a majority and keep committing.
    _, offset = sim.propose(b"while-partitioned")
    assert sim.run_until(lambda: sim.core(leader).high_watermark > offset, 50)
    sim.heal()
    assert sim.run_until(lambda: sim.stable_leader() == leader, 100), sim.describe()
    assert all(sim.core(n).epoch == epoch for n in FIVE)
    # Nobody but the partitioned follower changed role since the partition.
    changed = {n for t, n, _ in sim.role_events() if t > start}
    assert changed == {follower}
    commit_one(sim, b"after-rejoin")
    assert_no_violations(sim)


def partial_connectivity(pre_vote: bool, seed: int = 11) -> tuple[Sim, str, int]:
    """decentralizedthoughts' flip-flop: n3 leads, n4 cannot reach n3, n5 cannot reach n2."""
    # The scenario needs n3 as leader: take the first seed that elects it.
    for attempt in range(seed, seed + 100):
        sim = Sim(FIVE, seed=attempt, config={"pre_vote": pre_vote})
        leader = sim.settle()
        if leader == "n3":
            break
    assert leader == "n3"
    epoch = sim.core(leader).epoch
    sim.cut("n4", "n3")
    sim.cut("n5", "n2")
    sim.run(400)
    return sim, leader, epoch


def test_kip996_partial_connectivity_no_flip_flop():
    sim, leader, epoch = partial_connectivity(pre_vote=True)
    assert sim.leader() == leader
    assert max(sim.core(n).epoch for n in FIVE) == epoch
    assert set(sim.leaders_by_epoch) == {epoch}
    # n4 cannot reach the leader; everyone else sees the commit.
    commit_one(sim, b"still-available", on=["n1", "n2", "n3", "n5"])
    assert_no_violations(sim)


def test_without_pre_vote_the_same_partition_inflates_epochs():
    # The contrast shows the scenario really is disruptive without KIP-996.
    sim, _, epoch = partial_connectivity(pre_vote=False)
    assert max(sim.core(n).epoch for n in FIVE) > epoch + 1
    assert_no_violations(sim)


# --------------------------------------------------------------- KIP-279


def test_kip279_scenario1_epoch_lookup_pure():
    leader_cache = ec.build((e.offset, e.epoch) for e in entries(1, 1, 1, 1, 1, 1, 3, 3, 3))
    consistent, epoch, end = ec.fetch_is_consistent(leader_cache, 9, 7, 2)
    # The leader never had epoch 2: it answers with epoch 1 and where epoch 1 ends.
    assert (consistent, epoch, end) == (False, 1, 6)
    follower_cache = ec.build((e.offset, e.epoch) for e in entries(1, 1, 1, 2, 2, 2, 2))
    assert ec.truncation_offset(follower_cache, 7, epoch, end) == 3


def fast_leader_failover(b_end: int, *bug_names: str) -> Sim:
    """A: epoch-1 batches [0,3) [3,6); B: [0,3) of epoch 1 then [3,b_end) of epoch 2.

    A becomes leader again in epoch 3 and appends three entries after its
    LeaderChange (offsets 6-9); then B, healed, follows A.
    """
    log_a = entries(1, 1, 1, 1, 1, 1)
    log_b = entries(1, 1, 1, *([2] * (b_end - 3)))
    log_c = entries(1, 1, 1)  # shorter, so only A can win the next election
    initial = {
        "n1": (QuorumState(2, None, None, "sim-cluster"), log_a),
        "n2": (QuorumState(2, "n2", "n2", "sim-cluster"), log_b),  # B led epoch 2
        "n3": (QuorumState(2, None, None, "sim-cluster"), log_c),
    }
    sim = Sim(seed=3, initial=initial, config={"bugs": frozenset(bug_names)})
    assert sim.core("n2").role == RESIGNED
    sim.isolate("n2")
    assert sim.run_until(lambda: sim.leader() == "n1", 300), sim.describe()
    assert sim.core("n1").epoch == 3
    for i in range(3):
        sim.propose(b"a-epoch3-%d" % i)
    sim.run(20)
    sim.heal()
    assert sim.run_until(lambda: sim.stable_leader() == "n1", 300), sim.describe()
    return sim


def test_kip279_scenario1_pre_fix_lookup_pure():
    """Before KIP-279 the leader answered an epoch it lacks (2) with where its
    next one starts (6), and an epoch it has just as the fix does."""
    leader_cache = ec.build((e.offset, e.epoch) for e in entries(1, 1, 1, 1, 1, 1, 3, 3, 3))
    assert ec.next_epoch_start(leader_cache, 2, 9) == 6
    assert ec.next_epoch_start(leader_cache, 3, 9) == 9
    for epoch in (1, 3):
        assert ec.next_epoch_start(leader_cache, epoch, 9) == ec.end_offset_for_epoch(
            leader_cache, epoch, 9)[1]


@pytest.mark.parametrize("b_end", [5, 6, 8], ids=["n<20", "n==20", "n>20"])
def test_kip279_scenario1_fast_leader_failover(b_end):
    """B must drop all of its epoch 2 (the KIP's three cases n<20, n==20,
    n>20) and converge to A's log."""
    sim = fast_leader_failover(b_end)
    commit_one(sim, b"after-heal")
    assert truncations(sim, "n2")[0] == (b_end, 3, "diverging-epoch")
    assert sim.core("n2").entries() == sim.core("n1").entries()
    assert sim.core("n2").epoch_cache == sim.core("n1").epoch_cache == [(1, 0), (3, 6)]
    assert_no_violations(sim)


@pytest.mark.parametrize("b_end", [6, 8], ids=["n==20", "n>20"])
def test_kip279_scenario1_before_the_fix_diverges(b_end):
    """The same fail-over with `unknown-epoch-next-start`: A, which never had
    epoch 2, answers B's fetch with where its epoch 3 starts (6). B cuts to 6
    at most and then appends A's epoch 3 after its own epoch 2: offsets 3-5
    hold epoch 2 on B and epoch 1 on A, and both commit them."""
    sim = fast_leader_failover(b_end, bugs.UNKNOWN_EPOCH_NEXT_START)
    commit_one(sim, b"after-heal")
    assert truncations(sim, "n2") == ([(8, 6, "diverging-epoch")] if b_end == 8 else [])
    a, b = sim.core("n1").entries(), sim.core("n2").entries()
    assert len(a) == len(b) == 11
    differ = [o for o in range(11) if a[o] != b[o]]
    assert differ == [3, 4, 5]
    assert [e.epoch for e in b[3:6]] == [2, 2, 2] and [e.epoch for e in a[3:6]] == [1, 1, 1]
    assert sim.core("n2").high_watermark == sim.core("n1").high_watermark == 11
    sim.check_logs_agree()
    assert any("was committed as" in v for v in sim.violations), sim.violations
    assert any("n2 log below hw 11 diverges" in v for v in sim.violations), sim.violations


def test_kip279_scenario1_before_the_fix_short_follower_is_stuck():
    """n<20 with the switch: B's fetch at 5 passes (5 <= 6), A sends its
    epoch-1 entry at offset 5, which B cannot put after epoch 2 (the KIP's
    "out of order offset error"): B never moves, and never commits its
    epoch-2 entries either."""
    sim = fast_leader_failover(5, bugs.UNKNOWN_EPOCH_NEXT_START)
    commit_one(sim, b"after-heal", on=["n1", "n3"])
    sim.run(200)
    assert truncations(sim, "n2") == []
    assert [e.epoch for e in sim.core("n2").entries()] == [1, 1, 1, 2, 2]
    assert sim.core("n2").high_watermark <= 3
    assert sim.core("n1").log_end == 11
    assert_no_violations(sim)


def test_kip279_scenario3_two_round_trips():
    """A: [e1, e3], B: [e2, e4] (the KIP's epochs shifted by one); B leads next.

    A asks about epoch 3, learns (2, 1), cuts to the end of its epoch 1 (offset
    1), asks about epoch 1, learns the leader has nothing that old, cuts to 0.
    """
    initial = {
        "n1": (QuorumState(4, None, None, "sim-cluster"), entries(1, 3)),
        "n2": (QuorumState(4, None, None, "sim-cluster"), entries(2, 4)),
        "n3": (QuorumState(4, None, None, "sim-cluster"), []),
    }
    sim = Sim(seed=5, initial=initial)
    sim.isolate("n1")
    assert sim.run_until(lambda: sim.leader() == "n2", 300), sim.describe()
    sim.heal()
    assert sim.run_until(lambda: sim.stable_leader() == "n2", 300), sim.describe()
    commit_one(sim, b"after-heal")
    assert truncations(sim, "n1") == [(2, 1, "diverging-epoch"), (1, 0, "diverging-epoch")]
    assert sim.core("n1").entries() == sim.core("n2").entries()
    assert_no_violations(sim)


# ------------------------------------------------------- Redpanda recovery RFC


def test_redpanda_dirty_majority_does_not_commit():
    sim = Sim(seed=9)
    leader = sim.settle()
    commit_one(sim, b"warm-up")
    followers = [n for n in sim.nodes if n != leader]
    for f in followers:
        sim.stall_flush(f)
    _, offset = sim.propose(b"dirty")
    sim.run(40)
    for f in followers:
        assert sim.core(f).log_end > offset, "the followers did append (dirty)"
        assert len(sim.nodes[f].disk.durable) <= offset, "... but did not flush"
    assert sim.core(leader).high_watermark <= offset
    assert all(sim.core(n).high_watermark <= offset for n in sim.nodes)
    # One follower's flush makes a durable majority with the leader.
    sim.stall_flush(followers[0], False)
    assert sim.run_until(lambda: sim.core(leader).high_watermark > offset, 20)
    assert_no_violations(sim)


def test_redpanda_leaders_own_dirty_offsets_do_not_count():
    sim = Sim(seed=10)
    leader = sim.settle()
    commit_one(sim, b"warm-up")
    f1, f2 = [n for n in sim.nodes if n != leader]
    sim.stall_flush(leader)
    sim.stall_flush(f2)
    _, offset = sim.propose(b"dirty-on-leader")
    sim.run(40)
    # Written on all three, flushed only on f1: one durable copy is no majority.
    assert sim.core(leader).high_watermark <= offset
    sim.stall_flush(f2, False)
    assert sim.run_until(lambda: sim.core(leader).high_watermark > offset, 20)
    # Committed by the followers' flushes alone: the leader may now crash and
    # lose its copy without losing the entry.
    committed = sim.core(leader).entry_at(offset)
    sim.crash(leader)
    new_leader = sim.settle()
    assert new_leader != leader
    assert sim.core(new_leader).entry_at(offset) == committed
    sim.restart(leader)
    assert sim.run_until(lambda: sim.stable_leader() == new_leader, 200), sim.describe()
    commit_one(sim, b"after-crash")
    assert sim.core(leader).entry_at(offset) == committed
    assert_no_violations(sim)


def test_redpanda_unflushed_entries_lost_in_crash_were_never_committed():
    sim = Sim(seed=12)
    leader = sim.settle()
    for name in sim.nodes:
        sim.stall_flush(name)
    _, offset = sim.propose(b"volatile")
    sim.run(20)
    assert all(sim.core(n).high_watermark <= offset for n in sim.nodes)
    for name in list(sim.nodes):
        sim.crash(name)
    for name in list(sim.nodes):
        sim.stall_flush(name, False)
        sim.restart(name)
    assert all(sim.core(n).entry_at(offset) is None for n in sim.nodes)
    sim.settle()
    commit_one(sim, b"after-power-cut")
    assert all(e.payload != b"volatile" for e in sim.committed)
    assert sim.core(leader).epoch > 1  # the restarted leader resigned its epoch
    assert_no_violations(sim)


def _written_on_leader_only(sim: Sim, payload: bytes) -> tuple[str, int]:
    """What a leader_ack or no_ack write has when it is answered: the
    leader's own (unflushed) append, with every follower cut off."""
    leader = sim.settle()
    commit_one(sim, b"warm-up")
    sim.stall_flush(leader)
    sim.isolate(leader)
    proposed = sim.propose(payload)
    assert proposed is not None and proposed[0] == leader
    assert len(sim.nodes[leader].disk.written) > proposed[1]
    return proposed


def test_redpanda_leader_ack_write_is_replicated_by_recovery():
    # leader_ack / no_ack: answered on the leader's append; recovery, not the
    # write's own round trip, brings it to the followers, and it commits once
    # a majority flushed it.
    sim = Sim(seed=14)
    leader, offset = _written_on_leader_only(sim, b"leader-acked")
    sim.run(5)  # less than a fetch timeout: the leader keeps its epoch
    assert sim.core(leader).high_watermark <= offset
    sim.heal()
    sim.stall_flush(leader, False)
    assert sim.run_until(
        lambda: all(sim.core(n).high_watermark > offset for n in sim.nodes), 200
    ), sim.describe()
    assert any(e.payload == b"leader-acked" for e in sim.committed)
    assert_no_violations(sim)


def test_redpanda_leader_ack_write_may_be_lost_with_the_leader_quorum_never():
    # The promise each level makes: a write acknowledged at quorum was flushed
    # by a majority and survives the leader's crash; one acknowledged on the
    # leader's append alone is gone with the leader's unflushed tail, and no
    # commit was ever lost (it never was one).
    sim = Sim(seed=15)
    sim.settle()
    warm = commit_one(sim, b"quorum-acked")
    leader, offset = _written_on_leader_only(sim, b"leader-acked")
    sim.crash(leader)           # its unflushed tail is gone
    sim.heal()
    new = sim.settle()
    assert new != leader
    sim.restart(leader)
    commit_one(sim, b"after")
    payloads = [e.payload for e in sim.core(leader).entries()]
    assert b"quorum-acked" in payloads and b"leader-acked" not in payloads
    assert sim.core(new).entry_at(warm).payload == b"quorum-acked"
    assert_no_violations(sim)


def _acked(sim: Sim, name: str, offset: int) -> str | None:
    """The level at which `name`'s core reported `offset` acknowledgeable, if it did."""
    levels = [level for o, level in sim.nodes[name].acked if o == offset]
    assert len(levels) <= 1, f"{offset} acknowledged twice: {levels}"
    return levels[0] if levels else None


def _durable_holders(sim: Sim, offset: int) -> int:
    return sum(1 for n in sim.nodes.values() if len(n.disk.durable) > offset)


@pytest.mark.parametrize("bugs", [frozenset(), frozenset({"leader-ack-as-quorum"})])
def test_redpanda_quorum_ack_waits_for_a_flushed_majority(bugs):
    # Twin: with leader-ack-as-quorum the same quorum write is acknowledged
    # with one (unflushed) copy, which the rule forbids.
    sim = Sim(seed=16, config={"bugs": bugs})
    leader = sim.settle()
    commit_one(sim, b"warm-up")
    f1, f2 = [n for n in sim.nodes if n != leader]
    for name in sim.nodes:
        sim.stall_flush(name)
    _, offset = sim.propose(b"quorum-write", "quorum")
    sim.run(40)  # every node appended it, none flushed it
    assert all(sim.core(n).log_end > offset for n in sim.nodes)
    if bugs:
        assert _acked(sim, leader, offset) == "leader"
        assert _durable_holders(sim, offset) == 0
        return
    assert _acked(sim, leader, offset) is None
    sim.stall_flush(f1, False)
    sim.run(40)
    assert _acked(sim, leader, offset) is None, "one flushed copy is no majority of 3"
    sim.stall_flush(leader, False)
    assert sim.run_until(lambda: _acked(sim, leader, offset) == "quorum", 20)
    assert _durable_holders(sim, offset) >= 2
    assert_no_violations(sim)


@pytest.mark.parametrize("level", ["leader", "quorum"])
def test_redpanda_leader_ack_after_the_leaders_append(level):
    # Twin: a quorum write in the same place (leader cut off, nothing
    # flushed) is not acknowledged at all.
    sim = Sim(seed=17)
    leader, offset = _written_on_leader_only(sim, b"x")  # a warm-up at offset 1
    proposed = sim.propose(b"write", level)
    assert proposed is not None
    _, offset = proposed
    # Acknowledged in the very Ready that hands its append to the disk.
    assert sim.nodes[leader].disk.written[offset].payload == b"write"
    assert len(sim.nodes[leader].disk.durable) <= offset
    assert _acked(sim, leader, offset) == (level if level == "leader" else None)
    sim.run(5)
    assert _acked(sim, leader, offset) == (level if level == "leader" else None)
    assert_no_violations(sim)


@pytest.mark.parametrize("level", ["none", "quorum"])
def test_redpanda_no_ack_at_once(level):
    # none: acknowledged in the Ready of its proposal (the server answers it
    # before even writing the append), whatever becomes of it: here the cut
    # off leader crashes and the write is gone. Twin: quorum, same place, never.
    sim = Sim(seed=18)
    leader, _ = _written_on_leader_only(sim, b"x")
    core = sim.core(leader)
    offset = core.propose(b"write", level, True)
    ready = core.ready()
    assert ready.append and ready.append[0].offset == offset
    assert ((offset, "none") in ready.acked) == (level == "none")
    sim.crash(leader)  # before anything of that Ready reached its disk
    sim.heal()
    new = sim.settle()
    commit_one(sim, b"after", on=[new])
    assert all(e.payload != b"write" for e in sim.core(new).entries())
    assert_no_violations(sim)


@pytest.mark.parametrize("bugs", [frozenset({"leader-ack-as-quorum"}), frozenset()])
def test_redpanda_leader_ack_as_quorum_acks_a_quorum_write_before_replication(bugs):
    # The switch's rule: a quorum write acked on the leader's append alone is
    # lost with the leader's disk. Twin: the correct build never acks it.
    sim = Sim(seed=19, config={"bugs": bugs})
    leader, warm = _written_on_leader_only(sim, b"warm")
    _, offset = sim.propose(b"quorum-write", "quorum")
    # A cas is no blind write: even the switch cannot answer it before it applies.
    _, cas = sim.propose(b"cas", "quorum", blind_write=False)
    assert _acked(sim, leader, cas) is None
    acked = _acked(sim, leader, offset)
    assert acked == ("leader" if bugs else None)
    sim.crash(leader)  # its unflushed tail is gone
    sim.heal()
    new = sim.settle()
    commit_one(sim, b"after", on=[new])
    lost = all(e.payload != b"quorum-write" for e in sim.core(new).entries())
    assert lost
    assert (acked is not None and lost) == bool(bugs)
    assert_no_violations(sim)


# --------------------------------------------------------------- KIP-595


def test_foreign_cluster_id_node_is_never_acted_on():
    sim = Sim(seed=13, cluster_ids={"n3": "other-cluster"})
    assert sim.run_until(lambda: sim.leader() in ("n1", "n2"), 300), sim.describe()
    leader = sim.leader()
    epoch = sim.core(leader).epoch
    sim.run(300)  # n3 canvasses with its own cluster id all along
    assert sim.leader() == leader
    assert sim.core("n1").epoch == sim.core("n2").epoch == epoch
    assert sim.core("n3").log_end == 0
    assert sim.core("n3").role != FOLLOWER
    proposed = sim.propose(b"two-of-three")
    assert proposed is not None
    _, offset = proposed
    assert sim.run_until(lambda: sim.core(leader).high_watermark > offset, 50)
    assert sim.violations == []


def test_check_quorum_leader_cut_off_from_majority_resigns():
    sim = Sim(seed=14)
    leader = sim.settle()
    epoch = sim.core(leader).epoch
    window = sim.core(leader)._cfg.fetch_timeout_ticks
    start = sim.now
    sim.isolate(leader)
    assert sim.run_until(lambda: sim.core(leader).role == RESIGNED, window + 2), sim.describe()
    assert sim.now - start <= window + 1
    assert any(
        n == leader and e["role"] == RESIGNED and e["epoch"] == epoch
        for _, n, e in sim.role_events()
    )
    # The majority side elects a new leader in a higher epoch; the old one,
    # once healed, follows it without another election.
    assert sim.run_until(lambda: sim.leader() not in (None, leader), 300), sim.describe()
    new_leader = sim.leader()
    assert sim.core(new_leader).epoch > epoch
    sim.heal()
    assert sim.run_until(lambda: sim.stable_leader() == new_leader, 300), sim.describe()
    commit_one(sim, b"after-resign")
    assert_no_violations(sim)


def test_without_check_quorum_a_cut_off_leader_stays_leader():
    sim = Sim(seed=14, config={"check_quorum": False})
    leader = sim.settle()
    sim.isolate(leader)
    sim.run(200)
    assert sim.core(leader).role == LEADER


def test_lossy_network_still_elects_and_commits():
    sim = Sim(FIVE, seed=15, network=NetworkConfig(drop=0.2, max_delay=4, duplicate=0.1))
    sim.settle(1000)
    for i in range(5):
        commit_one(sim, b"lossy-%d" % i, max_ticks=500)
    assert_no_violations(sim)
