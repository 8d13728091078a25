"""When a leader may acknowledge a write: the consistency levels of the
Redpanda raft recovery RFC, decided inside the I/O-free core.

`quorum` (quorum_ack) is acknowledgeable once the entry commits, i.e. a
majority flushed it; `leader` (leader_ack) once the leader's own append is
handed to the server to write; `none` (no_ack) at once, before any write.
The core reports each offset in the Ready that makes it acknowledgeable
(`Ready.acked`); the server answers the clients and decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from nodes.raft import bugs
from nodes.raft.requests import LEADER_ACK, NO_ACK, QUORUM


def effective_level(requested: str, blind_write: bool, bug_switches: Iterable[str]) -> str:
    """The level a proposal is acknowledged at, bug switches applied."""
    if requested == QUORUM and blind_write and bugs.LEADER_ACK_AS_QUORUM in bug_switches:
        # BUG (what the RFC's quorum_ack exists to prevent): a quorum write
        # is acknowledged once the leader appended it, so a leader crash or
        # lost disk before replication loses an acknowledged write.
        return LEADER_ACK
    return requested


@dataclass
class AckTracker:
    """The leader's proposals still waiting for their level's condition."""

    waiting: dict[int, str] = field(default_factory=dict)
    due: list[tuple[int, str]] = field(default_factory=list)

    def proposed(self, offset: int, level: str) -> None:
        if level == NO_ACK:
            self.due.append((offset, level))
        else:
            self.waiting[offset] = level

    def appended(self, offsets: Iterable[int]) -> None:
        """These offsets go to the server's log in the Ready being built."""
        for offset in offsets:
            if self.waiting.get(offset) == LEADER_ACK:
                del self.waiting[offset]
                self.due.append((offset, LEADER_ACK))

    def committed(self, end: int) -> None:
        """Every offset below `end` is committed (flushed by a majority)."""
        for offset in sorted(o for o, level in self.waiting.items()
                             if o < end and level == QUORUM):
            del self.waiting[offset]
            self.due.append((offset, QUORUM))

    def truncated(self, end: int) -> None:
        """Offsets from `end` on no longer hold our entries: never acknowledge them."""
        for offset in [o for o in self.waiting if o >= end]:
            del self.waiting[offset]

    def take(self) -> list[tuple[int, str]]:
        due, self.due = self.due, []
        return due
