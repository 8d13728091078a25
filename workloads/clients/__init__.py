"""Workload clients by system: each turns invoke ops into that system's requests
and its answers into ok / fail / info completions. Which client serves which
workload is the system's to say (faultline.system.System.clients)."""

from __future__ import annotations

from typing import Protocol

from checkers.history import Op


class Client(Protocol):
    def invoke(self, op: Op) -> Op: ...

    def close(self) -> None: ...
