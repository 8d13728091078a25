"""A deterministic simulation of a raft cluster for tests.

It plays the server's part for N cores: applies each Ready to a simulated disk
(written vs. flushed entries, a quorum-state file), flushes after a seeded lag,
and carries messages over a seeded network that can drop, delay, reorder,
duplicate and partition. Time is ticks. Crashing a node keeps only its flushed
log and quorum state, as a power cut would.

While it runs it checks the safety properties every test relies on and records
breaches in ``violations`` instead of raising, so a test can print them all.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from nodes.raft import voters as vs
from nodes.raft.core import Config, Core, Entry, NotLeader, QuorumState, VoterChangeRefused
from nodes.raft.events import ROLE, START
from nodes.raft.roles import FOLLOWER, LEADER


@dataclass
class NetworkConfig:
    drop: float = 0.0
    min_delay: int = 1
    max_delay: int = 1
    duplicate: float = 0.0


@dataclass
class SimDisk:
    """What a node's data dir holds: all written entries, and the part fsynced."""

    state: QuorumState | None = None
    written: list[Entry] = field(default_factory=list)
    durable: list[Entry] = field(default_factory=list)


@dataclass
class SimNode:
    name: str
    config: Config
    disk: SimDisk
    core: Core | None = None
    flush_due: int | None = None
    flush_stalled: bool = False
    incarnation: int = 0
    state_lost: bool = False   # its disk has data but no quorum-state file
    hw: int = 0
    applied: list[Entry] = field(default_factory=list)
    # (offset, level) the core reported acknowledgeable, with the disk's
    # written and durable ends at that moment (what a client's ack rests on).
    acked: list[tuple[int, str]] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return self.core is not None

    @property
    def up(self) -> Core:
        """Its core, which the caller knows is running (`alive`)."""
        if self.core is None:
            raise AssertionError(f"{self.name} is down")
        return self.core


class Sim:
    def __init__(
        self,
        names: tuple[str, ...] = ("n1", "n2", "n3"),
        seed: int = 0,
        *,
        cluster_id: str = "sim-cluster",
        network: NetworkConfig | None = None,
        flush_lag: tuple[int, int] = (0, 2),
        config: dict | None = None,
        initial: dict[str, tuple[QuorumState | None, list[Entry]]] | None = None,
        cluster_ids: dict[str, str] | None = None,
        observers: tuple[str, ...] = (),
    ) -> None:
        self.rng = random.Random(seed)
        self.now = 0
        self.network = network or NetworkConfig()
        self.flush_lag = flush_lag
        self.cluster_id = cluster_id
        self._queue: list[tuple[int, int, bytes]] = []
        self._seq = 0
        self._blocked: set[tuple[str, str]] = set()
        # Paused nodes (SIGSTOP): no ticks, no flushes; what is sent to them
        # waits, as in their sockets' buffers, until they resume.
        self._paused: set[str] = set()
        self._backlog: dict[str, list[bytes]] = {}
        self.events: list[tuple[int, str, dict]] = []
        self.violations: list[str] = []
        self.committed: list[Entry] = []
        self.leaders_by_epoch: dict[int, set[str]] = {}
        self.delivered = 0
        # Tick since which each leader could reach no live majority.
        self._stranded_since: dict[str, int] = {}
        self.nodes: dict[str, SimNode] = {}
        self.bootstrap = tuple(names)
        self._overrides = config or {}
        overrides = self._overrides
        # Observers start with the same bootstrap voters but are not among them.
        for name in tuple(names) + tuple(observers):
            cid = (cluster_ids or {}).get(name, cluster_id)
            cfg = Config(node_id=name, voters=tuple(names), cluster_id=cid, **overrides)
            state, log = (initial or {}).get(name, (None, []))
            disk = SimDisk(state=state, written=list(log), durable=list(log))
            self.nodes[name] = SimNode(name=name, config=cfg, disk=disk)
        for name in tuple(names) + tuple(observers):
            self._boot(self.nodes[name])

    # ------------------------------------------------------------ controls

    def core(self, name: str) -> Core:
        core = self.nodes[name].core
        if core is None:
            raise RuntimeError(f"{name} is down")
        return core

    def step(self) -> None:
        self.now += 1
        while self._queue and self._queue[0][0] <= self.now:
            _, _, raw = heapq.heappop(self._queue)
            msg = msgpack.unpackb(raw, raw=False)
            node = self.nodes.get(msg["to"])
            if node is None or not node.alive or (msg["from"], msg["to"]) in self._blocked:
                continue
            if node.name in self._paused:
                self._backlog.setdefault(node.name, []).append(raw)
                continue
            self.delivered += 1
            node.up.receive(msg)
            self._apply_ready(node)
        for node in self.nodes.values():
            if node.alive and node.name not in self._paused:
                node.up.tick()
                self._apply_ready(node)
        for node in self.nodes.values():
            if (node.alive and node.flush_due is not None and node.flush_due <= self.now
                    and node.name not in self._paused):
                self._flush(node)
        if self.now % 10 == 0:
            self.check_committed_durable()
        self.check_no_stranded_leader()

    def run(self, ticks: int) -> None:
        for _ in range(ticks):
            self.step()

    def run_until(self, predicate: Callable[[], bool], max_ticks: int) -> bool:
        for _ in range(max_ticks):
            if predicate():
                return True
            self.step()
        return predicate()

    def cut(self, a: str, b: str) -> None:
        self._blocked.add((a, b))
        self._blocked.add((b, a))

    def partition(self, *groups: tuple[str, ...] | list[str]) -> None:
        """Cut every link between different groups (nodes in no group stay connected)."""
        for i, group in enumerate(groups):
            for other in groups[i + 1 :]:
                for a in group:
                    for b in other:
                        self.cut(a, b)

    def isolate(self, name: str) -> None:
        self.partition([name], [n for n in self.nodes if n != name])

    def heal(self) -> None:
        self._blocked.clear()

    def cut_one_way(self, a: str, b: str) -> None:
        """Drop what `a` sends to `b` (a one-way partition)."""
        self._blocked.add((a, b))

    def uncut(self, a: str, b: str) -> None:
        """Let what `a` sends reach `b` again."""
        self._blocked.discard((a, b))

    def kill(self, name: str) -> None:
        """SIGKILL: the process is gone, what it wrote is not (the page cache
        outlives it), unlike `crash`, a power cut."""
        node = self.nodes[name]
        if not node.alive:
            return
        node.disk.durable = list(node.disk.written)
        node.core = None
        node.flush_due = None
        self._paused.discard(name)
        self._backlog.pop(name, None)

    def pause(self, name: str) -> None:
        if self.nodes[name].alive:
            self._paused.add(name)

    def resume(self, name: str) -> None:
        """SIGCONT: what waited for the node arrives now, in order."""
        self._paused.discard(name)
        for raw in self._backlog.pop(name, []):
            self._seq += 1
            heapq.heappush(self._queue, (self.now + 1, self._seq, raw))

    def crash(self, name: str) -> None:
        node = self.nodes[name]
        node.core = None
        node.flush_due = None
        node.disk.written = list(node.disk.durable)
        self._paused.discard(name)
        self._backlog.pop(name, None)

    def restart(self, name: str) -> None:
        node = self.nodes[name]
        if node.alive:
            return
        self._boot(node)

    def reformat(self, name: str, cluster_id: str) -> SimDisk:
        """Crash the node, format an empty disk for `cluster_id` and boot it
        there (an operator's mistake); the old disk is returned for `restore`."""
        self.crash(name)
        node = self.nodes[name]
        old = node.disk
        node.disk = SimDisk()
        node.config = replace(node.config, cluster_id=cluster_id)
        self._boot(node)
        return old

    def restore(self, name: str, disk: SimDisk) -> None:
        """Crash the node and boot it on `disk` again, in this cluster."""
        self.crash(name)
        node = self.nodes[name]
        node.disk = disk
        node.config = replace(node.config, cluster_id=self.cluster_id)
        self._boot(node)

    def lose_quorum_state(self, name: str) -> None:
        """Crash the node, delete its quorum-state file, restart it: the log
        survives, the record of its votes does not."""
        self.crash(name)
        node = self.nodes[name]
        node.disk.state = None
        node.state_lost = True
        self._boot(node)

    def add_node(self, name: str, **config: Any) -> None:
        """Start a node with an empty disk as an observer of the bootstrap voters."""
        if name in self.nodes:
            raise ValueError(f"{name} exists")
        cfg = Config(node_id=name, voters=self.bootstrap, cluster_id=self.cluster_id,
                     **(self._overrides | config))
        self.nodes[name] = SimNode(name=name, config=cfg, disk=SimDisk())
        self._boot(self.nodes[name])

    def change_voters(self, change: str, node: str,
                      ack_when_committed: bool = True) -> tuple[str, int] | str:
        """Ask the leader to add or remove a voter: (leader, offset), or why not."""
        name = self.leader()
        if name is None:
            return "no_leader"
        core = self.nodes[name].up
        try:
            if change == "add":
                offset = core.add_voter(node, ack_when_committed)
            else:
                offset = core.remove_voter(node)
        except VoterChangeRefused as refused:
            return refused.code
        except NotLeader:
            return "not_leader"
        self._apply_ready(self.nodes[name])
        return name, offset

    def voters_in_force(self) -> tuple[str, ...]:
        """The voter set of the live leader, else of the committed log."""
        name = self.leader()
        if name is not None:
            return self.nodes[name].up.voters
        return self.committed_voters()

    def committed_voters(self) -> tuple[str, ...]:
        for entry in reversed(self.committed):
            voters = vs.parse_record(entry.payload)
            if voters is not None:
                return voters
        return self.bootstrap

    def stall_flush(self, name: str, stalled: bool = True) -> None:
        node = self.nodes[name]
        node.flush_stalled = stalled
        if not stalled and len(node.disk.written) > len(node.disk.durable):
            node.flush_due = self.now

    def inject(self, msg: dict) -> None:
        """Hand a message straight to its addressee (used to play a foreign peer)."""
        node = self.nodes[msg["to"]]
        node.up.receive(msgpack.unpackb(msgpack.packb(msg), raw=False))
        self._apply_ready(node)

    def leader(self) -> str | None:
        """The live leader with the highest epoch, if any."""
        best = None
        for node in self.nodes.values():
            if node.alive and node.up.role == LEADER:
                if best is None or node.up.epoch > self.nodes[best].up.epoch:
                    best = node.name
        return best

    def stable_leader(self) -> str | None:
        """The leader, if every live node follows it in its epoch."""
        name = self.leader()
        if name is None:
            return None
        epoch = self.nodes[name].up.epoch
        for node in self.nodes.values():
            if node.alive and node.name != name:
                c = node.up
                if c.role != FOLLOWER or c.epoch != epoch or c.leader != name:
                    return None
        return name

    def settle(self, max_ticks: int = 500) -> str:
        """Run until a stable leader exists; its name."""
        if not self.run_until(lambda: self.stable_leader() is not None, max_ticks):
            raise AssertionError(f"no stable leader after {max_ticks} ticks: {self.describe()}")
        leader = self.stable_leader()
        assert leader is not None   # what run_until just saw; nothing ran since
        return leader

    def describe(self) -> str:
        parts = []
        for node in self.nodes.values():
            if node.alive:
                c = node.up
                parts.append(
                    f"{node.name}:{c.role}/e{c.epoch}/l={c.leader}/end={c.log_end}/hw={c.high_watermark}"
                )
            else:
                parts.append(f"{node.name}:down")
        return f"t={self.now} " + " ".join(parts)

    def propose(self, payload: bytes, level: str = "quorum",
                blind_write: bool = True) -> tuple[str, int] | None:
        name = self.leader()
        if name is None:
            return None
        try:
            offset = self.nodes[name].up.propose(payload, level, blind_write)
        except NotLeader:
            return None
        self._apply_ready(self.nodes[name])
        return name, offset

    def role_events(self, name: str | None = None) -> list[tuple[int, str, dict]]:
        return [
            (t, n, e)
            for t, n, e in self.events
            if e["event"] == ROLE.name and (name is None or n == name)
        ]

    # -------------------------------------------------------------- checks

    def check_committed_durable(self) -> None:
        """Every committed entry must be flushed on a majority (else a crash could lose it)."""
        k = len(self.committed)
        if k == 0:
            return
        holders = {n.name for n in self.nodes.values() if n.disk.durable[:k] == self.committed}
        # Every majority of a voter set that could elect a leader must hold it
        # (with one change at a time the committed and in-force sets overlap).
        for voters in {self.committed_voters(), self.voters_in_force()}:
            lacking = len(set(voters) - holders)
            if lacking >= vs.majority(voters):
                self.violations.append(
                    f"t={self.now}: committed prefix of {k} entries durable on only "
                    f"{len(set(voters) & holders)} of the voters {list(voters)}"
                )

    def check_no_stranded_leader(self) -> None:
        """Liveness: a leader that can reach no live majority must step down within
        two fetch timeouts (check quorum), else clients wait on it for nothing."""
        for node in self.nodes.values():
            # A paused leader cannot step down; its clock has stopped too.
            if not (node.alive and node.up.role == LEADER) or node.name in self._paused:
                self._stranded_since.pop(node.name, None)
                continue
            voters = node.up.voters
            reachable = sum(
                1
                for other in self.nodes.values()
                if other.name in voters
                and (other is node
                     or (other.alive and (node.name, other.name) not in self._blocked))
            )
            if reachable >= vs.majority(voters):
                self._stranded_since.pop(node.name, None)
                continue
            since = self._stranded_since.setdefault(node.name, self.now)
            if self.now - since == 2 * node.config.fetch_timeout_ticks:
                self.violations.append(
                    f"t={self.now}: leader {node.name} cut off from the majority since "
                    f"t={since} still leads epoch {node.up.epoch}"
                )

    def check_leader_kept(self, name: str, epoch: int) -> None:
        """Liveness under KIP-996: a leader that kept a majority must not be
        unseated, nor the epoch raised, by a node coming back from a partition."""
        node = self.nodes[name]
        if not node.alive or node.up.role != LEADER or node.up.epoch != epoch:
            self.violations.append(f"t={self.now}: stable leader {name} of epoch {epoch} disrupted")
        top = max(n.up.epoch for n in self.nodes.values() if n.alive)
        if top > epoch:
            self.violations.append(f"t={self.now}: epoch raised to {top} past stable epoch {epoch}")

    def check_logs_agree(self) -> None:
        """Each live node's log below its own high watermark is the committed prefix."""
        for node in self.nodes.values():
            if not node.alive:
                continue
            hw = node.up.high_watermark
            prefix = node.up.entries()[:hw]
            if prefix != self.committed[:hw]:
                self.violations.append(f"t={self.now}: {node.name} log below hw {hw} diverges")

    # ------------------------------------------------------------ plumbing

    def _boot(self, node: SimNode) -> None:
        node.incarnation += 1
        node.hw = 0
        node.applied = []
        node.core = Core(
            node.config, node.disk.state, list(node.disk.durable), seed=self.rng.randrange(2**32),
            state_lost=node.state_lost,
        )
        # As the server does: what it recovered, for checkers that follow a
        # node's durable end through its lines (checkers.counted_copies).
        self._record(node, {"event": START.name, "epoch": node.core.epoch,
                            "log_end": node.core.log_end})
        self._apply_ready(node)

    def _send(self, msg: dict) -> None:
        key = (msg["from"], msg["to"])
        if key in self._blocked or self.rng.random() < self.network.drop:
            return
        raw = msgpack.packb(msg, use_bin_type=True)
        copies = 2 if self.rng.random() < self.network.duplicate else 1
        for _ in range(copies):
            delay = self.rng.randint(self.network.min_delay, self.network.max_delay)
            self._seq += 1
            heapq.heappush(self._queue, (self.now + delay, self._seq, raw))

    def _flush(self, node: SimNode) -> None:
        node.flush_due = None
        if node.flush_stalled:
            return
        node.disk.durable = list(node.disk.written)
        node.up.flushed(len(node.disk.written))
        self._apply_ready(node)

    def _apply_ready(self, node: SimNode) -> None:
        ready = node.up.ready()
        disk = node.disk
        if ready.quorum_state is not None:
            disk.state = ready.quorum_state
            node.state_lost = False
        if ready.truncate_to is not None:
            # The server makes a truncation durable before appending after it.
            disk.written = disk.written[: ready.truncate_to]
            disk.durable = disk.durable[: ready.truncate_to]
        for entry in ready.append:
            if entry.offset != len(disk.written):
                self.violations.append(
                    f"t={self.now}: {node.name} append at {entry.offset}, disk end "
                    f"{len(disk.written)}"
                )
            disk.written.append(entry)
        if (ready.append or ready.truncate_to is not None) and node.flush_due is None:
            node.flush_due = self.now + self.rng.randint(*self.flush_lag)
        node.acked.extend(ready.acked)
        for msg in ready.messages:
            self._send(msg)
        for event in ready.events:
            self._record(node, event)
        for entry in ready.committed:
            self._note_committed(node, entry)
        if ready.high_watermark is not None:
            self._check_hw(node, ready.high_watermark)

    def _record(self, node: SimNode, event: dict) -> None:
        self.events.append((self.now, node.name, event))
        if event["event"] == ROLE.name and event["role"] == LEADER:
            leaders = self.leaders_by_epoch.setdefault(event["epoch"], set())
            leaders.add(node.name)
            if len(leaders) > 1:
                self.violations.append(
                    f"t={self.now}: two leaders in epoch {event['epoch']}: {sorted(leaders)}"
                )
            log = node.up.entries()
            if log[: len(self.committed)] != self.committed:
                self.violations.append(
                    f"t={self.now}: new leader {node.name} lacks committed entries"
                )

    def _note_committed(self, node: SimNode, entry: Entry) -> None:
        if entry.offset != len(node.applied):
            self.violations.append(
                f"t={self.now}: {node.name} applied offset {entry.offset} out of order"
            )
        node.applied.append(entry)
        if entry.offset < len(self.committed):
            if self.committed[entry.offset] != entry:
                self.violations.append(
                    f"t={self.now}: {node.name} committed {entry} but offset "
                    f"{entry.offset} was committed as {self.committed[entry.offset]}"
                )
        elif entry.offset == len(self.committed):
            self.committed.append(entry)
        else:
            self.violations.append(
                f"t={self.now}: {node.name} committed offset {entry.offset} beyond "
                f"the committed end {len(self.committed)}"
            )

    def _check_hw(self, node: SimNode, hw: int) -> None:
        if hw < node.hw:
            self.violations.append(f"t={self.now}: {node.name} hw went back {node.hw} -> {hw}")
        node.hw = hw
        if node.up.role != LEADER:
            return
        # Redpanda rule: the leader may only count offsets a majority has flushed.
        prefix = node.up.entries()[:hw]
        voters = node.up.voters
        holders = sum(1 for n in self.nodes.values()
                      if n.name in voters and n.disk.durable[:hw] == prefix)
        if holders < vs.majority(voters):
            self.violations.append(
                f"t={self.now}: leader {node.name} advanced hw to {hw} with only "
                f"{holders} nodes holding it durably"
            )
