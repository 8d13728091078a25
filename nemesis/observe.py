"""What the nemesis sees of the cluster, for compositions and the hunting
schedule: the node event lines a system leaves (the vocabulary of
docs/contracts.md, "Node event lines": `role`, `hw`, `truncate`, `start`),
folded into a small state by a pure function, and read from the nodes'
stdout logs by a tail (the I/O edge). A system that leaves no event lines
still has its adapter's leader; this then stays empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemesis.fault import ClusterControl
from nodes.db import DB
from nodes.events import HW, LEADER_ROLE, ROLE, START, TRUNCATE


@dataclass
class EventState:
    """The cluster as its event lines tell it, so far."""

    epochs: dict[str, int] = field(default_factory=dict)     # node -> latest epoch
    roles: dict[str, str] = field(default_factory=dict)      # node -> latest role
    hw: dict[str, int] = field(default_factory=dict)         # node -> latest high watermark
    claims: list[tuple[int, str]] = field(default_factory=list)  # (epoch, node) as Leader
    elections: int = 0
    truncations: int = 0
    restarts: int = 0
    lines: int = 0

    def snapshot(self) -> dict[str, Any]:
        return {"epochs": dict(sorted(self.epochs.items())),
                "hw": dict(sorted(self.hw.items())),
                "leader_elections": self.elections, "truncations": self.truncations,
                "restarts": self.restarts, "lines": self.lines}


def fold(state: EventState, node: str, event: Mapping[str, Any]) -> None:
    """Pure but for `state`: one event line into the state."""
    kind = event.get("event")
    state.lines += 1
    epoch = event.get("epoch")
    if type(epoch) is int:
        state.epochs[node] = epoch
    if kind == ROLE.name and isinstance(event.get("role"), str):
        state.roles[node] = event["role"]
        if event["role"] == LEADER_ROLE and type(epoch) is int \
                and (epoch, node) not in state.claims:
            state.claims.append((epoch, node))
            state.elections += 1
    elif kind == HW.name and type(event.get("hw")) is int:
        state.hw[node] = event["hw"]
    elif kind == TRUNCATE.name:
        state.truncations += 1
    elif kind == START.name:
        state.restarts += 1
        state.roles[node] = "start"


def latest_leader(state: EventState, other_than: Iterable[str] = ()) -> str | None:
    """The node claiming leadership in the highest epoch, if it still says it
    leads and is not in `other_than` (a leader of an older epoch is stale)."""
    if not state.claims:
        return None
    epoch, node = max(state.claims)
    if node in set(other_than):
        return None
    if state.roles.get(node) == LEADER_ROLE and state.epochs.get(node) == epoch:
        return node
    return None


class EventTail:
    """Every node's new event lines since the last read, folded into `state`."""

    def __init__(self, paths: Mapping[str, Path]) -> None:
        from nemesis.event_lines import LogTail
        self._tails = {node: LogTail(p) for node, p in sorted(paths.items())}
        self.state = EventState()

    def read(self) -> EventState:
        for node, tail in self._tails.items():
            for event in tail.read():
                fold(self.state, node, event)
        return self.state


def event_tail(cluster: ClusterControl, db: DB | None) -> EventTail | None:
    """A tail of the nodes' stdout logs, if the system leaves event lines there."""
    if db is None or "events" not in frozenset(db.artifacts or ()):
        return None
    from nemesis.event_lines import node_log_paths
    return EventTail(node_log_paths(cluster))
