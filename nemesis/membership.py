"""`membership`: voter changes as a fault (KIP-853 AddRaftVoter / RemoveRaftVoter).

Variants:
- `remove` (default): remove one voter, chosen by the schedule; the heal
  (`restore-voters`) adds back every voter this fault removed.
- `remove-leader`: remove the current leader (it leads on until the change
  commits, then resigns).
- `remove-two`: remove two voters with two requests sent at once, as a
  hasty operator might; the leader must refuse the second while the first
  is in flight (it is retried after), and the heal adds both back.
- `auto-join`: remove every voter but the leader, one change at a time,
  then restart the removed nodes: run with the `auto_join` node option, each
  asks to rejoin by itself, the first one growing the set from one voter to
  two: KIP-1186's case. The restart is what makes them ask: a node auto-joins
  once per process, never after it has been a voter in it (KAFKA-19850; a
  removed voter that added itself back at once raced the next removal, and
  the set never shrank to the leader alone). The heal adds back whoever has
  not rejoined.

A replay plays each change on the nodes its run recorded (the `nodes` of
the recorded value, passed back as params), never on whoever leads at
replay time: `remove-leader` removes the node that led then, `remove-two`
the two the run removed, `auto-join` the voters it removed. Re-resolved, a
replay whose election went another way removed another node and refused
the changes after it.

A removal whose answer leaves it in doubt (the adapter's result says
`definite: False`: the leader lost its leadership with the change in its
log, a timeout, a broken connection) may still commit: it is recorded as a
removal (its node named, `in_doubt` saying why, never a no-op), and the
heal adds the node back (an add of a voter still there is a
`duplicate_voter`, counted as back). Recorded as refused, a leader that
removed itself and then resigned when the change committed looked like a
leader lost for nothing (`availability`'s `leader-change-while-healthy`).

A member a heal failed to add back (etcd refusing a learner not caught up)
is still out: every later heal of any membership fault of the run tries it
again (`Stranded`, shared through the run's FaultContext; its value names
it in `retried`), up to MAX_HEAL_TRIES heals in all, then records it in
`given_up`; and its fault stays in force for the runner, so the run's final
heal, recorded as every heal is, tries it once more. A replay plays the
same heals, so it retries the same way.

The node stays up as an observer while removed, so re-adding it is the
operator's path: AddRaftVoter of a caught-up observer, answered at commit.
The change goes through the DB adapter's `change_voters(cluster, change,
node)`, which an adapter sends to its system's leader; a system
without it cannot run this fault. A system whose removed members leave
(`members_leave_when_removed`: etcd, whose member API its own robustness
tests drive the same way) has the node stopped after its removal, and
started after it is added back (the adapter empties its data dir: it joins
as a new member). `auto-join` needs a system whose
adapter offers the `auto_join` node option.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from checkers.faults import MEMBERSHIP
from checkers.history import NOOP
from nemesis.fault import (
    WAITED_FOR_LEADER,
    ClusterControl,
    FaultContext,
    await_leader,
    replayed_wait,
)
from nodes.abilities import ChangeVoters, leaves_when_removed

VARIANTS = ("remove", "remove-leader", "remove-two", "auto-join")
HEAL_F = MEMBERSHIP.heal_f
# A removal's op value key: the nodes whose removal failed in doubt (node -> error).
IN_DOUBT = "in_doubt"
# A change is refused while another is in flight or the leader is new: retry.
RETRY_S = 5.0
RETRY_EVERY_S = 0.2
# Heals that try to add back one removed member before it is given up (each
# may spend RETRY_S on refusals that only mean "not now").
MAX_HEAL_TRIES = 3
# FaultContext.extras' key of the run's `Stranded`.
STRANDED = "membership_stranded"


class Stranded:
    """The members a heal of some membership fault failed to add back, with
    how many heals have tried each: one per run, shared by all its
    membership faults (one per spec), so any later heal tries them again."""

    def __init__(self) -> None:
        self.tries: dict[str, int] = {}

    def pending(self) -> list[str]:
        """Those still worth a try, in order."""
        return sorted(n for n, k in self.tries.items() if k < MAX_HEAL_TRIES)


def check_variant(variant: str | None) -> None:
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown membership variant {variant!r}; "
                         f"expected one of {', '.join(VARIANTS)}")


def plan(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    """The schedule's choice: one voter for the `remove` variant; the others
    pick theirs from the cluster when injected, so their plan names none (a
    `nodes` param is what a replay passes: the nodes the run recorded). A bad
    variant is refused when planned, before a run starts."""
    check_variant(variant)
    # Drawn for every variant, so a seed's later draws stay what they were.
    voter = rng.choice(sorted(nodes))
    return {"nodes": [voter]} if (variant or "remove") == "remove" else {}


def recorded(params: Mapping[str, Any]) -> list[str] | None:
    """The nodes a replay passes back (the run's recorded `nodes`, empty when
    that change removed none), or None in a live run: a replay plays the
    change on them, never on whoever leads at replay time."""
    nodes = params.get("nodes")
    return list(nodes) if isinstance(nodes, list) else None


class MembershipFault:
    name, heal_f = MEMBERSHIP.name, HEAL_F

    def __init__(self, variant: str | None = None, stranded: Stranded | None = None) -> None:
        check_variant(variant)
        self.variant = variant or "remove"
        self.removed: list[str] = []
        self.stranded = stranded if stranded is not None else Stranded()

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        replayed = recorded(params)
        waited = replayed_wait(params) if replayed is not None else None
        aimed: dict[str, Any] = {} if waited is None else {WAITED_FOR_LEADER: waited}
        if self.variant == "auto-join":
            return self._remove_all_but_leader(cluster, replayed, aimed)
        if self.variant == "remove-two":
            return self._remove_two_at_once(cluster, rng, replayed)
        if replayed is not None and not replayed:
            return {"change": "remove", "nodes": [], **aimed,
                    NOOP: "the recorded change removed none"}
        if replayed is not None:
            node = replayed[0]
        elif self.variant == "remove-leader":
            leader, waited_s = await_leader(cluster)
            aimed = {WAITED_FOR_LEADER: waited_s}
            if leader is None:
                return {"change": "remove", "nodes": [], **aimed,
                        NOOP: f"no leader to remove (waited {waited_s:g} s)"}
            node = leader
        else:
            node = rng.choice(cluster.names)
        result = _change(cluster, "remove", node)
        if taken(result):
            self.removed.append(node)
            _left(cluster, [node])
        value = {"change": "remove", "nodes": [node], **aimed, **result}
        if in_doubt(result):
            value[IN_DOUBT] = {node: result.get("error")}
        elif not result.get("ok"):
            value[NOOP] = f"remove {node} refused: {result.get('error')}"
        return value

    def _remove_two_at_once(self, cluster: ClusterControl, rng: random.Random,
                            replayed: list[str] | None) -> dict[str, Any]:
        nodes = sorted(rng.sample(sorted(cluster.names), min(2, len(cluster.names) - 1)))
        if replayed is not None:
            nodes = sorted(replayed)
        results: dict[str, dict[str, Any]] = {}

        def remove(node: str) -> None:
            results[node] = _change(cluster, "remove", node)

        threads = [threading.Thread(target=remove, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        removed = [n for n in nodes if taken(results[n])]
        self.removed += removed
        _left(cluster, removed)
        value: dict[str, Any] = {"change": "remove", "nodes": removed,
                                 "refused": {n: results[n].get("error")
                                             for n in nodes if n not in removed}}
        doubtful = {n: results[n].get("error") for n in nodes if in_doubt(results[n])}
        if doubtful:
            value[IN_DOUBT] = doubtful
        if not removed:
            value[NOOP] = "every removal refused"
        return value

    def _remove_all_but_leader(self, cluster: ClusterControl, replayed: list[str] | None,
                               aimed: dict[str, Any]) -> dict[str, Any]:
        if replayed is not None:
            targets = sorted(replayed)
        else:
            leader, waited_s = await_leader(cluster)
            aimed = {WAITED_FOR_LEADER: waited_s}
            if leader is None:
                return {"change": "remove", "nodes": [], **aimed,
                        NOOP: f"no leader (waited {waited_s:g} s)"}
            targets = sorted(n for n in cluster.names if n != leader)
        removed, refused, doubtful = [], {}, {}
        for node in targets:
            result = _change(cluster, "remove", node)
            if taken(result):
                removed.append(node)
            if in_doubt(result):
                doubtful[node] = result.get("error")
            elif not result.get("ok"):
                refused[node] = result.get("error")
        self.removed += removed
        _left(cluster, removed)
        value: dict[str, Any] = {"change": "remove", "nodes": removed, "refused": refused,
                                 **aimed}
        if doubtful:
            value[IN_DOUBT] = doubtful
        if removed and not _leaves(cluster):
            # Only those running and not paused: another fault's stopped or
            # paused node stays as that fault left it.
            running = [n for n in removed if n not in cluster.paused]
            value["restarted"] = cluster.start(cluster.kill(running))
        if not removed:
            value[NOOP] = "every removal refused"
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        """Add back the voters this fault removed, and those an earlier heal
        (of any membership fault) failed to add back (`retried`)."""
        added, failed, given_up = [], {}, []
        retried = [n for n in self.stranded.pending() if n not in self.removed]
        for node in [*self.removed, *retried]:
            _left(cluster, [node])   # a kill's heal may have started it again
            result = _change(cluster, "add", node)
            if node in self.removed:
                self.removed.remove(node)
            if result.get("ok") or result.get("error") == "duplicate_voter":
                added.append(node)
                self.stranded.tries.pop(node, None)
                if _leaves(cluster):
                    cluster.start([node])
            else:
                failed[node] = result.get("error")
                self.stranded.tries[node] = self.stranded.tries.get(node, 0) + 1
                if self.stranded.tries[node] >= MAX_HEAL_TRIES:
                    given_up.append(node)
        if not added and not failed:
            return {"nodes": [], NOOP: "no voter was removed"}
        return {"nodes": added, "failed": failed, **({"retried": retried} if retried else {}),
                **({"given_up": given_up} if given_up else {})}

    def in_force(self) -> bool:
        """Whether some member a heal failed to add back is still to be tried:
        the runner then heals this fault again at the end of the run."""
        return bool(self.removed or self.stranded.pending())


def in_doubt(result: Mapping[str, Any]) -> bool:
    """A change that failed without saying it was not made: it may still commit."""
    return not result.get("ok") and result.get("definite") is False


def taken(result: Mapping[str, Any]) -> bool:
    """A removal made, or perhaps made: its node counts as removed until the heal."""
    return bool(result.get("ok")) or in_doubt(result)


def _leaves(cluster: ClusterControl) -> bool:
    return leaves_when_removed(cluster.db)


def _left(cluster: ClusterControl, nodes: list[str]) -> None:
    """A removed member of a system whose removed members leave is stopped
    (it shuts itself down; this makes sure, and keeps a restart from racing
    the emptying of its data dir at the add)."""
    if nodes and _leaves(cluster):
        cluster.kill(nodes)


def _change(cluster: ClusterControl, change: str, node: str) -> dict[str, Any]:
    """Ask the leader, retrying refusals that only mean "not now". The adapter's
    result says `definite: False` when a failed change may still be made; an
    attempt in doubt leaves the whole change in doubt unless a later one
    succeeds (a retry's refusal, `voter_not_found` after a removal that went
    through, says nothing about the earlier attempt)."""
    db = cluster.db
    if not isinstance(db, ChangeVoters):
        raise RuntimeError(f"{getattr(db, 'kind', 'this db')} cannot change voters")
    deadline = time.monotonic() + RETRY_S
    doubt = None
    while True:
        with cluster.in_hub():
            result = db.change_voters(cluster.nodes, change, node)
        if in_doubt(result):
            doubt = result.get("error")
        retry = result.get("error") in ("voter_change_in_flight", "not_committed_in_epoch",
                                        "not_caught_up", "not_leader", "no_leader", "timeout")
        if result.get("ok") or not retry or time.monotonic() > deadline:
            if doubt is not None and not result.get("ok"):
                return {**result, "definite": False, "error": result.get("error") or doubt,
                        **({"earlier": doubt} if result.get("error") != doubt else {})}
            return result
        time.sleep(RETRY_EVERY_S)


# The node option a db adapter must offer for `auto-join` (the node asks to
# rejoin by itself; KIP-1186's switch).
AUTO_JOIN_OPTION = "auto_join"


def membership_fault(ctx: FaultContext) -> MembershipFault:
    # Refused before the run starts, not at the first inject mid-run.
    if ctx.db is not None and not isinstance(ctx.db, ChangeVoters):
        raise ValueError(f"{getattr(ctx.db, 'kind', 'this db')} cannot change voters "
                         f"(its adapter has no change_voters)")
    if (ctx.variant == "auto-join" and ctx.db is not None
            and AUTO_JOIN_OPTION not in (getattr(ctx.db, "OPTIONS", None) or {})):
        raise ValueError(f"membership:auto-join needs nodes that rejoin by themselves "
                         f"(node option {AUTO_JOIN_OPTION}), which "
                         f"{getattr(ctx.db, 'kind', 'this db')} nodes do not have")
    # One per run, through the context every fault of the run is built from.
    stranded = ctx.extras.setdefault(STRANDED, Stranded())
    return MembershipFault(ctx.variant, stranded)
