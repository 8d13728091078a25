"""The DB adapter contract: how the harness sets up, starts and inspects a node.

The harness owns namespaces and processes; an adapter only says what to run
and how to look at it (docs/contracts.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable


@dataclass
class NodeSpec:
    name: str
    host: str
    port: int
    data_dir: Path
    log_dir: Path
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Timers:
    """How long a correct cluster of a system takes, from its node options: what
    availability excuses after a fault and how long a run waits for the nodes
    to converge (run.json `timers`).

    failover_s: from losing its leader (or a quorum) until it serves again:
        noticing, one election, and its retries.
    recovery_s: from the last heal until every live node has caught up.
    rejoin_s: from a node coming back (its process up, its links restored)
        until it follows its leader again.
    rejoin_disrupts: a node coming back (restarted, or its links healed) may
        depose a healthy leader (no Pre-Vote / check-quorum, KIP-996).
    source: where the figures come from, for the verdict.
    """

    failover_s: float
    recovery_s: float
    rejoin_s: float
    rejoin_disrupts: bool
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"failover_s": self.failover_s, "recovery_s": self.recovery_s,
                "rejoin_s": self.rejoin_s, "rejoin_disrupts": self.rejoin_disrupts,
                "source": self.source}


# What an adapter's timers may build on: rounds of election a failover may take
# (a split vote, then one that wins, plus one for a loaded machine), and
# failovers a recovery may take.
FAILOVER_ELECTION_ROUNDS, RECOVERY_FAILOVERS = 3, 3

# A system that declares nothing: slow enough for any system we know of, and
# a rejoining node may disrupt.
GENERIC_TIMERS = Timers(failover_s=10.0, recovery_s=30.0, rejoin_s=10.0, rejoin_disrupts=True,
                        source="generic default (the system declares no timers)")


@runtime_checkable
class ReplicaProgress(Protocol):
    """An adapter that can say how far a node's replica has got: the run polls
    it after the final reads until every live node reports the same (bounded
    by the system's recovery time), before it dumps."""

    def replica_progress(self, node: NodeSpec) -> dict[str, Any] | None:
        """Comparable fields (e.g. {"committed": 12, "log_end": 12}); None when
        the node does not answer."""
        ...


class DB(Protocol):
    kind: str
    # Node artefacts a run leaves for the checkers: "log_dump" (nodes/<n>/log.msgpack)
    # and/or "events" (JSON event lines on stdout). Checkers needing others are skipped.
    artifacts: frozenset[str]

    def check_installed(self) -> str | None:
        """None when the system can run here, else one sentence saying how to install it."""

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None: ...

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]: ...

    def is_ready(self, node: NodeSpec) -> bool: ...

    def leader(self, cluster: list[NodeSpec]) -> str | None: ...

    def data_files(self, node: NodeSpec) -> list[Path]: ...

    def dump_log(self, node: NodeSpec, out: Path) -> None: ...


class NodeState(TypedDict):
    """What one node holds applied, read from that node alone.

    position: how far it has applied (an applied log index, a store revision):
        two nodes at one position must hold the same state.
    keys: [key, value] pairs in the workload's terms: the key as the history
        names it, as a string (None: the one keyless register); the value as
        a read would return it.
    logs: the same for named offset-addressed logs (the `log` workload), if any.
    digest: the node's own digest of its whole applied state, if it has one
        (equal positions must give equal digests).
    """

    position: int
    keys: list[list[Any]]
    logs: NotRequired[list[list[Any]]]
    digest: NotRequired[str]


@runtime_checkable
class AppliedState(Protocol):
    """An adapter that can read what a node has applied, node-locally (no
    quorum, no leader): at the end of a run the harness reads every node and
    the node-state checker compares them with each other and with the history."""

    def applied_state(self, node: NodeSpec, workload: str) -> NodeState | None:
        """The node's applied state for `workload`'s keys, or None if it does not answer."""


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
class NodeLogPatterns(Protocol):
    """An adapter that says which lines of its nodes' stdout/stderr mean a node
    tripped over itself (its own guards, assertions, crashes): regular
    expressions (Python `re`, searched per line). Lines matching one of
    `benign_log_lines` never count (what the faults themselves cause, such as
    an I/O error from a failed disk). Adapters without it get the generic
    Python and Go patterns (`nodes.log_patterns`)."""

    failure_log_lines: tuple[str, ...]
    benign_log_lines: tuple[str, ...]
