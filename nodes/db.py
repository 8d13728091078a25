"""The DB adapter contract: how the harness sets up, starts and inspects a node.

The harness owns namespaces and processes; an adapter only says what to run
and how to look at it (docs/contracts.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


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
