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
class NodeLogPatterns(Protocol):
    """An adapter that says which lines of its nodes' stdout/stderr mean a node
    tripped over itself (its own guards, assertions, crashes): regular
    expressions (Python `re`, searched per line). Lines matching one of
    `benign_log_lines` never count (what the faults themselves cause, such as
    an I/O error from a failed disk). Adapters without it get the generic
    Python and Go patterns (`nodes.log_patterns`)."""

    failure_log_lines: tuple[str, ...]
    benign_log_lines: tuple[str, ...]
