"""The event lines any system's nodes may write for the generic checkers to
read: a start, a role change, a high watermark (with the copies a leader
counted for it), a durable log end, a log truncation, a voter set in force.
A system whose nodes write them (the bundled store's do) gets the
elections, divergence, commit-quorum and availability judgements from them;
a system's own kinds (and what its triggers fire on) live in its own
vocabulary, which builds on this one (nodes.raft.events).

One JSON object per line, `{"t": <CLOCK_MONOTONIC ns>, "node": "n1", "event":
KIND, ...fields}`. It imports nothing, so every floor may import it
(tests/harness/test_layering.py); docs/contracts.md lists the kinds.
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
                            "recovered_truncated_bytes", "reports_lateness", "hw_before_answers"),
                  "the node started, with what it recovered from its disk; "
                  "`reports_lateness` true: it writes a line whenever its timers fall "
                  "behind wall time (the raft store's `tick_late`); `hw_before_answers` "
                  "true: it writes each `hw` line before any client answer resting on "
                  "that commit point leaves")
# The `role` line's values the generic checkers and the hunt read.
LEADER_ROLE = "Leader"
FOLLOWER_ROLE = "Follower"
ROLE = EventKind("role", ("role", "epoch", "leader"),
                 "its role changed (Unattached, Prospective, Candidate, Leader, Follower, "
                 "Resigned); `leader` null when it knows none")
HW = EventKind("hw", ("hw", "epoch", "counted"),
               "its high watermark advanced (exclusive: offsets below it are committed); "
               "a leader names in `counted` the durable log end it counted for each voter "
               "(`{voter: end}`, itself included): the commit's own justification")
FLUSHED = EventKind("flushed", ("end",),
                    "its durable log end advanced: offsets below `end` are on its disk "
                    "(fsynced); written before any message that reports it leaves")
TRUNCATE = EventKind("truncate", ("from", "to", "reason", "bytes"),
                     "its log was cut back to `to` (`reason`: `diverging-epoch`, "
                     "`recovery`, ...)")
VOTERS = EventKind("voters", ("state", "voters", "offset", "epoch"),
                   "the voter set in force changed (`state`: appended, truncated, "
                   "committed)")


@dataclass(frozen=True)
class VoteLoss:
    """How a system's lines say a voter lost the state its votes rest on, so
    that it neither votes nor canvasses, and when it may vote again (KIP-996,
    "Disk failure"). A system whose voters do so declares it in its own
    vocabulary and brings it with its checkers (checkers.checker.Contributed);
    divergence then knows when no voter set can elect anyone."""

    lost: EventKind       # the line that says it lost that state ...
    what: str             # ... when its `what` field is this
    regained: EventKind   # the line that says it may vote again
