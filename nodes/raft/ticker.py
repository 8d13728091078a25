"""When the node's next tick is due: the tick driver's schedule, kept pure.

A tick is time the node could watch its peers in. A process that was not
running (starved of CPU on a loaded host, stopped, swapped out) watched
nothing, and the fetches its peers sent meanwhile wait unread in its
sockets. Replaying the missed ticks back to back on waking would count that
time as silence: a leader's check-quorum window and a follower's fetch
timeout pass in a burst of ticks, before the waiting fetches are read, and a
leader whose followers all fetched resigns (a whole cluster stalled for 2 s
and resumed: the leader lost its epoch in 6 of 8 trials). So a tick that
comes late by a whole interval or more drops the ones it missed, as Go's
`time.Ticker` does for a slow receiver (etcd's raft ticks from one).
"""

from __future__ import annotations


def next_tick_due(due: float, now: float, interval: float) -> float:
    """When the next tick is due, the tick that was due at `due` having run
    at `now` (monotonic seconds): one interval on along the schedule while
    the node keeps up, else one interval from now (the missed ticks are
    dropped)."""
    following = due + interval
    return following if following > now else now + interval


def timers_behind(due: float, now: float, interval: float) -> float:
    """How far the node's timers fell behind wall time with this tick (seconds):
    the time from `due` to `now` when the missed ticks are dropped, else 0 (the
    schedule is kept, and the next tick runs at once)."""
    return 0.0 if due + interval > now else now - due
