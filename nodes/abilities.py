"""The optional abilities a DB adapter may offer beyond `nodes.db.DB`, each a
runtime-checkable Protocol: the harness, the faults and the checkers ask
`isinstance(db, Ability)`, never `hasattr`. A fault that needs an ability the
adapter lacks is refused before the run starts; a checker that needs what an
ability gives is skipped with the reason.

They sit on the nodes' floor, below the faults and the harness that ask for
them; `faultline` (the public API) re-exports them, and docs/extending.md says
which faults and checkers need each. `ABILITIES` lists them for
docs/contracts.md (`python -m harness.docs_contracts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from nodes.db import NodeSpec, NodeState


@runtime_checkable
class Leadership(Protocol):
    """An adapter that can say which node leads. The faults that aim at the
    leader (`partition:isolate-leader`, `kill:leader`, `pause:leader`, `lose-state`,
    `membership:remove-leader`, the compositions), the leader lane of the
    report and the fault-coverage line need it; without it `leader()` is None."""

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        """The name of the node that leads now, or None if none does (or it cannot say)."""
        ...


@runtime_checkable
class ReplicaProgress(Protocol):
    """An adapter that can say how far a node's replica has got: the run polls
    it after the final reads until every live node reports the same (bounded
    by the system's recovery time), before it dumps."""

    def replica_progress(self, node: NodeSpec) -> dict[str, Any] | None:
        """Comparable fields (e.g. {"committed": 12, "log_end": 12}); None when
        the node does not answer."""
        ...


@runtime_checkable
class AppliedState(Protocol):
    """An adapter that can read what a node has applied, node-locally (no
    quorum, no leader): at the end of a run the harness reads every node and
    the node-state checker compares them with each other and with the history."""

    def applied_state(self, node: NodeSpec, workload: str) -> NodeState | None:
        """The node's applied state for `workload`'s keys, or None if it does not answer."""
        ...


@runtime_checkable
class NodeLogPatterns(Protocol):
    """An adapter that says which lines of its nodes' stdout/stderr mean a node
    tripped over itself (its own guards, assertions, crashes): regular
    expressions (Python `re`, searched per line). Lines matching one of
    `benign_log_lines` never count (what the faults themselves cause, such as
    an I/O error from a failed disk). Adapters without it get the generic
    Python and Go patterns (`nodes.log_patterns`)."""

    failure_log_lines: tuple[str, ...]
    benign_log_lines: tuple[str, ...]


@runtime_checkable
class StateFiles(Protocol):
    """An adapter that names the files in which a node keeps the record of its
    votes (raft: the quorum-state file): the `lose-state` fault deletes them."""

    def state_files(self, node: NodeSpec) -> list[Path]: ...


@runtime_checkable
class NodeStatus(Protocol):
    """An adapter that can ask one node for its own view: `role` ("Leader", ...),
    `epoch`, `leader`, `log_end`. The `fast-failover` fault watches it."""

    def status(self, node: NodeSpec) -> dict[str, Any] | None:
        """The node's view, or None if it does not answer."""
        ...


@runtime_checkable
class LogGrowth(Protocol):
    """An adapter that can append blind writes at a leader until its log reaches
    a length: the `fast-failover` fault (with `NodeStatus`) grows the next
    leader's log past the old one's."""

    def grow_log(self, node: NodeSpec, to_end: int, deadline: float) -> dict[str, Any]:
        """Append until the log ends at `to_end` or `deadline` (time.monotonic)
        passes; what it did (`appended`, `log_end`, `error`)."""
        ...


@runtime_checkable
class Reformat(Protocol):
    """An adapter that can format a node's emptied data dir for another cluster
    and configure the node for it from its next start (None: back to its own).
    The `reformat` fault needs it."""

    def reformat(self, node: NodeSpec, cluster_id: str | None) -> str:
        """The cluster id the node is now configured for."""
        ...


@runtime_checkable
class ChangeVoters(Protocol):
    """An adapter that can add or remove a voter through the leader (KIP-853's
    AddRaftVoter / RemoveRaftVoter, etcd's member add / remove). The
    `membership` fault needs it."""

    def change_voters(self, cluster: list[NodeSpec], change: str, node: str
                      ) -> dict[str, Any]:
        """`change` is "add" or "remove"; answers {"ok": bool, "error": str | None, ...}
        once the new voter set is in force (or refused)."""
        ...


@runtime_checkable
class MembersLeaveWhenRemoved(Protocol):
    """An adapter whose removed members shut themselves down and must rejoin
    with an empty data dir (etcd): the `membership` fault then stops a node
    it removed and starts it after adding it back. Without it (raft) a removed
    voter keeps running as an observer."""

    members_leave_when_removed: bool


def leaves_when_removed(db: object) -> bool:
    """Whether `db`'s removed members leave (`MembersLeaveWhenRemoved`)."""
    return isinstance(db, MembersLeaveWhenRemoved) and bool(db.members_leave_when_removed)


@runtime_checkable
class PreloadClock(Protocol):
    """An adapter that says whether its node processes read the clock through
    libc, where an LD_PRELOAD library (libfaketime) can set it off: the clock
    faults (nemesis.clock) need True. `clock_note`: how its nodes read the
    clock, said when a clock fault is refused (a Go binary reads it through
    the vDSO, past any preload)."""

    clock_preload: bool
    clock_note: str


@runtime_checkable
class PowerCutOnAck(Protocol):
    """An adapter whose system has a fault of its own that, armed, cuts every
    node's power right after its leader acknowledges a write (a trigger on
    its nodes' event lines, registered through `faultline.faults`): the
    ending of the compositions `stale-quorum` and `lagging-voters`, armed
    just before their heal so it cuts at one of the first acks while logs
    truncate and refill, and healed after. Without it they cut every node's
    power plainly (`lose-unsynced:all`) a moment after the heal."""

    power_cut_on_ack: str
    """The fault spec to arm (`name:variant`); its heal restarts what it cut."""


ABILITIES: tuple[type, ...] = (Leadership, ReplicaProgress, AppliedState, NodeLogPatterns,
                               StateFiles, NodeStatus, LogGrowth, Reformat, ChangeVoters,
                               MembersLeaveWhenRemoved, PreloadClock, PowerCutOnAck)
