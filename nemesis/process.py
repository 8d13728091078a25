"""Process faults: kill/start and pause/resume, on one node, a minority or a
majority (or the current leader).

Which nodes is decided by `choose_targets` from a seeded rng: in the
schedule when the nodes are known up front, else at inject time.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from checkers.faults import KILL, PAUSE
from checkers.history import NOOP
from nemesis.fault import Aimed, ClusterControl, FaultContext, aim_at_leader, replayed_wait

TARGETS = ("one", "minority", "majority")
ALL_TARGETS = (*TARGETS, "leader")
ALL = "all"
# The node sets a fault that leaves the nodes' disks as they were (a disk that
# refuses, fills or slows; a power cut of un-fsynced writes) draws where its
# variant names none: kill's and pause's sizes and the whole cluster (a shared
# storage failure, a building's power). One size only reaches what one size
# reaches: a disk fault on one node left a quorum whose disks took every
# write, and a node counting a refused write as written lost nothing the
# others did not hold (2026-11-27, docs/hunt.md).
SIZES = (*TARGETS, ALL)
# The size of a fault that destroys what a disk holds (a tail cut, bits
# flipped): one node. A quorum's stored data lost is a loss no correct system
# survives, and a hunt's turn plays two variants of a kind: two minorities
# make a majority (truncations on two of three nodes left the correct build
# unable to elect, nemesis.hunter.STAY_TRIES).
DESTROYING = ("one",)


def target_count(targets: str, n: int) -> int:
    majority = n // 2 + 1
    if targets == "one":
        return 1
    if targets == "minority":
        return max(1, n - majority)
    if targets == "majority":
        return majority
    raise ValueError(f"unknown target set {targets!r}; expected one of {', '.join(TARGETS)}")


def choose_targets(rng: random.Random, nodes: Sequence[str], targets: str) -> list[str]:
    """Pure: a random `targets`-sized subset of `nodes`, sorted."""
    return sorted(rng.sample(sorted(nodes), target_count(targets, len(nodes))))


def nodes_of_size(rng: random.Random, nodes: Sequence[str], size: str) -> list[str]:
    """Pure: `size` (one of SIZES) of `nodes`, drawn from the rng, sorted."""
    return sorted(nodes) if size == ALL else choose_targets(rng, nodes, size)


def drawn_set(rng: random.Random, nodes: Sequence[str], sizes: Sequence[str]
              ) -> dict[str, Any]:
    """Pure: a size drawn from `sizes`, then that many of `nodes`: the plan of
    a node-targeted fault whose variant names no set (`targets` says which
    size, `nodes` which nodes; a replay plays the recorded nodes)."""
    size = rng.choice(tuple(sizes))
    return {"targets": size, "nodes": nodes_of_size(rng, nodes, size)}


def plan(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    targets = variant or rng.choice(TARGETS)
    if targets not in ALL_TARGETS:
        raise ValueError(f"unknown target set {targets!r}; expected one of "
                         f"{', '.join(ALL_TARGETS)}")
    if targets == "leader":
        return {"targets": "leader"}
    return {"targets": targets, "nodes": choose_targets(rng, nodes, targets)}


def resolve_nodes(cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
                  ) -> Aimed:
    """The nodes a plan or a replay named; else its `targets` drawn now, the
    leader waited for (nemesis.fault.aim_at_leader)."""
    if params.get("nodes"):
        return Aimed(list(params["nodes"]), replayed_wait(params))
    targets = params.get("targets", "one")
    if targets == "leader":
        leader, waited_s = aim_at_leader(cluster, params)
        return Aimed([leader], waited_s)
    return Aimed(choose_targets(rng, cluster.names, targets))


class _TargetedFault:
    """A fault on a set of nodes chosen by `plan`; the variant names the set."""

    def __init__(self, variant: str | None = None) -> None:
        self.variant = variant

    def plan(self, rng: random.Random, nodes: Sequence[str]) -> dict[str, Any]:
        return plan(rng, nodes, self.variant)


class KillFault(_TargetedFault):
    """`kill`: SIGKILL the nodes' process groups; heal (`start`) restarts every
    node that is down, on its existing data dir."""

    name, heal_f = KILL.name, KILL.heal_f

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        aimed = resolve_nodes(cluster, rng, params)
        nodes = aimed.nodes
        killed = cluster.kill(nodes)
        value = {"nodes": nodes, "targets": params.get("targets"), "killed": killed,
                 **aimed.recorded()}
        if not killed:
            value[NOOP] = f"{' '.join(nodes)} already down"
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        down = [n for n in cluster.names if not cluster.is_running(n)]
        started = cluster.start(down, fresh=False)
        return {"nodes": started} if started else {"nodes": [], NOOP: "no node was down"}


class PauseFault(_TargetedFault):
    """`pause`: SIGSTOP the nodes' process trees; heal (`resume`) continues
    every paused node."""

    name, heal_f = PAUSE.name, PAUSE.heal_f

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        aimed = resolve_nodes(cluster, rng, params)
        nodes = aimed.nodes
        already = set(cluster.paused)
        paused = [n for n in cluster.pause(nodes) if n not in already]
        value = {"nodes": nodes, "targets": params.get("targets"), "paused": paused,
                 **aimed.recorded()}
        if not paused:
            value[NOOP] = f"{' '.join(nodes)} already down or paused"
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        resumed = cluster.resume(sorted(cluster.paused))
        return {"nodes": resumed} if resumed else {"nodes": [], NOOP: "no node was paused"}


def kill_fault(ctx: FaultContext) -> KillFault:
    return KillFault(ctx.variant)


def pause_fault(ctx: FaultContext) -> PauseFault:
    return PauseFault(ctx.variant)
