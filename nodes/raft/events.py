"""The raft node's event lines: every kind it writes to stdout, with its fields.

One JSON object per line, `{"t": <CLOCK_MONOTONIC ns>, "node": "n1", "event":
KIND, ...fields}`. The node writes them (nodes.raft.core, nodes.raft.server),
the checkers that judge them and the triggers that fire on them read them,
and docs/contracts.md lists them: all by the names below. It imports nothing,
so every floor may import it (tests/harness/test_layering.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EventKind:
    name: str                       # the line's `event`
    fields: tuple[str, ...]         # what else the line carries, besides t and node
    meaning: str                    # when the node writes it, for docs/contracts.md


START = EventKind("start", ("epoch", "log_end", "voted_for", "cluster_id", "voters", "tick_ms",
                            "election_timeout_ms", "fetch_timeout_ms",
                            "recovered_truncated_bytes"),
                  "the node started, with what it recovered from its disk")
ROLE = EventKind("role", ("role", "epoch", "leader"),
                 "its role changed (Unattached, Prospective, Candidate, Leader, Follower, "
                 "Resigned); `leader` null when it knows none")
HW = EventKind("hw", ("hw", "epoch"),
               "its high watermark advanced (exclusive: offsets below it are committed)")
TRUNCATE = EventKind("truncate", ("from", "to", "reason", "bytes"),
                     "its log was cut back to `to` (`reason`: `diverging-epoch`, "
                     "`recovery`, ...)")
DATA_LOSS = EventKind("data_loss", ("what",),
                      "it found part of its state gone (`quorum-state-missing`), so an "
                      "epoch regression can be excused")
VOTES_AGAIN = EventKind("votes_again", ("epoch", "leader", "hw"),
                        "a node that lost its quorum state caught up with that leader and "
                        "may vote again (KIP-996, \"Disk failure\")")
PRE_VOTE = EventKind("pre_vote", ("epoch", "candidate", "role", "leader"),
                     "it granted a pre-vote, in that role and while following that leader")
VOTE = EventKind("vote", ("epoch", "candidate"),
                 "it granted its vote (durably recorded first)")
VOTER_CHANGE = EventKind("voter_change", ("change", "voter", "offset", "epoch"),
                         "as leader, it appended a voter change (KIP-853)")
VOTERS = EventKind("voters", ("state", "voters", "offset", "epoch"),
                   "the voter set in force changed (`state`: appended, truncated, "
                   "committed)")
FORMATTED = EventKind("formatted", ("cluster_id",), "it formatted an empty data dir")
CLUSTER_ID_MISMATCH = EventKind("cluster_id_mismatch", ("configured", "stored"),
                                "its data dir belongs to another cluster; it exits")
ACK = EventKind("ack", ("epoch", "first", "last", "writes", "age_ms", "flushed", "level"),
                "as leader, it acknowledged writes `first`..`last` to their clients "
                "(`level` leader: before they committed)")

EVENT_KINDS: tuple[EventKind, ...] = (START, ROLE, HW, TRUNCATE, DATA_LOSS, VOTES_AGAIN,
                                      PRE_VOTE, VOTE, VOTER_CHANGE, VOTERS, FORMATTED,
                                      CLUSTER_ID_MISMATCH, ACK)
