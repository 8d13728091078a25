"""The DB adapter contract: how the harness sets up, starts and inspects a node.

The harness owns namespaces and processes; an adapter only says what to run
and how to look at it (docs/contracts.md). What else an adapter may offer
(who leads, its applied state, voter changes...) is `nodes.abilities`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict


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
