"""nemesis.fault.await_leader: a fault aimed at the leader waits out an
election in progress, on a clock of its own here (no real time)."""

from __future__ import annotations

from nemesis.fault import ELECTION_WAIT_S, LEADER_POLL_S, await_leader


class Electing:
    """A cluster whose adapter names no leader for the first `none` asks."""

    def __init__(self, none: int, leader: str | None = "n2") -> None:
        self.asked = 0
        self.none = none
        self.elected = leader

    def leader(self) -> str | None:
        self.asked += 1
        return None if self.asked <= self.none else self.elected


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_a_leader_there_at_once_is_not_waited_for() -> None:
    clock = Clock()
    assert await_leader(Electing(0), clock=clock, sleep=clock.sleep) == ("n2", 0.0)


def test_it_asks_again_until_the_election_ends_and_says_how_long() -> None:
    clock, cluster = Clock(), Electing(3)
    leader, waited = await_leader(cluster, clock=clock, sleep=clock.sleep)
    assert leader == "n2" and cluster.asked == 4
    assert waited == round(3 * LEADER_POLL_S, 3)


def test_no_leader_within_the_bound_is_none() -> None:
    clock, cluster = Clock(), Electing(10**6)
    leader, waited = await_leader(cluster, clock=clock, sleep=clock.sleep)
    assert leader is None
    assert ELECTION_WAIT_S <= waited < ELECTION_WAIT_S + 2 * LEADER_POLL_S
    clock2 = Clock()
    assert await_leader(Electing(10**6), timeout=0.0, clock=clock2, sleep=clock2.sleep) \
        == (None, 0.0)
