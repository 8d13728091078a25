"""The raft store's faults as the registry takes them (the entry point
`faultline.faults: raft`). Each factory imports its module only when its
fault is asked for, so a run without them never loads the watcher code."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from checkers.faults import FaultOp
from nemesis.fault import Fault, FaultContext, FaultFactory, FaultKind
from nodes.raft.fault_rows import (
    FAST_FAILOVER,
    KILL_AFTER_VOTE,
    LOSE_STATE,
    POWER_CUT_AFTER_COMMIT,
    POWER_CUT_AFTER_VOTE,
    REFORMAT,
)


def _kind(op: FaultOp, factory: FaultFactory, help: str, **metadata: Any) -> FaultKind:
    """Its name and heal op are its row (nodes.raft.fault_rows)."""
    return FaultKind(op.name, factory, help, op.heal_f, **metadata)


def _kill_after_vote(ctx: FaultContext) -> Fault:
    from nodes.raft.faults.triggers import kill_after_vote
    return kill_after_vote(ctx)


def _power_cut_after_vote(ctx: FaultContext) -> Fault:
    from nodes.raft.faults.triggers import power_cut_after_vote
    return power_cut_after_vote(ctx)


def _power_cut_after_commit(ctx: FaultContext) -> Fault:
    from nodes.raft.faults.triggers import power_cut_after_commit
    return power_cut_after_commit(ctx)


def _fast_failover(ctx: FaultContext) -> Fault:
    from nodes.raft.faults.triggers import fast_failover
    return fast_failover(ctx)


def _lose_state(ctx: FaultContext) -> Fault:
    from nodes.raft.faults.lose_state import LoseStateFault
    if ctx.variant is not None:
        raise ValueError("lose-state takes no variant")
    return LoseStateFault(ctx.db)


def _reformat(ctx: FaultContext) -> Fault:
    from nodes.raft.faults.reformat import reformat_fault
    return reformat_fault(ctx)


def _armed(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    """A trigger is armed by the schedule; whom it hits is decided by the event it fires on."""
    if variant is not None:
        raise ValueError(f"{KILL_AFTER_VOTE.name} takes no variant")
    return {}


def _armed_power_cut(rng: random.Random, nodes: Sequence[str], variant: str | None
                     ) -> dict[str, Any]:
    from nodes.raft.faults.triggers import parse_power_cut
    parse_power_cut(variant)   # a bad variant is refused when planned
    return {}


def _armed_power_cut_vote(rng: random.Random, nodes: Sequence[str], variant: str | None
                          ) -> dict[str, Any]:
    from nodes.raft.faults.triggers import parse_fsync_delay
    parse_fsync_delay(variant)
    return {}


def _armed_lose_state(rng: random.Random, nodes: Sequence[str], variant: str | None
                      ) -> dict[str, Any]:
    """Whom it hits depends on who leads at inject time."""
    if variant is not None:
        raise ValueError("lose-state takes no variant")
    return {}


FAULTS: tuple[FaultKind, ...] = (
    _kind(KILL_AFTER_VOTE, _kill_after_vote,
          "kill a node right after it votes", fires_on_events=True, planner=_armed),
    _kind(POWER_CUT_AFTER_VOTE, _power_cut_after_vote,
          "cut power to a node right after it votes", variants=lambda: ("<D>ms",),
          default="50ms", needs_lazyfs=True, fires_on_events=True,
          planner=_armed_power_cut_vote),
    _kind(POWER_CUT_AFTER_COMMIT, _power_cut_after_commit,
          "cut power to nodes right after a commit",
          variants=lambda: ("majority", "all", "<target>-<D>ms"), default="majority-50ms",
          needs_lazyfs=True, fires_on_events=True, planner=_armed_power_cut),
    _kind(FAST_FAILOVER, _fast_failover,
          "cut the leader off, then its successor right after its election (KIP-279)",
          variants=lambda: ("<D>ms",), default="50ms", needs_lazyfs=True,
          fires_on_events=True, replays_live=True, planner=_armed_power_cut_vote),
    _kind(LOSE_STATE, _lose_state,
          "take the leader down and a follower's vote records with it",
          planner=_armed_lose_state),
    _kind(REFORMAT, _reformat,
          "re-format a node for another cluster and start it there (KIP-595 cluster id)"),
)
