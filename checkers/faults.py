"""The faults as a history records them: each fault's name (the f of the op
that injects it), the f of the op that ends it, and what it does to the
cluster while in force, as the checkers count it.

The nemesis builds its table on these rows (nemesis.base.FAULTS adds how to
inject, variants, needs), and the checkers and the report read nemesis ops by
them, so each fault is named here once. It sits on the checkers' floor because
the checkers, which import nothing above them, read it too. A plug-in fault
(a `faultline.faults` entry point's) without a row (a `faultline.fault_rows`
entry point's, as the bundled systems' are) is counted as lasting its own op
and doing nothing they model.
"""

from __future__ import annotations

from typing import Any

from checkers.fault_row import (  # noqa: F401 (re-exported: the rows' words)
    ANYTHING,
    ARMED,
    CUT,
    DEGRADED,
    DESTROYS,
    DISTURBS,
    DOWN,
    LINKS,
    NODES,
    NODES_DURING_OP,
    NOTHING,
    OTHER_CLUSTER,
    READ_FAILED,
    READ_FAILED_AGAIN,
    READ_FLIPPED,
    RESTART,
    STARVED,
    VOTERS,
    FaultOp,
    destroys,
)
from checkers.plugins import contributions

KILL = FaultOp("kill", "start", DOWN, NODES)
PAUSE = FaultOp("pause", "resume", DOWN, NODES)
PARTITION = FaultOp("partition", "heal", CUT, LINKS)
# A truncate leaves its nodes down until `start`; the checkers have counted it
# as down only while its op runs, as lose-unsynced, since they were written.
# It may cut the file a voter's votes rest on, which then keeps it out longer.
TRUNCATE = FaultOp("truncate", "start", RESTART, NODES, loses_state=True, at_rest=destroys)
LOSE_UNSYNCED = FaultOp("lose-unsynced", "start", RESTART, NODES_DURING_OP)
# A removed voter is out of the quorum until the heal adds it back; removing
# the leader takes the leader.
MEMBERSHIP = FaultOp("membership", "restore-voters", VOTERS, NODES)
# A disk op's `at` when its bits were flipped in the files at rest (the
# nemesis's `disk:bitflip+at=rest`); its `mode` is `truncate` when it cut them.
AT_REST = "rest"
# What a fault aimed at the leader records of how long it waited for one
# (nemesis.fault.aim_at_leader): it acted that long after its invoke, and
# took nothing while it waited (checkers.impairment starts it there).
WAITED_FOR_LEADER = "waited_for_leader_s"


def disk_at_rest(value: Any) -> str:
    """What a `disk` op did to the data at rest, by its recorded value: bits
    flipped at rest or a file cut destroy it; a disk that refuses, fills,
    slows, or garbles reads leaves it (DISTURBS while in force). A value
    that names no mode (an inject that failed part-way) may have done
    either: DESTROYS, so nothing is blamed on a node for it."""
    mode = value.get("mode") if isinstance(value, dict) else None
    if mode is None or mode == TRUNCATE.name or value.get("at") == AT_REST:
        return DESTROYS
    return DISTURBS


def disk_spoiled_reads(heal_value: Any, node: str) -> bool:
    """Whether a `restore-disk`'s record counts a read its rules failed or
    garbled on `node` (its `did`: node -> each rule's counts); a record
    without counts for it may hide one."""
    if isinstance(heal_value, dict) and "did" not in heal_value:
        # Healed through `Nemesis.invoke`: the record per fault spec.
        heal_value = next((v for v in heal_value.values()
                           if isinstance(v, dict) and "did" in v), None)
    did = heal_value.get("did") if isinstance(heal_value, dict) else None
    rules = did.get(node) if isinstance(did, dict) else None
    if not isinstance(rules, list):
        return True
    counts = [c for r in rules if isinstance(r, dict) and isinstance(c := r.get("did"), dict)]
    if len(counts) != len(rules):
        return True
    return any(c.get(k) for c in counts for k in (READ_FAILED, READ_FAILED_AGAIN, READ_FLIPPED))


# A faulty disk under its nodes (nemesis.diskfault): a node may crash on it,
# be too slow to lead, or be stopped while its files are corrupted; the heal
# starts the ones that are down. Its truncate and bitflip may take the file
# a voter's votes rest on.
DISK = FaultOp("disk", "restore-disk", DEGRADED, NODES, loses_state=True, at_rest=disk_at_rest,
               spoiled_reads=disk_spoiled_reads)

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
CLOCK_CUT = FaultOp("clock-cut", DISARM, ARMED)
HUNT = FaultOp("hunt", DISARM, ARMED)

# Host faults (nemesis.clock, nemesis.pressure): the node keeps running, so
# a clock takes nothing a correct cluster may stop serving for. Pressure on a
# set of nodes (one, a minority, a majority, all) starves them: a majority
# of voters starved is a quorum taken, a minority (the leader's node among
# them or not) nothing.
CLOCK = FaultOp("clock", "clock-reset", DEGRADED, NOTHING)
CPU = FaultOp("cpu", "cpu-restore", DEGRADED, STARVED)
MEMORY = FaultOp("memory", "memory-restore", DEGRADED, STARVED)
STRESS = FaultOp("stress", "stress-stop", DEGRADED, STARVED)

# The entry-point group through which a system or a plug-in adds its rows
# (the bundled systems' among them, pyproject.toml): each names a FaultOp or an
# iterable of them.
ROWS_GROUP = "faultline.fault_rows"
FAULT_OPS: dict[str, FaultOp] = {f.name: f for f in (
    KILL, PAUSE, PARTITION, TRUNCATE, LOSE_UNSYNCED, MEMBERSHIP, PACKET, BANDWIDTH,
    FLIP_FLOP, KILL_NEW_LEADER, LEADER_ONE_WAY, CHURN, CATCH_UP, MINORITY_OUT, STALE_QUORUM,
    LAGGING_VOTERS, CLOCK_CUT, HUNT, CLOCK, CPU, MEMORY, STRESS, DISK)}


def _add_contributed_rows() -> None:
    for row in contributions(ROWS_GROUP, FaultOp):
        if row.name in FAULT_OPS:
            raise ValueError(f"fault row {row.name!r} is registered twice")
        FAULT_OPS[row.name] = row


_add_contributed_rows()


def named(*effects: str) -> tuple[str, ...]:
    """The names of the faults with one of `effects`, in table order."""
    return tuple(f.name for f in FAULT_OPS.values() if f.effect in effects)


def healed_by(*effects: str) -> dict[str, tuple[str, ...]]:
    """heal f -> the lasting faults with one of `effects` it ends (a `start`
    ends a kill and a system's own faults that take nodes down alike; its nodes
    say which)."""
    out: dict[str, tuple[str, ...]] = {}
    for f in FAULT_OPS.values():
        if f.lasting and f.effect in effects:
            out[f.heal_f] = (*out.get(f.heal_f, ()), f.name)
    return out
