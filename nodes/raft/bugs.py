"""Bug switches: names of the historical bugs from the protocol seeds that the
core can put back, one at a time, so the harness can prove it catches them.
What each one breaks and which checker should notice: nodes/raft/BUGS.md."""

from __future__ import annotations

from collections.abc import Iterable

NO_PRE_VOTE = "no-pre-vote"
NO_CHECK_QUORUM = "no-check-quorum"
VOTE_BEFORE_PERSIST = "vote-before-persist"
TRUNCATE_TO_HW = "truncate-to-hw"
COMMIT_DIRTY = "commit-dirty"
PRE_VOTE_WHILE_FOLLOWING = "pre-vote-while-following"
RESIGNED_SAME_EPOCH = "resigned-same-epoch"
# Membership and consistency-level switches (KIP-853, KIP-1186, Redpanda RFC).
LEADER_ACK_AS_QUORUM = "leader-ack-as-quorum"
TWO_VOTER_CHANGES = "two-voter-changes"
ACK_WHEN_COMMITTED_AUTOJOIN = "ack-when-committed-autojoin"
# KIP-595's cluster id check.
CLUSTER_ID_IGNORED = "cluster-id-ignored"
# A voter that lost its quorum-state file (KIP-996 "Disk failure", KIP-595).
VOTE_AFTER_STATE_LOSS = "vote-after-state-loss"
# KIP-279's own case (KAFKA-6361): an epoch lookup answered wrongly after a
# fast leader fail-over.
UNKNOWN_EPOCH_NEXT_START = "unknown-epoch-next-start"

# A log write the disk refused (EIO) is counted as written, flushed and
# acknowledged: PostgreSQL's "fsyncgate" family; the correct node fail-stops.
IGNORE_WRITE_ERROR = "ignore-write-error"

# A leader lease for reads measured on the wall clock: the leader answers
# reads from its own state while a majority's fetches, stamped with their
# senders' wall clocks, promise it the lead, and resigns when its own wall
# clock says the promise ran out (instead of check quorum's ticks). The
# correct build has no lease: every read is a log barrier.
WALL_CLOCK_LEASE = "wall-clock-lease"

KNOWN = frozenset({NO_PRE_VOTE, NO_CHECK_QUORUM, VOTE_BEFORE_PERSIST, TRUNCATE_TO_HW, COMMIT_DIRTY,
                   PRE_VOTE_WHILE_FOLLOWING, RESIGNED_SAME_EPOCH})
KNOWN |= {LEADER_ACK_AS_QUORUM, TWO_VOTER_CHANGES, ACK_WHEN_COMMITTED_AUTOJOIN}
KNOWN |= {CLUSTER_ID_IGNORED}
KNOWN |= {VOTE_AFTER_STATE_LOSS}
KNOWN |= {UNKNOWN_EPOCH_NEXT_START}
KNOWN |= {IGNORE_WRITE_ERROR}
KNOWN |= {WALL_CLOCK_LEASE}

# How a real run exposes each switch (BUGS.md's last column; bench/detection.py
# and campaigns/calibration.toml are built from this): the nemesis, its mean
# interval in seconds, the nodes and client rate if not the defaults, and the checkers
# expected to catch it with defaults.
CALIBRATION: dict[str, dict] = {
    # Partitions held 4 s at least (`nemesis_min_duration`): every one then
    # outlasts what these bugs need, so each run has as many chances as
    # partitions, not as many as the draw makes long (a third of 1-2 s ones
    # are too short: a cut-off node's second Candidate line comes 1.25-1.75 s
    # in, a leader must be stranded 0.95 s plus its own timers' lateness, and
    # by then the rest must have elected a leader and written past the old
    # one's suffix). The timers:
    # 50 ms ticks, election timeout 500 ms, fetch timeout 750 ms (start lines).
    NO_PRE_VOTE: {"nemesis": ["partition:isolate-one"], "nemesis_interval": 4.0,
                  "nemesis_min_duration": 4.0, "caught_by": ["invariants"]},
    NO_CHECK_QUORUM: {"nemesis": ["partition:isolate-leader"], "nemesis_interval": 4.0,
                      "nemesis_min_duration": 4.0, "caught_by": ["invariants"]},
    # A power cut, not a kill, right after the vote line: the voter's next
    # quorum-state write follows within a round trip and would survive a kill
    # (nodes.raft.faults.triggers says why the slowed fsync makes the loss certain).
    VOTE_BEFORE_PERSIST: {"nemesis": ["power-cut-after-vote"], "nemesis_interval": 3.0,
                          "caught_by": ["invariants"]},
    TRUNCATE_TO_HW: {"nemesis": ["partition:isolate-leader"], "nemesis_interval": 3.0,
                     "nemesis_min_duration": 4.0, "caught_by": ["divergence", "linearizability"]},
    # Each fsync slowed to 200 ms: the bug's acks come a fetch round trip
    # after the leader's write, which stayed well inside the trigger's
    # "young" bound (half the delay) on a machine at load 16-19; with the
    # default 50 ms a loaded CI machine saw no young ack in a run.
    COMMIT_DIRTY: {"nemesis": ["power-cut-after-commit:all-200ms"], "nemesis_interval": 3.0,
                   "caught_by": ["durability", "linearizability", "divergence"]},
    # Scenario A needs a cut-off node whose log is as long as the others': a
    # busy leader's writes would leave it behind, and its pre-vote refused on
    # log grounds alone. KIP-996 describes mostly idle controller quorums:
    # a write every 4 s on average (every op is a log entry) leaves most cuts
    # without one before the pre-vote, about a second after. On 5 nodes the
    # leader is the bridge's middle 1 time in 5, not 1 in 3. No cas: a handful
    # of them would rarely succeed, and the stats checker says unknown then.
    PRE_VOTE_WHILE_FOLLOWING: {"nemesis": ["partition:bridge"], "nemesis_interval": 2.0,
                               "nodes": 5, "rate": 0.25, "workload_options": {"cas": False},
                               "caught_by": ["invariants"]},
    RESIGNED_SAME_EPOCH: {"nemesis": ["partition:isolate-leader"], "nemesis_interval": 4.0,
                          "nemesis_min_duration": 4.0, "caught_by": ["invariants"]},
    # Rows below: 10/10 each in real runs of 30 s (BUGS.md), 2026-11-22.
    # A power cut of every node right after a commit loses what the leader
    # acked but nobody had flushed.
    LEADER_ACK_AS_QUORUM: {"nemesis": ["power-cut-after-commit:all"], "nemesis_interval": 3.0,
                           "caught_by": ["durability", "linearizability"]},
    # Two removals sent at once: the leader must refuse the second while the
    # first is in flight; the switch accepts it.
    TWO_VOTER_CHANGES: {"nemesis": ["membership:remove-two"], "nemesis_interval": 3.0,
                        "caught_by": ["invariants"]},
    # KIP-1186's scenario on 3 nodes: n1 starts as the only voter (its
    # --standalone), the others auto-join; removed voters rejoin the same way.
    # Without the standalone start, a removed node could rejoin before the
    # next removal, the set never shrinking to the leader alone (1 run in 5).
    ACK_WHEN_COMMITTED_AUTOJOIN: {"nemesis": ["membership:auto-join"], "nemesis_interval": 3.0,
                                  "node_options": {"auto_join": True, "voters": ["n1"]},
                                  "caught_by": ["invariants"]},
    # A node re-formatted for another cluster rejoins under its old name: the
    # switch lets it follow our leader (and count toward our commits).
    CLUSTER_ID_IGNORED: {"nemesis": ["reformat"], "nemesis_interval": 3.0,
                         "caught_by": ["invariants"]},
    # The leader goes down and a follower loses its quorum-state file at the
    # same moment and comes back at once: the election that follows needs its
    # vote before it can have caught up with any leader.
    VOTE_AFTER_STATE_LOSS: {"nemesis": ["lose-state"], "nemesis_interval": 3.0,
                            "caught_by": ["invariants"]},
    # KIP-279 scenario 1 step by step (nodes.raft.faults.triggers.FastFailover): the
    # follower must hold an epoch its new leader never had, which only a
    # leader cut off right after its election leaves behind; partitions alone
    # never do (the leader they cut has long led). Held 6 s: the old leader's
    # return to power comes 2-4 s after arming.
    UNKNOWN_EPOCH_NEXT_START: {"nemesis": ["fast-failover"], "nemesis_interval": 3.0,
                               "nemesis_min_duration": 6.0, "caught_by": ["divergence"]},
    # EIO on a tenth of every node's log writes for 3-6 s: the switch leaves a
    # hole in the segment file where the refused record should be and
    # acknowledges past it; the log dump (read from disk) stops at the hole,
    # so committed, acknowledged entries are missing from it. 10/10 by both
    # (docs/faults.md, 2026-11-26).
    IGNORE_WRITE_ERROR: {"nemesis": ["disk:eio=0.1+ops=write+files=*.seg+nodes=all"],
                         "nemesis_interval": 3.0, "nemesis_min_duration": 3.0,
                         "caught_by": ["durability", "divergence"]},
    # One node's wall clock 10 s ahead: as a follower, its fetches promise
    # the leader 10.5 s (it cannot stay leader: its own lease looks expired at
    # once), so a leader cut off while the skew is in force (or up to 10 s
    # after its heal: a lease is the longest promise given) keeps leading and
    # answering reads from its own state while the majority elects another
    # leader and writes. The families overlap (`nemesis_overlap`) so the two
    # meet in every run: 10/10, correct build 0/10 (docs/faults.md). Its
    # marks: the stale reads (linearizability; read-commit-point, a lease
    # read below the commit point the new leader announced) and, where the
    # skew falls on the leader itself, a leader resigning with nothing taken
    # (availability; a CI trial at load ~14 on seed 1: the skew met the leader
    # the cut had just elected, not a follower; the correct build has no
    # lease and never resigns so: 0/3 on the same config, 2026-11-27).
    WALL_CLOCK_LEASE: {"nemesis": ["partition:isolate-leader", "clock:skew=10"],
                       "nemesis_interval": 3.0, "nemesis_min_duration": 4.0,
                       "nemesis_overlap": True,
                       "caught_by": ["linearizability", "read-commit-point", "availability"]},
}


class UnknownBug(ValueError):
    pass


def validate(names: Iterable[str]) -> frozenset[str]:
    """The names as a set, or UnknownBug naming the ones that are not switches."""
    chosen = frozenset(names)
    unknown = sorted(chosen - KNOWN)
    if unknown:
        raise UnknownBug(
            f"unknown bug switch {', '.join(unknown)}; known: {', '.join(sorted(KNOWN))}"
        )
    return chosen
