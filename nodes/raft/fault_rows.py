"""The raft store's fault rows (name, heal op, what it does while in force),
written in the core's vocabulary (checkers.fault_row) and added to the
checkers' table through the `faultline.fault_rows` entry point
(pyproject.toml), as a plug-in's would be: the core names none of them. A
vocabulary: it imports nothing but another, so its faults, its checkers and
the compositions that end on one of them spell them from here."""

from __future__ import annotations

from checkers.fault_row import ARMED, DOWN, NODES, NOTHING, OTHER_CLUSTER, FaultOp, destroys

# A trigger's heal restarts whatever it killed.
KILL_AFTER_VOTE = FaultOp("kill-after-vote", "start", ARMED, NOTHING)
POWER_CUT_AFTER_COMMIT = FaultOp("power-cut-after-commit", "start", ARMED, NOTHING)
POWER_CUT_AFTER_VOTE = FaultOp("power-cut-after-vote", "start", ARMED, NOTHING)
# KIP-279 scenario 1 played out: the leader cut off, the next one cut off
# right after its election; its heal restarts whatever it killed.
FAST_FAILOVER = FaultOp("fast-failover", "start", ARMED, NOTHING)
# The leader stays down until `start`; the follower whose vote records it
# takes restarts at once (counted down with it: the op value names both).
# Its nodes' quorum-state goes (its point): they abstain until caught up.
LOSE_STATE = FaultOp("lose-state", "start", DOWN, NODES, loses_state=True, at_rest=destroys)
# The heal puts the node's own data back and starts it in its own cluster;
# meanwhile its data dir holds another cluster's empty log.
REFORMAT = FaultOp("reformat", "restore-data", OTHER_CLUSTER, NODES, at_rest=destroys)

ROWS: tuple[FaultOp, ...] = (KILL_AFTER_VOTE, POWER_CUT_AFTER_COMMIT, POWER_CUT_AFTER_VOTE,
                             FAST_FAILOVER, LOSE_STATE, REFORMAT)
