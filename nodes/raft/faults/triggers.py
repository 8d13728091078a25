"""Faults aimed at a moment: triggers that watch the nodes' event lines and act
within milliseconds, for bugs whose window no random schedule can hit.

A trigger fault is armed by its schedule inject and disarmed by its heal, like
any other fault. While armed, a watcher thread tails every node's stdout and,
on the first matching line, hands an ordinary fault (a `kill` of the voter, a
`lose-unsynced` of a majority) to the nemesis runner, which runs it at once and
records it as a plain nemesis op in the history and the executed schedule, so
a replay re-executes it at the same time, as any other event. In a replay the
triggers stay silent (`FaultContext.extras["replay"]`): the fired faults are
already in the schedule.

- `kill-after-vote`: kill the leader to bring on an election, then SIGKILL
  the first voter right after its `vote` line (the grant has just left;
  KIP-595 says the vote must already be on disk). Heal restarts both.
- `power-cut-after-vote[:Dms]`: the same election, but the voter loses power
  right after its `vote` line (its LazyFS mount freezes in the watcher's
  thread; `lose-unsynced` then kills, rolls back and restarts it at once).
  A SIGKILL alone races the voter's next quorum-state write, which follows
  within a round trip (it learns who won) and, being a plain file write,
  survives a kill: the forgotten vote then showed in most runs, not all.
  With each fsync delayed by D ms (default 50), no quorum-state write begun
  after the vote line can be durable before D ms, so a cut that lands sooner
  loses every write of the vote the node made after granting it; a correct
  voter wrote it durably before the grant left, and keeps it.
- `power-cut-after-commit[:majority|all][-Dms]`: right after the leader's `ack`
  line for a young write (its reply is already on the client's socket),
  power off a majority with the leader (or all nodes): their LazyFS mounts
  freeze at once, in the watcher's thread, then `lose-unsynced` kills and
  rolls back whatever no fsync covered. The data dirs' LazyFS delays each
  fsync by D ms (default 50), and an fsync covers only what was written
  before it was called, so no copy of a write is durable before it is D ms
  old on the leader, which writes it first (the Redpanda RFC's dirty window).
  The trigger waits for an ack of a write the leader wrote under D/2 ms
  before (the line's `age_ms`), and records how much of the window was left
  when the power went off (`after.dirty_left_ms`; not negative means the cut
  lost every copy). A leader that counts dirty offsets toward its high
  watermark (`commit-dirty`) acks such writes all the time; a correct one
  never does, so after FALLBACK_ACKS older ones any ack will do, and the cut then
  tests that acked writes survive. A majority cut often leaves the dirty
  entry on the survivor, whose longer log then wins the election; `all`
  never does.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from checkers.faults import KILL, LOSE_UNSYNCED, PARTITION
from nemesis.event_lines import Watcher, node_log_paths
from nemesis.fault import ClusterControl, FaultContext, FireFn
from nemesis.lazyfs import kill_powered_off
from nemesis.partition import isolate
from nodes.abilities import LogGrowth, NodeStatus
from nodes.raft.events import ACK, ROLE, START, VOTE
from nodes.raft.fault_rows import (
    FAST_FAILOVER,
    KILL_AFTER_VOTE,
    POWER_CUT_AFTER_COMMIT,
    POWER_CUT_AFTER_VOTE,
)

DEFAULT_FSYNC_DELAY_MS = 50
# power-cut-after-commit waits for the ack of a write younger than this share
# of the fsync delay (the rest is the freeze's time to land), and takes the
# next ack after FALLBACK_ACKS older ones: a correct leader never acks so young
# a write. With commit-dirty about half the acks are young (a follower's
# write waits behind its fsync in flight), so 20 old ones in a row are
# about one in a million.
YOUNG_SHARE = 0.5
FALLBACK_ACKS = 20


class TriggerFault:
    """Common part: arming, the watcher, who leads; subclasses say what fires."""

    name = ""
    heal_f = "start"

    def __init__(self, ctx: FaultContext) -> None:
        # A trigger that `replays_live` (nemesis.fault.FaultKind) arms in a
        # replay too: its recorded firings are not in the replayed schedule.
        self.replay = bool(ctx.extras.get("replay")) and \
            self.name not in ctx.extras.get("replays_live", ())
        self.fire: FireFn | None = None       # set by the NemesisRunner
        self.cluster: ClusterControl   # set by setup(), before any inject
        self.roles: dict[str, str] = {}
        self.fired: list[dict[str, Any]] = []
        self._armed = False
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        self._watcher: Watcher | None = None
        # Each firing's nodes and the future of the fault it queued.
        self._queued: list[tuple[list[str], Future]] = []

    # --- the Fault interface ----------------------------------------------------

    def setup(self, cluster: ClusterControl) -> None:
        self.cluster = cluster
        if not self.replay:
            self._watcher = Watcher(node_log_paths(cluster), self.on_event, lambda: self._armed)
            self._watcher.poll()   # skip what happened before the run's nemesis started
            self._watcher.start()

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        with self._lock:
            self._armed = not self.replay
            self._rng = random.Random(rng.getrandbits(64))
            self.rearmed()
        if self._watcher is not None:
            self._watcher.wake()
        provoke = self.provoke()
        if provoke is not None and self._armed and self.fire is not None:
            self.fire(*provoke)
        return {"armed": self._armed, **self.describe()}

    def rearmed(self) -> None:
        """Called (under the lock) at each arming: reset what a match counts."""

    def provoke(self) -> tuple[str, dict[str, Any]] | None:
        """A fault to run right after arming, to bring on the moment watched for."""
        return None

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        with self._lock:
            self._armed = False
            self._queued = [(nodes, done) for nodes, done in self._queued if not done.done()]
            # A firing whose fault has not run yet brings its own nodes back
            # (a power cut: the roll-back, then the restart). Started here, a
            # node would run on its still-frozen disk, fail its first fsync
            # and stop: a correct node's exit no fault explains (docs/hunt.md,
            # "A power cut's nodes restarted before their roll-back").
            queued = {n for nodes, _ in self._queued for n in nodes}
        down = [n for n in cluster.names if not cluster.is_running(n) and n not in queued]
        return {"nodes": cluster.start(down, fresh=False)}

    def teardown(self, cluster: ClusterControl) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    # --- watching -----------------------------------------------------------------

    def on_event(self, node: str, event: dict[str, Any]) -> None:
        if event.get("event") == ROLE.name and isinstance(event.get("role"), str):
            self.roles[node] = event["role"]
        elif event.get("event") == START.name:
            self.roles[node] = "start"
        # Under the lock to the end: a heal (which takes it) then returns only
        # once a firing in flight has queued its fault, so the runner's final
        # heal never leaves a mount frozen with nothing queued to restart it.
        with self._lock:
            if not self._armed or self.fire is None:
                return
            action = self.match(node, event)
            if action is None:
                return
            # One shot per arming: the next inject re-arms it.
            self._armed = False
            spec, params = action
            seen_ns = time.monotonic_ns()
            if type(event.get("t")) is int and isinstance(params.get("after"), dict):
                params["after"]["seen_after_ms"] = round((seen_ns - event["t"]) / 1e6, 3)
            self.at_once(params)
            self.fired.append({"node": node, "event": event, "spec": spec, "params": params,
                               "seen_ns": seen_ns})
            self._queue(spec, params)

    def _queue(self, spec: str, params: dict[str, Any], action: str = "inject") -> None:
        """Under the lock: fire, and keep the nodes it acts on until its fault ran."""
        assert self.fire is not None
        done = self.fire(spec, params, action)
        nodes = params.get("nodes")
        if action == "inject" and isinstance(nodes, list):
            self._queued.append((list(nodes), done))

    def at_once(self, params: dict[str, Any]) -> None:
        """The part of the fault that cannot wait for the nemesis thread."""

    def describe(self) -> dict[str, Any]:
        return {}

    def match(self, node: str, event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        raise NotImplementedError


def elect(trigger: str) -> tuple[str, dict[str, Any]]:
    """Votes come with elections, and one fault at a time means nothing else
    brings one on while a vote trigger is armed: kill the leader."""
    return KILL.name, {"targets": "leader", "trigger": trigger}


class KillAfterVote(TriggerFault):
    name, heal_f = KILL_AFTER_VOTE.name, KILL_AFTER_VOTE.heal_f

    def describe(self) -> dict[str, Any]:
        return {"watch": "vote", "then": "kill the voter"}

    def provoke(self) -> tuple[str, dict[str, Any]] | None:
        return elect(self.name)

    def match(self, node: str, event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if event.get("event") != VOTE.name:
            return None
        return KILL.name, {"nodes": [node], "trigger": self.name,
                        "after": {"event": VOTE.name, "node": node, "t": event.get("t"),
                                  "epoch": event.get("epoch")}}


class PowerCut(TriggerFault):
    """A trigger that cuts power: every mount's fsyncs slowed by D ms while the
    fault is set up, and the chosen nodes' mounts frozen in the watcher's thread
    the moment it fires (`lose-unsynced` does the rest in the nemesis thread)."""

    def __init__(self, ctx: FaultContext, fsync_delay_ms: int) -> None:
        super().__init__(ctx)
        self.fsync_delay_ms = fsync_delay_ms
        mounts = ctx.extras.get("mounts")
        if mounts is None:
            raise ValueError(f"{self.name} needs the nodes' data dirs on LazyFS mounts")
        self.mounts: dict[str, Any] = mounts   # node -> nemesis.lazyfs.LazyFS

    def setup(self, cluster: ClusterControl) -> None:
        for fs in self.mounts.values():
            fs.set_fsync_delay(self.fsync_delay_ms)
        super().setup(cluster)

    def teardown(self, cluster: ClusterControl) -> None:
        super().teardown(cluster)
        for fs in self.mounts.values():
            try:
                fs.set_fsync_delay(0)
            except Exception:
                continue  # a mount already stopped has no delay to undo

    # A power cut stops the process with its disk: killed here, at once, the
    # node never runs on a frozen disk (`kill_powered_off`: an fsync it is in
    # is held, then failed once the SIGKILL is out, so it never sees it).
    # Handing over to the nemesis thread took up to 0.45 s under load, in
    # which a correct node tripped its own guard over the failed fsyncs (a
    # false `node-logs` anomaly; docs/hunt.md, hunt-fp).
    KILLS_AT_ONCE = True

    def at_once(self, params: dict[str, Any]) -> None:
        # The power goes off now: handing over to the nemesis thread can take
        # milliseconds (the GIL, a fault built on first use), and the window
        # is the fsync delay. lose-unsynced freezes and kills again (no-ops)
        # and rolls back; a replay, with no watcher, freezes and kills at
        # that inject.
        # Frozen first and timed then: the power is off from here on, and
        # kill_powered_off's SIGKILLs are not part of the window (its own
        # freeze is a no-op on a frozen mount).
        for name in params["nodes"]:
            self.mounts[name].freeze()
        after = params["after"]
        if type(after.get("t")) is int:
            after["frozen_after_ms"] = round((time.monotonic_ns() - after["t"]) / 1e6, 3)
            left = self.window_left_ms(after)
            if left is not None:
                after["dirty_left_ms"] = round(left, 3)
        if self.KILLS_AT_ONCE:
            kill_powered_off(self.cluster, params["nodes"], self.mounts)

    def window_left_ms(self, after: dict[str, Any]) -> float | None:
        """How much of the bug's window was left when the power went off (not
        negative: the cut lost what the bug left unflushed), if it applies."""
        return None


class PowerCutAfterVote(PowerCut):
    name, heal_f = POWER_CUT_AFTER_VOTE.name, POWER_CUT_AFTER_VOTE.heal_f

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx, parse_fsync_delay(ctx.variant))

    def describe(self) -> dict[str, Any]:
        return {"watch": "vote", "then": "power off the voter",
                "fsync_delay_ms": self.fsync_delay_ms}

    def provoke(self) -> tuple[str, dict[str, Any]] | None:
        return elect(self.name)

    def match(self, node: str, event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if event.get("event") != VOTE.name:
            return None
        return LOSE_UNSYNCED.name, {"nodes": [node], "trigger": self.name,
                                 "after": {"event": VOTE.name, "node": node, "t": event.get("t"),
                                           "epoch": event.get("epoch"),
                                           "candidate": event.get("candidate")}}

    def window_left_ms(self, after: dict[str, Any]) -> float | None:
        # A quorum-state write begun after the vote line is durable no sooner
        # than one fsync delay later.
        return self.fsync_delay_ms - after["frozen_after_ms"]


class PowerCutAfterCommit(PowerCut):
    name, heal_f = POWER_CUT_AFTER_COMMIT.name, POWER_CUT_AFTER_COMMIT.heal_f

    def __init__(self, ctx: FaultContext) -> None:
        targets, delay = parse_power_cut(ctx.variant)
        super().__init__(ctx, delay)
        self.old_acks = 0
        self.targets = targets

    def rearmed(self) -> None:
        self.old_acks = 0

    def describe(self) -> dict[str, Any]:
        return {"watch": "leader ack", "then": f"power off {self.targets} with the leader",
                "fsync_delay_ms": self.fsync_delay_ms}

    def match(self, node: str, event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        # Only a leader acknowledges writes: the line names the leader.
        if event.get("event") != ACK.name:
            return None
        age = event.get("age_ms")
        young = (isinstance(age, int | float) and not isinstance(age, bool)
                 and age < self.fsync_delay_ms * YOUNG_SHARE)
        if not young and self.old_acks < FALLBACK_ACKS:
            self.old_acks += 1
            return None
        names = sorted(self.cluster.names)
        others = [n for n in names if n != node]
        count = len(names) // 2 + 1 if self.targets == "majority" else len(names)
        chosen = sorted([node] + self._rng.sample(others, count - 1))
        return LOSE_UNSYNCED.name, {"nodes": chosen, "trigger": self.name,
                                 "after": {"event": ACK.name, "node": node, "t": event.get("t"),
                                           "last": event.get("last"), "age_ms": age,
                                           "young": young}}

    def window_left_ms(self, after: dict[str, Any]) -> float | None:
        if not after["young"]:
            return None
        # No copy of the write can be durable before it is fsync_delay old
        # (the leader writes it first, and an fsync covers only what was
        # written before its call): if this is not negative, the cut loses
        # it on every node it powers off.
        return self.fsync_delay_ms - after["age_ms"] - after["frozen_after_ms"]


class FastFailover(PowerCut):
    """KIP-279's scenario 1 (KAFKA-6361) as a fault, on 3 nodes A, B, C.

    Arming cuts the leader A off (`partition`, A against the rest): it takes
    client writes that reach nobody and resigns. B and C elect B. At C's
    `vote` line C loses power (its mount frozen here, at once: it will keep
    nothing it writes after the grant, so none of B's epoch), and then, in
    order: B's log is grown to A's length at least (`grow_log`: B's epoch
    then ends at or past where A's next one will start, the case in which
    the bug diverges rather than stalls); B is killed (its log survives); C
    restarts (`lose-unsynced`); the cut is healed. A and C, neither of which
    has B's epoch, elect A (its log is the longer); at that `Leader` line B
    is started again (`start`) and fetches from A naming an epoch A never
    had. A correct leader answers with the largest epoch it has below it and
    B truncates its whole epoch; `unknown-epoch-next-start` keeps it.

    Every step is recorded as the ordinary fault it is (partition, kill,
    lose-unsynced, heal, start), the growth as this fault's own op, each with
    the params it was fired with, `trigger` naming this fault. Each step
    waits for a node event, and in another run the election comes hundreds
    of ms sooner or later: replayed at their recorded times, the steps found
    B not yet leading (0 of 5 replays reproduced, docs/reproduction.md). So
    this fault `replays_live`: a replay drops its recorded steps and arms it
    again, and it plays the scenario out at the replay's own moments.
    """

    name, heal_f = FAST_FAILOVER.name, FAST_FAILOVER.heal_f
    GROW = "grow"
    # C runs on with its disk frozen until its `lose-unsynced` step: the
    # scenario's order (B grown and killed first) needs it.
    KILLS_AT_ONCE = False

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx, parse_fsync_delay(ctx.variant))
        self.spec = self.name if ctx.variant is None else f"{self.name}:{ctx.variant}"
        self.db = ctx.db
        if not (isinstance(self.db, NodeStatus) and isinstance(self.db, LogGrowth)):
            raise ValueError(f"{self.name} needs a DB adapter with status and grow_log "
                             "(the raft store's)")
        self.isolated: str | None = None
        self.stage = ""
        self.vote: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        return {"watch": "vote, then Leader", "then": "KIP-279 scenario 1",
                "fsync_delay_ms": self.fsync_delay_ms}

    def rearmed(self) -> None:
        self.isolated, self.stage, self.vote = None, "vote", {}

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        if params.get("step") == self.GROW:
            return self.grow(cluster, params)
        return super().inject(cluster, rng, params)

    def provoke(self) -> tuple[str, dict[str, Any]] | None:
        leader = self.cluster.leader()
        if leader is None:
            return None
        with self._lock:
            self.isolated = leader
        return PARTITION.name, {"cut": [list(p) for p in isolate(leader, self.cluster.names)],
                                "shape": "isolate-leader", "trigger": self.name}

    def on_event(self, node: str, event: dict[str, Any]) -> None:
        with self._lock:
            if not self._armed or self.fire is None or self.isolated is None:
                return
            steps = self.steps(node, event)
            if steps and self.stage == "done":
                self._armed = False
            if steps:  # queued under the lock, as TriggerFault.on_event says why
                self.fired.append({"node": node, "event": event, "steps": steps,
                                   "seen_ns": time.monotonic_ns()})
                for spec, params, action in steps:
                    self._queue(spec, params, action)

    def steps(self, node: str, event: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
        """What to fire for this line (under the lock), in order."""
        kind = event.get("event")
        if self.stage == "vote" and kind == VOTE.name and node != self.isolated:
            winner = event.get("candidate")
            if not isinstance(winner, str) or winner == self.isolated:
                return []
            after = {"event": VOTE.name, "node": node, "t": event.get("t"),
                     "epoch": event.get("epoch"), "candidate": winner}
            power_cut = {"nodes": [node], "trigger": self.name, "after": after}
            self.at_once(power_cut)
            self.stage, self.vote = "leader", {"epoch": event.get("epoch"), "winner": winner}
            return [(self.spec, {"step": self.GROW, "node": winner, "over": self.isolated,
                                 "trigger": self.name}, "inject"),
                    (KILL.name, {"nodes": [winner], "trigger": self.name}, "inject"),
                    (LOSE_UNSYNCED.name, power_cut, "inject"),
                    (PARTITION.name, {"trigger": self.name}, "heal")]
        if (self.stage == "leader" and kind == ROLE.name and event.get("role") == "Leader"
                and type(event.get("epoch")) is int and type(self.vote["epoch"]) is int
                and event["epoch"] > self.vote["epoch"]):
            self.stage = "done"
            return [(KILL.name, {"trigger": self.name}, "heal")]
        return []

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        with self._lock:
            # Armed but no election came: the leader is still cut off.
            still_cut = self._armed and self.isolated is not None and self.stage == "vote"
        value = super().heal(cluster)
        if still_cut and self.fire is not None:
            self.fire(PARTITION.name, {"trigger": self.name}, "heal")
        return value

    def window_left_ms(self, after: dict[str, Any]) -> float | None:
        # As power-cut-after-vote: no write begun after the vote line is durable sooner.
        return self.fsync_delay_ms - after["frozen_after_ms"]

    def grow(self, cluster: ClusterControl, params: Mapping[str, Any]) -> dict[str, Any]:
        """Grow the new leader's log to the old one's end, read once the old
        one has resigned (then nothing more reaches its log)."""
        node, over = params["node"], params["over"]
        deadline = time.monotonic() + GROW_WAIT_S
        with cluster.in_hub():
            old = self._wait_for(cluster, over, lambda s: s.get("role") != "Leader", deadline)
            if type(old.get("log_end")) is not int:
                return {"step": self.GROW, "node": node, "error": f"no status from {over}"}
            # The vote line comes a round trip before the winner counts it.
            new = self._wait_for(cluster, node, lambda s: s.get("role") == "Leader", deadline)
            grown = self.db.grow_log(cluster.spec(node), old["log_end"], deadline)
        return {"step": self.GROW, "over": over, "over_role": old.get("role"),
                "role": new.get("role"), **grown}

    def _wait_for(self, cluster: ClusterControl, node: str, ok: Callable[[dict[str, Any]], bool],
                  deadline: float) -> dict[str, Any]:
        """The node's status once `ok` holds for it, or at the deadline."""
        while True:
            status = self.db.status(cluster.spec(node)) or {}
            if ok(status) or time.monotonic() > deadline:
                return status
            time.sleep(0.005)


# How long the growth may wait for the old leader to resign and the new one to
# take the writes: the new one resigns a fetch timeout (0.75 s) after its voter
# lost power.
GROW_WAIT_S = 1.0
POWER_CUT_TARGETS = ("majority", "all")


def parse_power_cut(variant: str | None) -> tuple[str, int]:
    """`[majority|all][-]<D>ms` -> (targets, fsync delay ms); each part optional:
    `None` -> ("majority", 50), `"all"` -> ("all", 50), `"all-80ms"` -> ("all", 80)."""
    targets, delay = "majority", DEFAULT_FSYNC_DELAY_MS
    for part in (variant or "").split("-") if variant else []:
        if part in POWER_CUT_TARGETS:
            targets = part
        elif part.endswith("ms") and part[:-2].isdigit():
            delay = int(part[:-2])
        else:
            raise ValueError(f"expected [majority|all][-<D>ms] (e.g. all-50ms), not {variant!r}")
    return targets, delay


def parse_fsync_delay(variant: str | None) -> int:
    """`<D>ms` -> D; `None` -> 50."""
    if variant is None:
        return DEFAULT_FSYNC_DELAY_MS
    if variant.endswith("ms") and variant[:-2].isdigit():
        return int(variant[:-2])
    raise ValueError(f"expected <D>ms (e.g. 50ms), not {variant!r}")


def kill_after_vote(ctx: FaultContext) -> KillAfterVote:
    if ctx.variant is not None:
        raise ValueError("kill-after-vote takes no variant")
    return KillAfterVote(ctx)


def power_cut_after_commit(ctx: FaultContext) -> PowerCutAfterCommit:
    return PowerCutAfterCommit(ctx)


def power_cut_after_vote(ctx: FaultContext) -> PowerCutAfterVote:
    return PowerCutAfterVote(ctx)


def fast_failover(ctx: FaultContext) -> FastFailover:
    return FastFailover(ctx)
