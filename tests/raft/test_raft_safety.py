"""Randomized safety and liveness of the raft core under crashes, partitions and a bad network.

Each seed drives a simulated cluster through random faults. The simulation
checks, as it goes: at most one leader per epoch; a committed offset is never
committed with different contents; every committed entry stays flushed on a
majority; a new leader holds every committed entry; the leader advances its
high watermark only over majority-flushed offsets; HW never goes back on a
node. After the faults heal, a leader must emerge and a new proposal commit
everywhere, and all logs agree on the committed prefix.
"""

from __future__ import annotations

import random

import pytest

from nodes.raft.sim import NetworkConfig, Sim

FAST_SEEDS = range(200)
SLOW_SEEDS = range(200, 600)


def random_groups(rng: random.Random, names: list[str]) -> list[list[str]]:
    shuffled = names[:]
    rng.shuffle(shuffled)
    cut = rng.randint(1, len(names) - 1)
    return [shuffled[:cut], shuffled[cut:]]


def change_membership(sim: Sim, rng: random.Random) -> None:
    """Ask the leader to add an observer or remove a voter (KIP-853); refusals
    (a change in flight, not caught up, no leader) are part of the test."""
    voters = set(sim.voters_in_force())
    if rng.random() < 0.5 and len(voters) > 1:
        sim.change_voters("remove", rng.choice(sorted(voters)))
    else:
        others = sorted(set(sim.nodes) - voters)
        if others:
            sim.change_voters("add", rng.choice(others), ack_when_committed=rng.random() < 0.5)


def chaos(seed: int, fault_ticks: int, membership: bool = False) -> Sim:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(1, rng.choice([3, 3, 5]) + 1)]
    # Spare nodes start as observers; voter changes move nodes in and out.
    observers = ("s1", "s2") if membership else ()
    network = NetworkConfig(
        drop=rng.choice([0.0, 0.02, 0.1]),
        min_delay=1,
        max_delay=rng.choice([1, 3, 6]),
        duplicate=rng.choice([0.0, 0.05]),
    )
    sim = Sim(
        tuple(names),
        seed=seed,
        network=network,
        flush_lag=(0, rng.choice([0, 2, 6])),
        observers=observers,
    )
    names += observers
    proposals = 0
    for _ in range(fault_ticks):
        roll = rng.random()
        if roll < 0.01:
            alive = [n for n in names if sim.nodes[n].alive]
            if alive:
                sim.crash(rng.choice(alive))
        elif roll < 0.03:
            dead = [n for n in names if not sim.nodes[n].alive]
            if dead:
                sim.restart(rng.choice(dead))
        elif roll < 0.04:
            sim.heal()
            sim.partition(*random_groups(rng, names))
        elif roll < 0.05:
            a, b = rng.sample(names, 2)
            sim.cut(a, b)
        elif roll < 0.06:
            sim.heal()
        elif roll < 0.07:
            sim.stall_flush(rng.choice(names), rng.random() < 0.5)
        if membership and rng.random() < 0.02:
            change_membership(sim, rng)
        if rng.random() < 0.3:
            proposals += 1
            sim.propose(b"s%d-p%d" % (seed, proposals))
        sim.step()
    return sim


def heal_and_check_liveness(sim: Sim, seed: int) -> None:
    sim.heal()
    for name in sim.nodes:
        sim.stall_flush(name, False)
        sim.restart(name)
    # A proposal may be lost if the leader changes before it commits (the
    # client would see leader_lost); liveness means some proposal soon commits.
    offset = None
    for attempt in range(5):
        leader = sim.settle(800)
        proposed = sim.propose(b"final-%d-%d" % (seed, attempt))
        assert proposed is not None, sim.describe()
        _, candidate = proposed
        entry = sim.core(leader).entry_at(candidate)
        if (
            sim.run_until(
                lambda c=candidate: all(n.core.high_watermark > c for n in sim.nodes.values()), 200
            )
            and sim.core(leader).entry_at(candidate) == entry
        ):
            offset = candidate
            break
    assert offset is not None, f"seed {seed}: nothing commits after healing: {sim.describe()}"
    sim.check_committed_durable()
    sim.check_logs_agree()
    logs = {name: sim.core(name).entries() for name in sim.nodes}
    reference = logs[sim.leader()][: offset + 1]
    for name, log in logs.items():
        assert log[: offset + 1] == reference, f"{name} diverges from the leader"


def run_seed(seed: int, fault_ticks: int = 300, membership: bool = False) -> None:
    sim = chaos(seed, fault_ticks, membership)
    assert sim.violations == [], f"seed {seed}: {sim.violations[:5]}"
    heal_and_check_liveness(sim, seed)
    assert sim.violations == [], f"seed {seed}: {sim.violations[:5]}"
    assert sim.committed, f"seed {seed}: nothing ever committed"


@pytest.mark.parametrize("block", range(4))
def test_safety_and_liveness_random_faults(block):
    # Four blocks of 50 seeds, so pytest -n spreads them over the workers.
    for seed in FAST_SEEDS[block::4]:
        run_seed(seed)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(10))
def test_safety_and_liveness_random_faults_long(block):
    for seed in SLOW_SEEDS[block::10]:
        run_seed(seed, fault_ticks=1500)


@pytest.mark.parametrize("block", range(4))
def test_safety_and_liveness_with_voter_changes(block):
    # The same faults while the leader adds observers and removes voters.
    for seed in FAST_SEEDS[block::4]:
        run_seed(seed, membership=True)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(10))
def test_safety_and_liveness_with_voter_changes_long(block):
    for seed in SLOW_SEEDS[block::10]:
        run_seed(seed, fault_ticks=1500, membership=True)
