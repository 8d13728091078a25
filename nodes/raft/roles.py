"""Quorum roles and the transitions KIP-996 allows between them.

Only a Prospective may become a Candidate, so an epoch bump always follows a
won pre-vote. A Leader never becomes a Follower directly: it first learns of a
higher epoch (Unattached) and then of that epoch's leader.
"""

from __future__ import annotations

UNATTACHED = "Unattached"
PROSPECTIVE = "Prospective"
CANDIDATE = "Candidate"
LEADER = "Leader"
FOLLOWER = "Follower"
RESIGNED = "Resigned"

ALL_ROLES = (UNATTACHED, PROSPECTIVE, CANDIDATE, LEADER, FOLLOWER, RESIGNED)

ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    # higher epoch | election timeout | leader found (equal or larger epoch)
    UNATTACHED: frozenset({UNATTACHED, PROSPECTIVE, FOLLOWER}),
    # higher epoch or lost without known leader | won pre-vote | leader found
    # or lost with known leader | granted a standard vote (same role, voted)
    PROSPECTIVE: frozenset({UNATTACHED, CANDIDATE, FOLLOWER, PROSPECTIVE}),
    # higher epoch | timeout or lost | won | leader of this or a larger epoch found
    CANDIDATE: frozenset({UNATTACHED, PROSPECTIVE, LEADER, FOLLOWER}),
    # higher epoch | check-quorum failure or graceful shutdown
    LEADER: frozenset({UNATTACHED, RESIGNED}),
    # higher epoch | fetch timeout | leader of a larger epoch
    FOLLOWER: frozenset({UNATTACHED, PROSPECTIVE, FOLLOWER}),
    # higher epoch or election timeout (epoch + 1) | leader of a larger epoch
    RESIGNED: frozenset({UNATTACHED, FOLLOWER}),
}


class IllegalTransition(RuntimeError):
    pass


def check_transition(current: str, new: str) -> None:
    if new not in ALLOWED_TRANSITIONS[current]:
        raise IllegalTransition(f"{current} -> {new} is not allowed")
