"""Which voters are in force at each point of a log (KIP-853).

A voter set lives in the log as a VotersRecord; the newest one the log holds
is in force from the moment it is appended, committed or not (KIP-853), and
a truncation that removes it puts the previous one back. Before any record,
the bootstrap voters (the node's configuration) are in force. Pure data, so
the rules are testable on their own.
"""

from __future__ import annotations

import msgpack

# The first bytes of every VotersRecord payload: a 2-entry msgpack map whose
# first key is "op" with value "voters". Client commands are built by the
# server from a fixed set of ops, none of them "voters", so this prefix is
# the record's type tag and costs one slice per appended entry to recognise.
_PREFIX = b"\x82" + msgpack.packb("op") + msgpack.packb("voters")


def record_payload(voters: tuple[str, ...] | list[str]) -> bytes:
    """The payload of a VotersRecord naming ``voters``."""
    return msgpack.packb({"op": "voters", "voters": sorted(voters)})


def parse_record(payload: bytes) -> tuple[str, ...] | None:
    """The voters a VotersRecord names, or None when the payload is not one."""
    if payload[: len(_PREFIX)] != _PREFIX:
        return None
    try:
        doc = msgpack.unpackb(payload, raw=False)
        voters = doc["voters"]
    except (ValueError, KeyError, TypeError, msgpack.exceptions.ExtraData):
        return None
    if not isinstance(voters, list) or not all(isinstance(v, str) for v in voters):
        return None
    return tuple(sorted(voters))


def majority(voters: tuple[str, ...] | frozenset[str]) -> int:
    return len(voters) // 2 + 1


class VoterSets:
    """The VotersRecords of one log, in offset order, over the bootstrap set."""

    def __init__(self, bootstrap: tuple[str, ...]) -> None:
        self.bootstrap = tuple(sorted(bootstrap))
        self._records: list[tuple[int, tuple[str, ...]]] = []

    def note(self, offset: int, payload: bytes) -> bool:
        """Record the entry at ``offset`` if it is a VotersRecord; True if it was."""
        voters = parse_record(payload)
        if voters is None:
            return False
        if self._records and offset <= self._records[-1][0]:
            raise ValueError(f"voters record at {offset} is not after {self._records[-1][0]}")
        self._records.append((offset, voters))
        return True

    def truncate(self, end: int) -> bool:
        """Forget records at or after ``end``; True if the set in force changed."""
        before = len(self._records)
        while self._records and self._records[-1][0] >= end:
            self._records.pop()
        return len(self._records) != before

    def in_force(self) -> tuple[str, ...]:
        return self._records[-1][1] if self._records else self.bootstrap

    def at(self, end: int) -> tuple[str, ...]:
        """The set in force for the log prefix [0, end)."""
        for offset, voters in reversed(self._records):
            if offset < end:
                return voters
        return self.bootstrap

    def last_offset(self) -> int:
        """Offset of the newest record, -1 when the bootstrap set is in force."""
        return self._records[-1][0] if self._records else -1

    def uncommitted(self, hw: int) -> bool:
        """A record at or beyond the high watermark: a voter change in flight."""
        return bool(self._records) and self._records[-1][0] >= hw

    def records(self) -> list[tuple[int, tuple[str, ...]]]:
        return list(self._records)
