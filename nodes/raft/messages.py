"""Data the raft core exchanges: log entries, the persisted quorum state, peer messages.

Peer messages are plain msgpack-able dicts (see docs/raft-core-api.md) so the
server can put them on the wire without a schema layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack

VOTE_REQUEST = "vote_request"
VOTE_RESPONSE = "vote_response"
BEGIN_QUORUM_EPOCH = "begin_quorum_epoch"
BEGIN_QUORUM_EPOCH_RESPONSE = "begin_quorum_epoch_response"
END_QUORUM_EPOCH = "end_quorum_epoch"
FETCH = "fetch"
FETCH_RESPONSE = "fetch_response"
ERROR = "error"
# KIP-853 / KIP-1186: an observer asks the leader to make it a voter (auto-join).
ADD_RAFT_VOTER = "add_raft_voter"
ADD_RAFT_VOTER_RESPONSE = "add_raft_voter_response"

REQUEST_TYPES = frozenset({VOTE_REQUEST, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, FETCH,
                           ADD_RAFT_VOTER})

# Error codes carried in an "error" message or a fetch_response's "error" field.
CLUSTER_ID_MISMATCH = "cluster_id_mismatch"
FENCED_EPOCH = "fenced_epoch"  # the sender's epoch is older than ours
NOT_LEADER = "not_leader"
# KIP-853 AddRaftVoter / RemoveRaftVoter refusals.
DUPLICATE_VOTER = "duplicate_voter"
VOTER_NOT_FOUND = "voter_not_found"
# A change is in flight, or the leader has not yet committed in its epoch
# (KIP-853 answers both REQUEST_TIMED_OUT: retry later).
VOTER_CHANGE_IN_FLIGHT = "voter_change_in_flight"
NOT_COMMITTED_IN_EPOCH = "not_committed_in_epoch"
NOT_CAUGHT_UP = "not_caught_up"  # the replica to add has not fetched up to the HW
INVALID_REQUEST = "invalid_request"


@dataclass(frozen=True)
class Entry:
    offset: int
    epoch: int
    payload: bytes


@dataclass(frozen=True)
class QuorumState:
    epoch: int
    leader: str | None
    voted_for: str | None
    cluster_id: str
    # KIP-595's quorum-state fields. applied_offset: the offset of the newest
    # VotersRecord reflected here (-1: the bootstrap voters). current_voters:
    # the committed voter set (None: the bootstrap voters of the configuration).
    # target_voters: the set of a VotersRecord appended but not yet committed
    # (in force already, KIP-853), else None.
    applied_offset: int = -1
    current_voters: tuple[str, ...] | None = None
    target_voters: tuple[str, ...] | None = None
    # This voter lost its quorum-state file (its record of the votes it gave)
    # and grants no vote until it has caught up with a leader (KIP-996,
    # "Disk failure"); kept here so a restart before then still abstains.
    abstain: bool = False


def leader_change_payload(leader: str, epoch: int) -> bytes:
    return msgpack.packb({"op": "leader_change", "leader": leader, "epoch": epoch})


def entries_to_wire(entries: list[Entry]) -> list[list]:
    return [[e.offset, e.epoch, e.payload] for e in entries]


def entries_from_wire(rows: list) -> list[Entry]:
    return [Entry(int(o), int(ep), bytes(p)) for o, ep, p in rows]


def message(kind: str, sender: str, to: str | None, cluster_id: str, epoch: int,
            **fields: Any) -> dict:
    """A peer message with the header every message carries."""
    msg = {"type": kind, "from": sender, "to": to, "cluster_id": cluster_id, "epoch": epoch}
    msg.update(fields)
    return msg
