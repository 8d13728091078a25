"""The faults as a history records them: each fault's name (the f of the op
that injects it), the f of the op that ends it, and what it does to the
cluster while in force, as the checkers count it.

The nemesis builds its table on these rows (nemesis.base.FAULTS adds how to
inject, variants, needs), and the checkers and the report read nemesis ops by
them, so each fault is named here once. It sits on the checkers' floor because
the checkers, which import nothing above them, read it too. A plug-in fault
(a `faultline.faults` entry point's) has no row: the checkers count it as lasting
its own op and doing nothing they model.
"""

from __future__ import annotations

from dataclasses import dataclass

# What a fault does while in force.
DOWN = "down"        # its nodes are stopped until its heal
CUT = "cut"          # links between nodes are cut until its heal (op value: `cut` pairs)
VOTERS = "voters"    # voters are removed until its heal
OTHER_CLUSTER = "other-cluster"  # its node is formatted for another cluster until its heal
RESTART = "restart"  # kills its nodes and starts them again; counted down while its op runs
# Its nodes run on a faulty disk, slowed or with a wrong clock, or its links
# lose, delay, duplicate or slow packets (op value: `links`), until its heal.
DEGRADED = "degraded"
ARMED = "armed"      # a trigger: what it sets off is recorded as another fault's op

# What a fault takes away from the cluster, as availability and convergence
# judge it: a correct cluster may stop serving, or change leader, only when
# a fault took away the leader or a quorum of voters (checkers.impairment).
NODES = "nodes"                # its op value's nodes, from its inject until its heal names them
NODES_DURING_OP = "nodes-during-op"  # its nodes, while its own op runs (killed, restarted)
LINKS = "links"                # its op value's `cut` pairs (from, to), until its heal
NOTHING = "nothing"            # itself nothing: what it sets off is recorded as its own op
# A fault without a row (a plug-in's) may take anything: the whole cluster,
# while its op runs and until a heal whose f no known fault uses.
ANYTHING = "anything"


@dataclass(frozen=True)
class FaultOp:
    name: str
    heal_f: str
    effect: str
    takes: str = ANYTHING

    @property
    def lasting(self) -> bool:
        """In force from its inject until its heal op, not just while its own op runs."""
        return self.effect in (DOWN, CUT, VOTERS, OTHER_CLUSTER, DEGRADED)


KILL = FaultOp("kill", "start", DOWN, NODES)
PAUSE = FaultOp("pause", "resume", DOWN, NODES)
PARTITION = FaultOp("partition", "heal", CUT, LINKS)
# A truncate leaves its nodes down until `start`; the checkers have counted it
# as down only while its op runs, as lose-unsynced, since they were written.
TRUNCATE = FaultOp("truncate", "start", RESTART, NODES)   # down until its `start`
LOSE_UNSYNCED = FaultOp("lose-unsynced", "start", RESTART, NODES_DURING_OP)
# A trigger's heal restarts whatever it killed.
KILL_AFTER_VOTE = FaultOp("kill-after-vote", "start", ARMED, NOTHING)
POWER_CUT_AFTER_COMMIT = FaultOp("power-cut-after-commit", "start", ARMED, NOTHING)
POWER_CUT_AFTER_VOTE = FaultOp("power-cut-after-vote", "start", ARMED, NOTHING)
# KIP-279 scenario 1 played out: the leader cut off, the next one cut off
# right after its election; its heal restarts whatever it killed.
FAST_FAILOVER = FaultOp("fast-failover", "start", ARMED, NOTHING)
# The leader stays down until `start`; the follower whose vote records it
# takes restarts at once (counted down with it: the op value names both).
LOSE_STATE = FaultOp("lose-state", "start", DOWN, NODES)
# A removed voter is out of the quorum until the heal adds it back; removing
# the leader takes the leader.
MEMBERSHIP = FaultOp("membership", "restore-voters", VOTERS, NODES)
# The heal puts the node's own data back and starts it in its own cluster.
REFORMAT = FaultOp("reformat", "restore-data", OTHER_CLUSTER, NODES)
# A faulty disk under its nodes (nemesis.diskfault): a node may crash on it,
# be too slow to lead, or be stopped while its files are corrupted; the heal
# starts the ones that are down.
DISK = FaultOp("disk", "restore-disk", DEGRADED, NODES)

# Network quality (nemesis.netshape): a lossy, slow or narrow link is still a
# link, so they take nothing away: availability expects a correct cluster to
# serve through them, and reports it when it does not.
PACKET = FaultOp("packet", "restore-packets", DEGRADED, NOTHING)
BANDWIDTH = FaultOp("bandwidth", "restore-bandwidth", DEGRADED, NOTHING)

# Leader-aware compositions (nemesis.compose) and the hunting schedule
# (nemesis.hunt): each runs ordinary faults, recorded as their own ops, so
# what they do in force is those ops'; their own heal ends what is left.
DISARM = "disarm"
FLIP_FLOP = FaultOp("flip-flop", DISARM, ARMED)
KILL_NEW_LEADER = FaultOp("kill-new-leader", DISARM, ARMED)
LEADER_ONE_WAY = FaultOp("leader-one-way", DISARM, ARMED)
CHURN = FaultOp("churn", DISARM, ARMED)
CATCH_UP = FaultOp("catch-up", DISARM, ARMED)
MINORITY_OUT = FaultOp("minority-out", DISARM, ARMED)
STALE_QUORUM = FaultOp("stale-quorum", DISARM, ARMED)
LAGGING_VOTERS = FaultOp("lagging-voters", DISARM, ARMED)
HUNT = FaultOp("hunt", DISARM, ARMED)

# Host faults (nemesis.clock, nemesis.pressure): the node keeps running, so
# they take nothing a correct cluster may stop serving for.
CLOCK = FaultOp("clock", "clock-reset", DEGRADED, NOTHING)
CPU = FaultOp("cpu", "cpu-restore", DEGRADED, NOTHING)
MEMORY = FaultOp("memory", "memory-restore", DEGRADED, NOTHING)
STRESS = FaultOp("stress", "stress-stop", DEGRADED, NOTHING)

FAULT_OPS: dict[str, FaultOp] = {f.name: f for f in (
    KILL, PAUSE, PARTITION, TRUNCATE, LOSE_UNSYNCED, KILL_AFTER_VOTE, POWER_CUT_AFTER_COMMIT,
    POWER_CUT_AFTER_VOTE, FAST_FAILOVER, LOSE_STATE, MEMBERSHIP, REFORMAT, PACKET, BANDWIDTH,
    FLIP_FLOP, KILL_NEW_LEADER, LEADER_ONE_WAY, CHURN, CATCH_UP, MINORITY_OUT, STALE_QUORUM,
    LAGGING_VOTERS, HUNT, CLOCK, CPU, MEMORY, STRESS, DISK)}


def named(*effects: str) -> tuple[str, ...]:
    """The names of the faults with one of `effects`, in table order."""
    return tuple(f.name for f in FAULT_OPS.values() if f.effect in effects)


def healed_by(*effects: str) -> dict[str, tuple[str, ...]]:
    """heal f -> the lasting faults with one of `effects` it ends (a `start`
    ends a kill and a lose-state alike; its nodes say which)."""
    out: dict[str, tuple[str, ...]] = {}
    for f in FAULT_OPS.values():
        if f.lasting and f.effect in effects:
            out[f.heal_f] = (*out.get(f.heal_f, ()), f.name)
    return out
