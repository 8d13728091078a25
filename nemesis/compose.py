"""Leader-aware compositions: sequences of ordinary faults aimed at the
moments around an election, for any system (the leader comes from the DB
adapter, `ClusterControl.leader()`).

- `flip-flop`: cut the leader off (clients, in the hub, still reach it and
  write to it), and heal it the moment another node leads; 1-3 rounds.
- `kill-new-leader`: take the leader down, take its successor down right
  after its election, and bring the old one back while the successor is
  still down (down: killed or paused, one each, in either order).
- `leader-one-way`: drop the leader's outgoing traffic to its peers (it still
  hears them, and its clients): held past the election it brings on.
- `churn`: many elections a minute: the leader cut off (or killed) and healed
  as soon as another leads, again and again, for several seconds.
- `catch-up`: a follower left far behind (cut off or down while writes go
  on), then a fault the moment it rejoins, while it catches up.
- `minority-out`: the largest minority of followers out (killed, paused or
  cut off together) for longer than any failover we run, the leader and a
  quorum left whole: a correct cluster serves throughout, so an outage is a
  liveness bug the availability checker names (nothing else takes exactly a
  largest minority, and for long).
- `stale-quorum`: the largest minority cut off while writes commit (it falls
  behind in the same epoch), then the cut swapped: the leader's side goes
  away and the lagging minority with the fewest up-to-date nodes that make a
  quorum must elect (only an up-to-date node may win; the up-to-date ones
  mostly restart as the cut swaps, so the lagging ones campaign first); the
  old leader's side meanwhile takes writes it can never commit, and at the
  heal must truncate that tail; sometimes the new leader is taken out right
  after the heal, or every node's power is cut just after it, while the
  rejoining nodes truncate and catch up (the power cut: the system's own
  fault that cuts at one of the first acks, where its adapter offers one,
  `nodes.abilities.PowerCutOnAck`; else `lose-unsynced:all` a moment after
  the heal).
- `lagging-voters`: one to a largest minority of followers slowed (every
  packet of their links held 50-150 ms: still in touch, still voting, but
  behind in the same epoch), then the leader taken out (killed, paused, cut off,
  or its outgoing traffic dropped) while they lag: the election runs with
  voters whose logs are shorter than the leader's, and the nodes that win
  must bring them up while writes go on. Then the old leader back (it
  truncates what it took while cut off) and one of: nothing; the new leader
  killed at once, so the lagging nodes and the old leader must elect among
  themselves; or every node's power cut just after the rejoin (as in
  `stale-quorum`).
- `clock-cut`: clocks set apart across a failover (as Jepsen runs its clock
  nemesis beside partitions): the leader's clock set behind, a quorum's
  worth or more of its followers' ahead, or both (each by 1-30 s, the
  `clock` fault's own range); then the leader cut off while its clients
  still reach it, held past the election, healed, and the clocks set right
  after. The direction is the one in which a leader that trusts wall time
  believes it still leads after the others moved on (a lease granted on the
  followers' clocks, measured on its own); the other directions (a leader
  ahead, followers behind) are the plain `clock` move's, whose sign and node
  are drawn. Needs what `clock` needs: a system whose nodes take a
  preloaded clock.

Each step runs as the ordinary fault it is (`partition` with its cut, `kill`,
`pause`, their heals), fired through the nemesis runner, so the history, the
checkers and a replay see plain faults; a composition decides from what it
observed (who leads), and the nodes it chose are in the recorded ops. In a
replay a composition stays silent (`FaultContext.extras["replay"]`): its
steps are in the schedule already. Nothing here knows a particular system.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from checkers.faults import (
    CATCH_UP,
    CHURN,
    CLOCK,
    CLOCK_CUT,
    FLIP_FLOP,
    KILL,
    KILL_NEW_LEADER,
    LAGGING_VOTERS,
    LEADER_ONE_WAY,
    LOSE_UNSYNCED,
    MINORITY_OUT,
    PACKET,
    PARTITION,
    PAUSE,
    STALE_QUORUM,
    FaultOp,
)
from nemesis.clock import DEFAULT_MAX_SKEW_S, MIN_SKEW_S
from nemesis.disk import ALL, plan_lose_unsynced
from nemesis.fault import (
    ELECTION_WAIT_S,
    LEADER_POLL_S,
    ClusterControl,
    FaultContext,
    FireFn,
    split_spec,
)
from nemesis.observe import EventTail, event_tail, latest_leader
from nemesis.partition import both_ways, isolate
from nodes.abilities import PowerCutOnAck

# Event lines, where a system leaves them, say who won within milliseconds;
# the adapter is asked less often then (asking a paused node costs its
# status timeout).
EVENT_POLL_S = 0.01
ADAPTER_POLL_WITH_EVENTS_S = 0.5
# How long the runner may take to apply a fired step (it polls every 20 ms;
# a kill or a start of a node takes well under a second).
STEP_WAIT_S = 30.0
JOIN_S = 10.0



class Stopped(Exception):
    """The composition was told to stop (its heal, or the run's end)."""


# The generic ending's cut, and how long after the heal it comes: within
# the first round trips of the rejoin, while logs truncate and refill.
GENERIC_POWER_CUT = f"{LOSE_UNSYNCED.name}:{ALL}"
GENERIC_CUT_AFTER_S = (0.02, 0.5)


@dataclass(frozen=True)
class PowerCutEnding:
    """How a composition cuts every node's power as its cut-off nodes rejoin:
    `armed`, the system's own fault (`PowerCutOnAck`), armed before the heal
    so it cuts at one of the first acks after it; None, the generic cut
    (`lose-unsynced:all`) a moment after the heal."""

    armed: str | None = None

    @property
    def name(self) -> str:
        """The fault that cuts, as the composition's result names it."""
        return split_spec(self.armed or GENERIC_POWER_CUT)[0]


def power_cut_ending(db: object) -> PowerCutEnding:
    """Pure: the power cut `db`'s system offers the compositions, or the generic one."""
    return PowerCutEnding(db.power_cut_on_ack if isinstance(db, PowerCutOnAck) else None)


class Control:
    """What a composition does through: fire a fault and wait until it ran,
    heal, ask who leads, wait. Remembers what is in force, so whatever
    stops it can heal what it left."""

    def __init__(self, cluster: ClusterControl, fire: FireFn, stop: threading.Event,
                 events: EventTail | None = None,
                 power_cut: PowerCutEnding = PowerCutEnding()) -> None:
        self.cluster = cluster
        self._fire = fire
        self.stop = stop
        self.events = events
        self.power_cut = power_cut
        self.in_force: dict[str, None] = {}
        self.note: dict[str, Any] | None = None   # attached to the next fired op
        self.leaders_seen: list[str] = []          # each leader as polls first saw it
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return sorted(self.cluster.names)

    def act(self, spec: str, params: Mapping[str, Any], step: str) -> dict[str, Any]:
        """Inject `spec` with `params` (nodes chosen already) and wait until it ran."""
        with self._lock:
            if self.stop.is_set():
                raise Stopped()
            self.in_force[spec] = None
            note, self.note = {**(self.note or {}), "step": step}, None
            future = self._fire(spec, dict(params), "inject", note)
        return self._wait(future)

    def heal(self, spec: str, step: str = "heal") -> dict[str, Any]:
        with self._lock:
            if spec not in self.in_force:
                return {}
            del self.in_force[spec]
            future = self._fire(spec, {}, "heal", {"step": step})
        return self._wait(future)

    def act_instant(self, spec: str, params: Mapping[str, Any], step: str) -> dict[str, Any]:
        """`act` for a fault whose inject heals it too (nothing left in force)."""
        done = self.act(spec, params, step)
        self.in_force.pop(spec, None)
        return done

    def heal_all_now(self) -> None:
        """Fire a heal of everything still in force, without waiting (the
        caller may be the runner's own thread)."""
        with self._lock:
            for spec in list(self.in_force):
                self._fire(spec, {}, "heal", {"step": "stopped"})
            self.in_force.clear()

    def _wait(self, future: Future) -> dict[str, Any]:
        deadline = time.monotonic() + STEP_WAIT_S
        while time.monotonic() < deadline:
            if future.done():
                op = future.result()
                value = op.value if isinstance(op.value, dict) else {}
                return {**value, **({"error": op.error} if op.error else {})}
            if self.stop.is_set() and not future.done():
                # The runner is healing: it runs what was queued after its heals.
                self.stop.wait(0.02)
                if not future.done():
                    raise Stopped()
            time.sleep(0.005)
        raise Stopped()

    def _seen(self, leader: str | None) -> str | None:
        if leader is not None and (not self.leaders_seen or self.leaders_seen[-1] != leader):
            self.leaders_seen.append(leader)
        return leader

    def adapter_leader(self) -> str | None:
        try:
            return self._seen(self.cluster.leader())
        except Exception:
            return None

    def event_leader(self, other_than: Sequence[str] = ()) -> str | None:
        if self.events is None:
            return None
        return self._seen(latest_leader(self.events.read(), other_than))

    def leader(self) -> str | None:
        return self.event_leader() or self.adapter_leader()

    def wait_leader(self, other_than: Sequence[str] = (), timeout: float = ELECTION_WAIT_S
                    ) -> str | None:
        """The first leader not in `other_than` that the event lines or the
        adapter name, or None after `timeout`."""
        deadline = time.monotonic() + timeout
        adapter_every = LEADER_POLL_S if self.events is None else ADAPTER_POLL_WITH_EVENTS_S
        next_adapter = 0.0
        while True:
            leader = self.event_leader(other_than)
            if leader is None and time.monotonic() >= next_adapter:
                next_adapter = time.monotonic() + adapter_every
                leader = self.adapter_leader()
            if leader is not None and leader not in other_than:
                return leader
            if time.monotonic() >= deadline:
                return None
            self.sleep(EVENT_POLL_S if self.events is not None else LEADER_POLL_S)

    def sleep(self, seconds: float) -> None:
        if self.stop.wait(max(0.0, seconds)):
            raise Stopped()


Composition = Callable[[Control, random.Random], dict[str, Any]]


def _isolate_params(node: str, names: Sequence[str], shape: str = "isolate-leader"
                    ) -> dict[str, Any]:
    return {"shape": shape, "nodes": [node], "cut": [list(p) for p in isolate(node, names)]}


def outgoing_cut(node: str, names: Sequence[str]) -> list[list[str]]:
    """Pure: the pairs that drop `node`'s packets to every other node."""
    return [[node, other] for other in sorted(names) if other != node]


def flip_flop(ctl: Control, rng: random.Random) -> dict[str, Any]:
    rounds = []
    for _ in range(rng.randint(1, 3)):
        leader = ctl.wait_leader()
        if leader is None:
            break
        ctl.act(PARTITION.name, _isolate_params(leader, ctl.names), "isolate leader")
        elected = ctl.wait_leader(other_than=[leader])
        ctl.heal(PARTITION.name, "heal just after the election")
        rounds.append({"isolated": leader, "elected": elected})
        ctl.sleep(rng.uniform(0.05, 0.6))
    return {"target": "leader", "rounds": rounds}


def kill_new_leader(ctl: Control, rng: random.Random) -> dict[str, Any]:
    old = ctl.wait_leader()
    if old is None:
        return {"target": "none"}
    # One of the two is killed and one paused: a killed node restarts with
    # what it persisted, a paused one wakes up still believing what it did.
    first, second = (KILL, PAUSE) if rng.random() < 0.5 else (PAUSE, KILL)
    ctl.act(first.name, {"nodes": [old]}, "old leader down")
    new = ctl.wait_leader(other_than=[old])
    if new is not None:
        ctl.act(second.name, {"nodes": [new]}, "new leader down right after its election")
    ctl.heal(first.name, "old leader back")
    ctl.sleep(rng.uniform(0.5, 2.5))
    ctl.heal(second.name, "new leader back")
    return {"target": "leader", "old": old, "new": new, "downs": [first.name, second.name]}


def leader_one_way(ctl: Control, rng: random.Random) -> dict[str, Any]:
    leader = ctl.wait_leader()
    if leader is None:
        return {"target": "none"}
    ctl.act(PARTITION.name, {"shape": "leader-outgoing", "nodes": [leader],
                             "cut": outgoing_cut(leader, ctl.names)},
            "drop the leader's outgoing traffic")
    elected = ctl.wait_leader(other_than=[leader], timeout=rng.uniform(1.0, 4.0))
    # Held past the election: the old leader may still answer its clients.
    ctl.sleep(rng.uniform(0.2, 2.0))
    ctl.heal(PARTITION.name)
    return {"target": "leader", "cut_off": leader, "elected": elected}


def churn(ctl: Control, rng: random.Random) -> dict[str, Any]:
    until = time.monotonic() + rng.uniform(4.0, 10.0)
    changes = []
    while time.monotonic() < until:
        leader = ctl.wait_leader(timeout=3.0)
        if leader is None:
            break
        spec = KILL.name if rng.random() < 0.25 else PARTITION.name
        params = {"nodes": [leader]} if spec == KILL.name else _isolate_params(leader, ctl.names)
        ctl.act(spec, params, "leader out")
        elected = ctl.wait_leader(other_than=[leader], timeout=3.0)
        ctl.heal(spec, "back as soon as another leads")
        changes.append({"out": leader, "by": spec, "elected": elected})
        ctl.sleep(rng.uniform(0.05, 0.4))
    return {"target": "leader", "changes": changes}


AFTER_REJOIN = ("kill-leader", "isolate-leader", "kill-follower", "pause-follower")


def catch_up(ctl: Control, rng: random.Random) -> dict[str, Any]:
    leader = ctl.wait_leader()
    followers = [n for n in ctl.names if n != leader]
    if leader is None or not followers:
        return {"target": "none"}
    behind = rng.choice(followers)
    away = KILL.name if rng.random() < 0.5 else PARTITION.name
    ctl.act(away, {"nodes": [behind]} if away == KILL.name
            else _isolate_params(behind, ctl.names, "isolate-one"), "fall behind")
    ctl.sleep(rng.uniform(3.0, 6.0))
    ctl.heal(away, "rejoin")
    ctl.sleep(rng.uniform(0.0, 0.3))
    then = rng.choice(AFTER_REJOIN)
    now_leader = ctl.leader() or leader
    if then in ("kill-leader", "isolate-leader"):
        spec = KILL.name if then == "kill-leader" else PARTITION.name
        ctl.act(spec, {"nodes": [now_leader]} if spec == KILL.name
                else _isolate_params(now_leader, ctl.names), "leader out while it catches up")
        ctl.wait_leader(other_than=[now_leader])
        ctl.heal(spec)
    else:
        spec = KILL.name if then == "kill-follower" else PAUSE.name
        ctl.act(spec, {"nodes": [behind]}, "the catching-up node down mid catch-up")
        ctl.sleep(rng.uniform(0.3, 1.5))
        ctl.heal(spec)
    return {"target": "follower", "behind": behind, "away": away, "then": then}


def largest_minority(n: int) -> int:
    """Pure: the most of `n` voters a quorum survives without."""
    return max(0, n - (n // 2 + 1))


def group_cut(group: Sequence[str], names: Sequence[str]) -> list[list[str]]:
    """Pure: the pairs that cut `group` off from the other nodes, both ways
    (the group's nodes still reach each other)."""
    rest = [n for n in sorted(names) if n not in set(group)]
    return sorted([list(p) for p in both_ways(sorted(group), rest)])


# Held past op timeout + failover + a loaded machine's grace (6.75 s in all
# with the default system's timers), so an outage the minority's absence
# causes outlasts what availability excuses; and begun after a quiet spell,
# since the excuse of the move before runs on for a failover + op timeout
# after its heal (a first try held 9-14 s was judged on 7.9 and 8.3 s of it).
MINORITY_OUT_QUIET_S = (2.0, 3.0)
MINORITY_OUT_HOLD_S = (10.0, 15.0)
MINORITY_OUT_BY = (KILL.name, PAUSE.name, PARTITION.name)


def minority_out(ctl: Control, rng: random.Random) -> dict[str, Any]:
    leader = ctl.wait_leader()
    k = largest_minority(len(ctl.names))
    followers = [n for n in ctl.names if n != leader]
    if leader is None or k == 0 or len(followers) < k:
        return {"target": "none"}
    out = sorted(rng.sample(followers, k))
    how = rng.choice(MINORITY_OUT_BY)
    ctl.sleep(rng.uniform(*MINORITY_OUT_QUIET_S))
    leader = ctl.leader() or leader
    if leader in out:
        return {"target": "none", "leader_moved_to": leader}
    params: dict[str, Any] = {"nodes": out}
    if how == PARTITION.name:
        params = {"shape": "minority-cut-off", "nodes": out, "cut": group_cut(out, ctl.names)}
    ctl.act(how, params, "the largest minority of followers out; the leader keeps a quorum")
    ctl.sleep(rng.uniform(*MINORITY_OUT_HOLD_S))
    ctl.heal(how, "the minority back")
    return {"target": "follower", "nodes": out, "by": how, "leader": leader}


# How long the minority falls behind, and how long the swapped cut is held
# after the new election (the old leader's side takes writes meanwhile).
# 1.5 s of writes leave it hundreds of entries behind, as many as 5 s did
# for what the move is for (a shorter log in the same epoch); the time goes
# to the run's next moves (a 30 s run made 3-4 of ~10 s each).
STALE_LAG_S = (1.5, 3.5)
STALE_HOLD_S = (0.8, 2.0)
# The power-cut ending (PowerCutEnding), by a label that stays the same
# whichever cut a system gets, so a seed draws the same endings on every system.
POWER_CUT = "power-cut"
AFTER_STALE_HEAL = ("nothing", "kill-elected", "isolate-elected", POWER_CUT)
# How long an armed power cut may wait for its ack (a system's trigger may
# wait for a young write's: a second or more on a loaded machine).
POWER_CUT_WAIT_S = (1.5, 3.0)
STALE_RESTART_SHARE = 2 / 3


def stale_quorum_sides(names: Sequence[str], leader: str, lagging: Sequence[str],
                       joining: Sequence[str]) -> tuple[list[str], list[str]]:
    """Pure: the quorum that must elect (the lagging minority and the
    up-to-date nodes joining it) and the side left with the old leader."""
    quorum = sorted({*lagging, *joining})
    if leader in quorum:
        raise ValueError("the old leader cannot be in the stale quorum")
    return quorum, [n for n in sorted(names) if n not in quorum]


def stale_quorum(ctl: Control, rng: random.Random) -> dict[str, Any]:
    leader = ctl.wait_leader()
    names = ctl.names
    k = largest_minority(len(names))
    followers = [n for n in names if n != leader]
    if leader is None or k == 0:
        return {"target": "none"}
    lagging = sorted(rng.sample(followers, k))
    current = [n for n in followers if n not in lagging]
    joining = sorted(rng.sample(current, len(names) - k - k))
    quorum, old_side = stale_quorum_sides(names, leader, lagging, joining)
    ctl.act(PARTITION.name, {"shape": "lagging-minority", "nodes": lagging,
                             "cut": group_cut(lagging, names)}, "a minority falls behind")
    ctl.sleep(rng.uniform(*STALE_LAG_S))
    # An up-to-date node that still follows the old leader refuses the
    # lagging nodes' pre-votes until its fetch timeout, then campaigns at
    # once and wins the race: restarted as the cut swaps, it has no leader to
    # be loyal to and waits out an election timeout, so the lagging nodes,
    # campaigning already, ask first and the vote's up-to-date check decides.
    restart = rng.random() < STALE_RESTART_SHARE
    if restart:
        ctl.act(KILL.name, {"nodes": joining}, "the up-to-date nodes of the new quorum restart")
    # One partition replaces the other at once: the lagging nodes never
    # reach the old leader between the two cuts.
    ctl.act(PARTITION.name, {"shape": "quorum-of-the-lagging", "nodes": quorum,
                             "cut": group_cut(quorum, names)},
            "the leader's side away; the lagging minority and the fewest up-to-date "
            "nodes are the quorum")
    if restart:
        ctl.heal(KILL.name, "restarted")
    elected = ctl.wait_leader(other_than=old_side)
    ctl.sleep(rng.uniform(*STALE_HOLD_S))
    then = rng.choice(AFTER_STALE_HEAL)
    if then == POWER_CUT:
        # While the rejoining nodes truncate and refill their logs, what a
        # leader counts as durable must be. Where LazyFS is not mounted the
        # cut answers with its error: nothing done.
        arm_power_cut(ctl, "power cut armed for the first acks after the heal")
    ctl.heal(PARTITION.name, "heal: the old side truncates what it took")
    if then == POWER_CUT:
        cut_power(ctl, rng, "every node's power cut as the old side rejoins")
        power_back(ctl, rng)
    elif then != "nothing" and elected is not None:
        ctl.sleep(rng.uniform(0.02, 0.5))
        spec = KILL.name if then == "kill-elected" else PARTITION.name
        ctl.act(spec, {"nodes": [elected]} if spec == KILL.name
                else _isolate_params(elected, names), "new leader out as the old side rejoins")
        ctl.wait_leader(other_than=[elected])
        ctl.heal(spec)
    return {"target": "leader", "old": leader, "lagging": lagging, "joining": joining,
            "restarted": restart, "elected": elected, "then": ending_name(ctl, then)}


def ending_name(ctl: Control, then: str) -> str:
    """What a result calls the ending drawn: the power cut by its fault's name."""
    return ctl.power_cut.name if then == POWER_CUT else then


def arm_power_cut(ctl: Control, step: str) -> None:
    """Just before a heal: arm the system's own cut, if it has one."""
    if ctl.power_cut.armed is not None:
        ctl.act(ctl.power_cut.armed, {}, step)


def cut_power(ctl: Control, rng: random.Random, step: str) -> None:
    """Just after a heal: without an armed cut, every node's power cut now."""
    if ctl.power_cut.armed is None:
        ctl.sleep(rng.uniform(*GENERIC_CUT_AFTER_S))
        params = plan_lose_unsynced(rng, ctl.names, split_spec(GENERIC_POWER_CUT)[1])
        ctl.act_instant(GENERIC_POWER_CUT, params, step)


def power_back(ctl: Control, rng: random.Random) -> None:
    """At the ending's end: the armed cut given time to fire, then healed."""
    if ctl.power_cut.armed is not None:
        ctl.sleep(rng.uniform(*POWER_CUT_WAIT_S))
        ctl.heal(ctl.power_cut.armed, "power back")


# How long the followers lag before the leader goes, and how long the lag
# is held after the election. The slowing is one a correct cluster serves
# through (availability expects it to: a slow link takes nothing away), so a
# fixed delay well under any election or fetch timeout we run (0.5 s and up
# for the bundled systems): the node stays in every quorum, a round trip or
# two behind. Not loss or a rate cap: TCP backs off for seconds on a lossy
# link, and a capped link's queue grows without bound under the write load,
# so a leader whose quorum needs the slowed node may rightly step down
# (seen: 20-40 % loss, a correct leader's check-quorum resigned it).
LAG_BEHIND_S = (1.0, 2.5)
LAG_AFTER_S = (0.3, 1.2)
LAG_DELAY_MS = (50.0, 100.0, 150.0)
LEADER_OUT_BY = (KILL.name, PAUSE.name, "isolate", "outgoing")
NEW_LEADER_OUT = "new-leader-out"
AFTER_LAG_ELECTION = ("nothing", NEW_LEADER_OUT, POWER_CUT)


def both_way_links(group: Sequence[str], names: Sequence[str]) -> list[list[str]]:
    """Pure: every directed link between a node of `group` and any other node
    (the group's links to each other included: each of its nodes is slow)."""
    group = sorted(set(group))
    return sorted([[a, b] for a in sorted(names) for b in sorted(names)
                   if a != b and (a in group or b in group)])


def slowing(rng: random.Random, lagging: Sequence[str], names: Sequence[str]
            ) -> tuple[str, dict[str, Any]]:
    """Pure: the fault and its params that slow `lagging`'s links (each
    packet held a fixed delay, a quarter of it jitter at most) without cutting
    them."""
    delay = rng.choice(LAG_DELAY_MS)
    quality = {"delay": delay, "jitter": round(rng.uniform(0.0, delay / 4), 1)}
    return PACKET.name, {"quality": quality, "shape": "lagging", "nodes": sorted(lagging),
                         "links": both_way_links(lagging, names)}


def _leader_out(ctl: Control, how: str, leader: str) -> str:
    """Take `leader` out `how`; the spec to heal."""
    if how in (KILL.name, PAUSE.name):
        ctl.act(how, {"nodes": [leader]}, "leader out while followers lag")
        return how
    if how == "isolate":
        ctl.act(PARTITION.name, _isolate_params(leader, ctl.names),
                "leader cut off while followers lag")
    else:
        ctl.act(PARTITION.name, {"shape": "leader-outgoing", "nodes": [leader],
                                 "cut": outgoing_cut(leader, ctl.names)},
                "the leader's outgoing traffic dropped while followers lag")
    return PARTITION.name


def lagging_voters(ctl: Control, rng: random.Random) -> dict[str, Any]:
    leader = ctl.wait_leader()
    names = ctl.names
    followers = [n for n in names if n != leader]
    top = largest_minority(len(names))
    if leader is None or top == 0:
        return {"target": "none"}
    lagging = sorted(rng.sample(followers, rng.randint(1, top)))
    slow, params = slowing(rng, lagging, names)
    how = rng.choice(LEADER_OUT_BY)
    then = rng.choice(AFTER_LAG_ELECTION)
    done = ctl.act(slow, params, "followers slowed: behind, still voting")
    if done.get("error"):
        return {"target": "none", "error": done["error"]}
    ctl.sleep(rng.uniform(*LAG_BEHIND_S))
    leader = ctl.leader() or leader
    result: dict[str, Any] = {"target": "leader", "lagging": lagging, "slowed_by": slow,
                              "quality": params["quality"], "old": leader, "out_by": how,
                              "then": ending_name(ctl, then)}
    if leader in lagging:
        ctl.heal(slow, "the leader moved to a slowed node: nothing to take out")
        return {**result, "target": "follower"}
    out = _leader_out(ctl, how, leader)
    elected = result["elected"] = ctl.wait_leader(other_than=[leader])
    # The old leader, cut off, took writes it could not commit: it truncates
    # them as it rejoins, and the lagging nodes still catch up meanwhile.
    ctl.sleep(rng.uniform(*LAG_AFTER_S))
    if then == POWER_CUT:
        # Every node's power cut as the old leader rejoins, while logs
        # truncate and refill.
        arm_power_cut(ctl, "power cut armed for the first acks after the rejoin")
    ctl.heal(out, "the old leader back")
    if then == POWER_CUT:
        cut_power(ctl, rng, "every node's power cut as the old leader rejoins")
    elif then == NEW_LEADER_OUT and elected is not None:
        # The voters left are the lagging ones and the old leader, fresh from
        # its truncation: only what a quorum truly holds may survive.
        ctl.sleep(rng.uniform(0.02, 0.5))
        ctl.act(KILL.name, {"nodes": [elected]}, "the new leader down while the others lag")
        ctl.wait_leader(other_than=[elected])
        ctl.heal(KILL.name)
    ctl.heal(slow, "the lagging followers' links restored")
    if then == POWER_CUT:
        power_back(ctl, rng)
    return result


# How long the clocks are apart before the cut (the nodes' messages, many a
# second, carry the skewed clocks by then), how long the cut is held past
# the election (the old leader may still answer its clients), and how long
# the clocks stay apart after the heal (a promise given under the skew may
# outlive the cut).
CLOCK_APART_S = (0.3, 1.0)
CLOCK_HOLD_S = (1.0, 4.0)
CLOCK_AFTER_HEAL_S = (0.2, 1.5)
LEADER_BEHIND, FOLLOWERS_AHEAD, BOTH_APART = "leader-behind", "followers-ahead", "both"
CLOCKS_APART = (LEADER_BEHIND, FOLLOWERS_AHEAD, BOTH_APART)


def skew_size(rng: random.Random) -> float:
    """Pure: a skew's size in the `clock` fault's own range."""
    return round(rng.uniform(MIN_SKEW_S, DEFAULT_MAX_SKEW_S), 3)


def clocks_apart(rng: random.Random, leader: str, names: Sequence[str]
                 ) -> tuple[str, dict[str, float]]:
    """Pure: how the clocks are set apart (one of CLOCKS_APART) and each
    node's offset: the leader's behind; or followers' ahead, enough of them
    to make a quorum with the leader (a majority's promise is what a leader
    counts on) or more, one size for all; or both, each its own size."""
    followers = [n for n in sorted(names) if n != leader]
    how = rng.choice(CLOCKS_APART)
    offsets: dict[str, float] = {}
    if how != FOLLOWERS_AHEAD:
        offsets[leader] = -skew_size(rng)
    if how != LEADER_BEHIND and followers:
        count = rng.randint(min(len(names) // 2, len(followers)), len(followers))
        ahead = skew_size(rng)
        offsets.update(dict.fromkeys(sorted(rng.sample(followers, count)), ahead))
    return how, dict(sorted(offsets.items()))


def clock_cut(ctl: Control, rng: random.Random) -> dict[str, Any]:
    leader = ctl.wait_leader()
    names = ctl.names
    if leader is None or largest_minority(len(names)) == 0:
        return {"target": "none"}
    how, offsets = clocks_apart(rng, leader, names)
    apart_s, hold_s, after_s = (rng.uniform(*CLOCK_APART_S), rng.uniform(*CLOCK_HOLD_S),
                                rng.uniform(*CLOCK_AFTER_HEAL_S))
    done = ctl.act(CLOCK.name, {"mode": "skew", "offsets": offsets},
                   f"clocks set apart ({how})")
    if done.get("error"):
        return {"target": "none", "error": done["error"]}
    ctl.sleep(apart_s)
    # Whoever leads now: a skew alone may have moved the lead.
    cut_off = ctl.leader() or leader
    ctl.act(PARTITION.name, _isolate_params(cut_off, names),
            "leader cut off under the skew (its clients still reach it)")
    elected = ctl.wait_leader(other_than=[cut_off])
    ctl.sleep(hold_s)
    ctl.heal(PARTITION.name, "heal, the clocks still apart")
    ctl.sleep(after_s)
    ctl.heal(CLOCK.name, "clocks set right")
    return {"target": "leader", "apart": how, "offsets": offsets, "old": leader,
            "cut_off": cut_off, "elected": elected}


COMPOSITIONS: dict[str, Composition] = {
    FLIP_FLOP.name: flip_flop,
    KILL_NEW_LEADER.name: kill_new_leader,
    LEADER_ONE_WAY.name: leader_one_way,
    CHURN.name: churn,
    CATCH_UP.name: catch_up,
    MINORITY_OUT.name: minority_out,
    STALE_QUORUM.name: stale_quorum,
    LAGGING_VOTERS.name: lagging_voters,
    CLOCK_CUT.name: clock_cut,
}

# The least time each composition needs to play out as meant (its holds'
# lower bounds, plus about a second per election it waits for): begun with
# less of the run left, it is cut short and reaches nothing its own
# (minority-out cut at 6 s outlasts no excuse).
SHORTEST_S: dict[str, float] = {
    FLIP_FLOP.name: 2.0,
    KILL_NEW_LEADER.name: 3.0,
    LEADER_ONE_WAY.name: 2.5,
    CHURN.name: 5.0,
    CATCH_UP.name: 5.0,
    MINORITY_OUT.name: MINORITY_OUT_QUIET_S[0] + MINORITY_OUT_HOLD_S[0] + 1.0,
    STALE_QUORUM.name: STALE_LAG_S[0] + STALE_HOLD_S[0] + 2.0,
    LAGGING_VOTERS.name: LAG_BEHIND_S[0] + LAG_AFTER_S[0] + 1.0,
    CLOCK_CUT.name: CLOCK_APART_S[0] + CLOCK_HOLD_S[0] + CLOCK_AFTER_HEAL_S[0] + 1.0,
}


def run_composition(name: str, ctl: Control, rng: random.Random) -> dict[str, Any]:
    """Run one to its end (or until stopped); heals what it left in force."""
    try:
        return COMPOSITIONS[name](ctl, rng)
    except Stopped:
        return {"stopped": True}
    finally:
        if not ctl.stop.is_set():
            for spec in list(ctl.in_force):
                ctl.heal(spec, "end of composition")


class DriverFault:
    """A fault whose inject starts a thread that drives other faults through
    the runner (`fire`, set by it), and whose heal stops that thread and
    heals what it left. Silent in a replay: what it drove is in the schedule."""

    op: FaultOp

    def __init__(self, ctx: FaultContext) -> None:
        self.name, self.heal_f = self.op.name, self.op.heal_f
        self.replay = bool(ctx.extras.get("replay"))
        self.db = ctx.db
        self.power_cut = power_cut_ending(ctx.db)
        self.fire: FireFn | None = None
        self.result: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._control: Control | None = None

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        if self.replay or self.fire is None:
            return {"armed": False}
        self._stop_thread()
        self._stop = threading.Event()
        self._control = Control(cluster, self.fire, self._stop, event_tail(cluster, self.db),
                                self.power_cut)
        seed = rng.getrandbits(64)
        self.result = {}
        self._thread = threading.Thread(target=self._drive, name=self.name, daemon=True,
                                        args=(self._control, seed, dict(params)))
        self._thread.start()
        return {"armed": True, "seed": seed}

    def _drive(self, ctl: Control, seed: int, params: dict[str, Any]) -> None:
        try:
            self.result = self.drive(ctl, seed, params)
        except Exception as e:  # said in its heal's value, not lost with the thread
            self.result = {**self.result, "error": f"{type(e).__name__}: {e}"}

    def drive(self, ctl: Control, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        self._stop_thread()
        return self.summary()

    def summary(self) -> dict[str, Any]:
        return dict(self.result)

    def _stop_thread(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(JOIN_S)
            self._thread = None
        if self._control is not None:
            self._control.heal_all_now()
            self._control = None


class ComposedFault(DriverFault):
    """One composition per inject, as a fault of its own (`--nemesis flip-flop`)."""

    def __init__(self, ctx: FaultContext, op: FaultOp) -> None:
        self.op = op
        super().__init__(ctx)

    def drive(self, ctl: Control, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        return run_composition(self.name, ctl, random.Random(seed))


def composed_fault(name: str) -> Callable[[FaultContext], ComposedFault]:
    op = {op.name: op for op in (FLIP_FLOP, KILL_NEW_LEADER, LEADER_ONE_WAY, CHURN, CATCH_UP,
                                 MINORITY_OUT, STALE_QUORUM, LAGGING_VOTERS,
                                 CLOCK_CUT)}[name]

    def factory(ctx: FaultContext) -> ComposedFault:
        if ctx.variant is not None:
            raise ValueError(f"{name} takes no variant")
        return ComposedFault(ctx, op)
    return factory
