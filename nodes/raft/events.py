"""The raft node's event lines: every kind it writes to stdout, with its fields.

One JSON object per line, `{"t": <CLOCK_MONOTONIC ns>, "node": "n1", "event":
KIND, ...fields}`. The node writes them (nodes.raft.core, nodes.raft.server),
the checkers that judge them and the triggers that fire on them read them,
and docs/contracts.md lists them: all by the names below. The kinds the
generic checkers read (start, role, hw, flushed, truncate, voters) are the generic
vocabulary's (nodes.events), re-exported here; the rest are the store's own.
It imports only that vocabulary, so every floor may import it
(tests/harness/test_layering.py).
"""

from __future__ import annotations

from nodes.events import FLUSHED, HW, ROLE, START, TRUNCATE, VOTERS, EventKind, VoteLoss

DATA_LOSS = EventKind("data_loss", ("what",),
                      "it found part of its state gone (`quorum-state-missing`), so an "
                      "epoch regression can be excused")
VOTES_AGAIN = EventKind("votes_again", ("epoch", "leader", "hw"),
                        "a node that lost its quorum state caught up with that leader and "
                        "may vote again (KIP-996, \"Disk failure\")")
# A grant's line carries the voter's log (`last_epoch`, `log_end`) and the
# candidate's from its request, so the election restriction is judged per grant.
GRANT_LOGS = ("last_epoch", "log_end", "candidate_last_epoch", "candidate_log_end")
PRE_VOTE = EventKind("pre_vote", ("epoch", "candidate", "role", "leader", *GRANT_LOGS),
                     "it granted a pre-vote, in that role and while following that leader; "
                     "its log and the candidate's")
VOTE = EventKind("vote", ("epoch", "candidate", *GRANT_LOGS),
                 "it granted its vote (durably recorded first); its log and the candidate's")
VOTER_CHANGE = EventKind("voter_change", ("change", "voter", "offset", "epoch"),
                         "as leader, it appended a voter change (KIP-853)")
FORMATTED = EventKind("formatted", ("cluster_id",), "it formatted an empty data dir")
CLUSTER_ID_MISMATCH = EventKind("cluster_id_mismatch", ("configured", "stored"),
                                "its data dir belongs to another cluster; it exits")
TICK_LATE = EventKind("tick_late", ("late_ms",),
                      "its timer tick ran `late_ms` after it was due, a whole tick or more "
                      "(its process was starved of CPU, stopped, or busy): the missed ticks "
                      "are dropped, so its protocol timers fell that far behind wall time, "
                      "over the `late_ms` before the line's `t`")
ACK = EventKind("ack", ("epoch", "first", "last", "writes", "age_ms", "flushed", "level"),
                "as leader, it acknowledged writes `first`..`last` to their clients "
                "(`level` leader: before they committed)")

# Its voters abstain from a lost quorum state until they caught up with a leader.
VOTE_LOSS = VoteLoss(DATA_LOSS, "quorum-state-missing", VOTES_AGAIN)

EVENT_KINDS: tuple[EventKind, ...] = (START, ROLE, HW, FLUSHED, TRUNCATE, DATA_LOSS, VOTES_AGAIN,
                                      PRE_VOTE, VOTE, VOTER_CHANGE, VOTERS, FORMATTED,
                                      CLUSTER_ID_MISMATCH, ACK, TICK_LATE)
