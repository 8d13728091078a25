"""The node process: sockets, disk and clock around the I/O-free core.

One asyncio loop does everything except fsync of the log, which runs in a
worker thread so appends keep arriving while the disk works: whatever was
appended during one fsync is covered by the next one (group commit).

Per Ready (docs/raft-core-api.md): persist the quorum state, truncate, append,
send messages, apply committed entries and answer the clients waiting on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import msgpack

from nodes.raft import bugs, codec, storage
from nodes.raft.core import (
    Config,
    Core,
    Entry,
    MalformedMessage,
    NotLeader,
    QuorumState,
    Ready,
    VoterChangeRefused,
)
from nodes.raft.events import (
    ACK,
    CLUSTER_ID_MISMATCH,
    DATA_LOSS,
    FORMATTED,
    START,
    TICK_LATE,
    TRUNCATE,
)
from nodes.raft.peers import PeerLink
from nodes.raft.requests import (
    APPLIED_STATE,
    LEADER_ACK,
    MAX_COMMAND_BYTES,
    NO_ACK,
    QUORUM,
    READS,
    BadRequest,
    command_for,
    consistency_of,
    is_blind_write,
)
from nodes.raft.roles import LEADER
from nodes.raft.state_machine import Outcome, StateMachine
from nodes.raft.storage import LogRecord, SegmentedLog
from nodes.raft.ticker import next_tick_due, timers_behind

HW_CHECKPOINT_INTERVAL_S = 0.5
VOTER_CHANGES = ("add_voter", "remove_voter")  # operator requests (KIP-853)
RESIGN_GRACE_S = 0.05  # time for the EndQuorumEpoch messages to leave
DISK_FAILED_EXIT = 74  # sysexits EX_IOERR: the node stopped on a storage error


@dataclass
class NodeOptions:
    node_id: str
    cluster_id: str
    listen: tuple[str, int]
    peers: dict[str, tuple[str, int]]  # every node it may talk to, this one included
    data_dir: Path
    voters: tuple[str, ...] | None = None  # bootstrap voters; None: every peer
    auto_join: bool = False
    tick_ms: int = 50
    bugs: frozenset[str] = frozenset()
    request_timeout_s: float = 5.0
    seed: int = 0
    segment_bytes: int = storage.DEFAULT_SEGMENT_BYTES


@dataclass
class Pending:
    """A client request waiting for its log entry to commit."""

    epoch: int
    request: dict[str, Any]
    connection: ClientConnection
    deadline: float
    written: float | None = None   # time.monotonic() once its entry is in our log file


@dataclass
class ClientConnection:
    writer: asyncio.StreamWriter
    open: bool = True

    def reply(self, request_id: Any, outcome: Outcome, definite: bool = True,
              leader: str | None = None) -> None:
        if not self.open or self.writer.is_closing():
            return
        response = {
            "id": request_id, "ok": outcome.ok, "value": outcome.value,
            "error": outcome.error, "definite": definite, "leader": leader,
        }
        try:
            frame = codec.encode_frame(response)
        except codec.FrameTooLarge:
            frame = codec.encode_frame(response | {"ok": False, "value": None,
                                                   "error": "response_too_large"})
        self.writer.write(frame)


def error_outcome(error: str) -> Outcome:
    return Outcome(False, error=error)


def emit_event(node_id: str, event: dict[str, Any]) -> None:
    line = {"t": time.monotonic_ns(), "node": node_id} | event
    sys.stdout.write(json.dumps(line, default=str) + "\n")
    sys.stdout.flush()


@dataclass
class _Flags:
    ready_scheduled: bool = False
    hw_dirty: bool = False
    stopping: bool = False
    ids: itertools.count = field(default_factory=itertools.count)


class RaftServer:
    def __init__(self, options: NodeOptions) -> None:
        self.options = options
        self.node_id = options.node_id
        self.data_dir = Path(options.data_dir)
        self.state_machine = StateMachine()
        # Requests whose entries the core has not yet reported acknowledgeable.
        self.pending: dict[int, Pending] = {}
        self.applied_end = 0
        self.flags = _Flags()
        self.boot = time.monotonic_ns()
        # The wall clock is read only for the wall-clock-lease switch.
        self._wall_clock = bugs.WALL_CLOCK_LEASE in options.bugs
        self._fsync_pool = ThreadPoolExecutor(1, thread_name_prefix="fsync")
        self._need_flush = asyncio.Event()
        self._links: dict[str, PeerLink] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._connections: set[asyncio.StreamWriter] = set()

    # ---------------------------------------------------------------- startup

    def recover(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        stored = storage.read_quorum_state(self.data_dir)
        state = QuorumState(**stored) if stored else None
        # Before anything touches the data (recovery may cut a torn tail): a
        # node must never act on another cluster's data (KIP-595 cluster id).
        self._check_cluster_id(state)
        self.log, recovered = SegmentedLog.open(self.data_dir, self.options.segment_bytes)
        self.log.ignore_write_errors = bugs.IGNORE_WRITE_ERROR in self.options.bugs
        state_file = self.data_dir / storage.QUORUM_STATE_FILE
        state_lost = stored is None and (state_file.exists() or bool(recovered.records))
        if state_lost:
            # A voter that forgets its vote could vote twice in one epoch.
            self.emit({"event": DATA_LOSS.name, "what": "quorum-state-missing"})
        config = Config(
            node_id=self.node_id,
            voters=self.options.voters or tuple(sorted(self.options.peers)),
            cluster_id=self.options.cluster_id,
            bugs=self.options.bugs,
            auto_join=self.options.auto_join,
            tick_s=self.options.tick_ms / 1000,
        )
        entries = [Entry(r.offset, r.epoch, r.payload) for r in recovered.records]
        self.core = Core(config, state, entries, self.options.seed, state_lost=state_lost)
        self.emit({
            "event": START.name, "epoch": self.core.epoch, "log_end": self.core.log_end,
            "voted_for": self.core.voted_for, "cluster_id": self.options.cluster_id,
            # The voter set in force from the recovered log (KIP-853), for the
            # invariants that count a majority of voters.
            "voters": list(self.core.voters),
            # The protocol timers in wall time, for invariants judged from these lines.
            "tick_ms": self.options.tick_ms,
            "election_timeout_ms": config.election_timeout_ticks * self.options.tick_ms,
            "fetch_timeout_ms": config.fetch_timeout_ticks * self.options.tick_ms,
            "recovered_truncated_bytes": recovered.truncated_bytes,
            # Its tick_late lines: no line then means its timers kept time.
            "reports_lateness": True,
            # A ready's lines go out before the answers it gives (_handle), so
            # a read's answer never leaves before the hw line it rests on
            # (checkers.read_commit_point).
            "hw_before_answers": True,
        })
        if recovered.truncated_bytes:
            self.emit({"event": TRUNCATE.name, "from": None, "to": self.core.log_end,
                       "reason": "recovery", "bytes": recovered.truncated_bytes})
        storage.write_epoch_checkpoint(self.data_dir, self.core.epoch_cache)

    def _check_cluster_id(self, state: QuorumState | None) -> None:
        """Stop with a clear error if the data dir was formatted for (or its
        quorum state names) another cluster than the configured one. A data
        dir never formatted is formatted here: empty, for the configured
        cluster (a new node); with a quorum state, for the cluster it names."""
        configured = self.options.cluster_id
        try:
            stored = storage.read_cluster_id(self.data_dir)
            if stored is None:
                stored = state.cluster_id if state is not None else configured
                storage.format_data_dir(self.data_dir, stored)
                self.emit({"event": FORMATTED.name, "cluster_id": stored})
        except storage.FormatError as e:
            raise SystemExit(f"{self.node_id}: {e}") from None
        found = {stored} | ({state.cluster_id} if state is not None else set())
        if found != {configured}:
            self.emit({"event": CLUSTER_ID_MISMATCH.name, "configured": configured,
                       "stored": sorted(found)})
            raise SystemExit(
                f"{self.node_id}: {self.data_dir} was formatted for cluster "
                f"{' and '.join(repr(c) for c in sorted(found))}, but this node is configured "
                f"for cluster {configured!r}; refusing to start (re-format the data dir "
                f"or fix --cluster-id)")

    async def serve(self) -> None:
        self.recover()
        loop = asyncio.get_running_loop()
        host, port = self.options.listen
        server = await asyncio.start_server(self._on_connection, host, port)
        for name, (peer_host, peer_port) in self.options.peers.items():
            if name != self.node_id:
                link = PeerLink(name, peer_host, peer_port, source_host=host)
                link.start()
                self._links[name] = link
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        self._tasks = [
            loop.create_task(self._tick_loop()),
            loop.create_task(self._flush_loop()),
            loop.create_task(self._hw_checkpoint_loop()),
        ]
        self.process_ready()
        try:
            await stop.wait()
        finally:
            await self._shutdown(server)

    async def _shutdown(self, server: asyncio.Server) -> None:
        # A leader hands its epoch over (EndQuorumEpoch) instead of leaving the
        # followers to wait out their fetch timeout.
        self.core.resign()
        self.process_ready()
        await asyncio.sleep(RESIGN_GRACE_S)
        self.flags.stopping = True
        server.close()
        for writer in list(self._connections):
            writer.close()
        for task in self._tasks:
            task.cancel()
        for link in self._links.values():
            await link.close()
        self.log.sync()
        storage.write_high_watermark(self.data_dir, self.core.high_watermark)
        self.log.close()
        self._fsync_pool.shutdown()

    def emit(self, event: dict[str, Any]) -> None:
        emit_event(self.node_id, event)

    # ------------------------------------------------------------ loop tasks

    async def _tick_loop(self) -> None:
        interval = self.options.tick_ms / 1000
        due = time.monotonic() + interval
        while True:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            self._observe_wall_clock()
            self.core.tick()
            self._expire_requests()
            self.process_ready()
            # After a stall, no burst of the missed ticks (nodes/raft/ticker.py).
            now = time.monotonic()
            behind = timers_behind(due, now, interval)
            if behind:
                # The invariants' time limits allow this node's own measured
                # lateness, not a guess at how loaded the machine was.
                self.emit({"event": TICK_LATE.name, "late_ms": round(behind * 1000, 1)})
            due = next_tick_due(due, now, interval)

    def _disk_failed(self, error: OSError) -> NoReturn:
        """Fail-stop on a storage error: the core already believes the write or
        flush happened, and carrying on would serve (and count toward commits) a
        log the disk does not hold. Recovery on restart reads what the disk has."""
        print(f"{self.node_id}: storage failed, stopping", file=sys.stderr)
        print(f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
        os._exit(DISK_FAILED_EXIT)

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._need_flush.wait()
            self._need_flush.clear()
            try:
                await loop.run_in_executor(self._fsync_pool, self.log.sync)
            except OSError as e:
                self._disk_failed(e)
            # Read the durable end now, not what sync returned: a truncation may
            # have run since, and only the current answer is true of the log.
            self.core.flushed(self.log.flushed_end)
            self.process_ready()

    async def _hw_checkpoint_loop(self) -> None:
        # Written inline: it is tiny and not fsynced, and one writer at a time
        # (this loop, then shutdown) keeps the tmp file uncontended.
        while True:
            await asyncio.sleep(HW_CHECKPOINT_INTERVAL_S)
            if self.flags.hw_dirty:
                self.flags.hw_dirty = False
                try:
                    storage.write_high_watermark(self.data_dir, self.core.high_watermark)
                except OSError as e:
                    self._disk_failed(e)

    # ------------------------------------------------------------ core output

    def schedule_ready(self) -> None:
        """Handle the core's output once this burst of input has been read, so
        many requests share one Ready (one write, one fsync)."""
        if not self.flags.ready_scheduled:
            self.flags.ready_scheduled = True
            asyncio.get_running_loop().call_soon(self.process_ready)

    def process_ready(self) -> None:
        self.flags.ready_scheduled = False
        while True:
            ready = self.core.ready()
            if ready.is_empty():
                break
            try:
                self._handle(ready)
            except OSError as e:
                self._disk_failed(e)
        self._fail_pending_if_not_leading()

    def _handle(self, ready: Ready) -> None:
        if ready.quorum_state is not None:
            # Durable before any vote or epoch claim in `messages` leaves us.
            storage.write_quorum_state(self.data_dir, asdict(ready.quorum_state))
        # The lines, in their order, before the entries this ready appends: a
        # node killed between its first append as leader and its role line left
        # that epoch's entries with no line naming their leader (divergence's
        # unknown-epoch on the correct build: a majority killed just then).
        # After the quorum state, which lines may report; a truncate line (and
        # what came before it) before the cut it reports: a node killed between
        # the cut and its line recovered a log shorter than its `flushed` lines
        # said, with no line to say why (divergence's flushed-lost-on-restart on
        # the correct build under stress-ng, 2026-11-27).
        events = ready.events
        if ready.truncate_to is not None:
            for offset in [o for o in self.pending if o >= ready.truncate_to]:
                self._answer_lost(offset)
            cuts = [i for i, e in enumerate(events) if e.get("event") == TRUNCATE.name]
            upto = cuts[-1] + 1 if cuts else 0
            for event in events[:upto]:
                self.emit(event)
            events = events[upto:]
            self.log.truncate(ready.truncate_to)
        for event in events:
            self.emit(event)
        levels = dict(ready.acked)
        # no_ack: answered before the entry is even written (acks.py).
        self._answer_acked(levels, NO_ACK)
        if ready.append:
            self.log.append([LogRecord(e.offset, e.epoch, e.payload) for e in ready.append])
            self._need_flush.set()
            written = time.monotonic()
            for entry in ready.append:
                if (pending := self.pending.get(entry.offset)) is not None:
                    pending.written = written
        self._answer_acked(levels, LEADER_ACK)
        if ready.epoch_cache is not None:
            storage.write_epoch_checkpoint(self.data_dir, ready.epoch_cache)
        # A line is written before any message that follows from it leaves, so
        # a peer's line about that message is later in time: a follower's
        # `flushed` precedes the leader's `hw` that counts it (checkers.counted_copies).
        for msg in ready.messages:
            link = self._links.get(msg["to"]) if msg.get("to") is not None else None
            if link is not None:
                link.send(msg)
        acked = [(entry.offset, age) for entry in ready.committed
                 if (age := self._apply(entry, levels.get(entry.offset) == QUORUM)) is not None]
        if ready.high_watermark is not None:
            self.flags.hw_dirty = True
        if acked:
            # The moment writes are acknowledged, for faults aimed at it
            # (nodes.raft.faults.triggers): the replies are on their sockets already. No
            # copy of a write is older than ours: its age here bounds how long
            # any disk can have had it.
            self.emit({"event": ACK.name, "epoch": self.core.epoch, "first": acked[0][0],
                       "last": acked[-1][0], "writes": len(acked),
                       "age_ms": round(min(age for _, age in acked), 3),
                       "flushed": self.core.flushed_end})

    def _apply(self, entry: Entry, quorum_acked: bool) -> float | None:
        """Apply a committed entry; if that acknowledged a write (an ok reply),
        the ms since we wrote it to our log. Only a request the core reported
        acknowledgeable at quorum is answered here."""
        if entry.offset < self.applied_end:
            return None  # replayed after a restart: already in the state machine
        try:
            command = msgpack.unpackb(entry.payload, raw=False)
        except Exception:
            command = {}
        outcome = self.state_machine.apply(command if isinstance(command, dict) else {})
        self.applied_end = entry.offset + 1
        pending = self.pending.get(entry.offset)
        if pending is None or (pending.epoch == entry.epoch and not quorum_acked):
            return None
        del self.pending[entry.offset]
        if pending.epoch != entry.epoch:
            # Another leader's entry took our offset: ours was truncated.
            pending.connection.reply(pending.request["id"], error_outcome("leader_lost"), False)
            return None
        if pending.request["op"] in READS:
            pending.connection.reply(pending.request["id"],
                                     self.state_machine.query(pending.request), definite=True)
            return None
        if pending.request["op"] in VOTER_CHANGES:
            # An operator's change, answered at commit (KIP-1186); not a client write.
            pending.connection.reply(pending.request["id"],
                                     Outcome(True, {"voters": list(self.core.committed_voters)}),
                                     definite=True)
            return None
        pending.connection.reply(pending.request["id"], outcome, definite=True)
        if not outcome.ok or pending.written is None:
            return None
        return (time.monotonic() - pending.written) * 1000

    def _answer_lost(self, offset: int) -> None:
        pending = self.pending.pop(offset)
        pending.connection.reply(pending.request["id"], error_outcome("leader_lost"), False,
                                 leader=self.core.leader)

    def _fail_pending_if_not_leading(self) -> None:
        if not self.pending:
            return
        leading = self.core.role == LEADER
        for offset in [o for o, p in self.pending.items()
                       if not leading or p.epoch != self.core.epoch]:
            self._answer_lost(offset)

    def _expire_requests(self) -> None:
        now = time.monotonic()
        for offset in [o for o, p in self.pending.items() if p.deadline <= now]:
            pending = self.pending.pop(offset)
            pending.connection.reply(pending.request["id"], error_outcome("timeout"), False)

    # ---------------------------------------------------------------- network

    async def _on_connection(self, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        connection = ClientConnection(writer)
        try:
            while True:
                try:
                    body = await codec.read_frame(reader)
                except codec.FrameError as e:
                    # The stream is out of step: say why, then hang up.
                    connection.reply(None, error_outcome("bad_request"))
                    self._log_problem(f"closing connection: {e}")
                    break
                if body is None:
                    break
                self._on_frame(body, connection)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            connection.open = False
            self._connections.discard(writer)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _on_frame(self, body: bytes, connection: ClientConnection) -> None:
        try:
            msg = codec.decode_body(body)
        except codec.BadMessage:
            connection.reply(None, error_outcome("bad_request"))
            return
        kind = msg.get("kind")
        if kind == "peer":
            self._on_peer_message(msg)
        elif kind == "client":
            self._on_client_request(msg, connection)
        else:
            connection.reply(msg.get("id"), error_outcome("bad_request"))

    def _on_peer_message(self, msg: dict[str, Any]) -> None:
        if self.flags.stopping:
            return
        self._observe_wall_clock()
        try:
            self.core.receive(msg)
        except (MalformedMessage, ValueError):
            # A garbled or hostile "peer" must not take the node down.
            self._log_problem(f"ignored malformed peer message: {traceback.format_exc(1)}")
        self.schedule_ready()

    def _on_client_request(self, request: dict[str, Any], connection: ClientConnection) -> None:
        request_id = request.get("id")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            connection.reply(None, error_outcome("bad_request"))
            return
        cluster_id = request.get("cluster_id")
        if cluster_id is not None and cluster_id != self.options.cluster_id:
            connection.reply(request_id, error_outcome("cluster_id_mismatch"))
            return
        if request.get("op") == "status":
            connection.reply(request_id, Outcome(True, self.status()))
            return
        if request.get("op") == APPLIED_STATE:
            connection.reply(request_id, Outcome(True, self.applied_state()))
            return
        if request.get("op") in VOTER_CHANGES:
            self._on_voter_change(request, connection)
            return
        try:
            command = command_for(request)
            level = consistency_of(request)
        except BadRequest as e:
            connection.reply(request_id, Outcome(False, str(e), "bad_request"))
            return
        if request.get("op") in READS and self._may_read_locally():
            connection.reply(request_id, self.state_machine.query(request), definite=True)
            return
        command["rid"] = f"{self.node_id}-{self.boot}-{next(self.flags.ids)}"
        payload = msgpack.packb(command, use_bin_type=True)
        if len(payload) > MAX_COMMAND_BYTES:
            connection.reply(request_id, Outcome(False, "command too large", "bad_request"))
            return
        try:
            offset = self.core.propose(payload, level, is_blind_write(request))
        except NotLeader as e:
            connection.reply(request_id, error_outcome("not_leader"), leader=e.leader)
            return
        self.pending[offset] = Pending(
            self.core.epoch, request, connection,
            time.monotonic() + self.options.request_timeout_s,
        )
        self.schedule_ready()

    def _on_voter_change(self, request: dict[str, Any], connection: ClientConnection) -> None:
        """An operator's AddRaftVoter / RemoveRaftVoter (KIP-853): answered when
        the VotersRecord commits, or (ack_when_committed false, KIP-1186's
        field, accepted for both) once the leader appended it."""
        request_id = request["id"]
        node = request.get("node")
        if not isinstance(node, str) or not node:
            connection.reply(request_id, Outcome(False, "node must be a name", "bad_request"))
            return
        ack_when_committed = request.get("ack_when_committed", True) is not False
        try:
            if request["op"] == "add_voter":
                offset = self.core.add_voter(node, ack_when_committed)
            else:
                offset = self.core.remove_voter(node)
        except NotLeader as e:
            connection.reply(request_id, error_outcome("not_leader"), leader=e.leader)
            return
        except VoterChangeRefused as refused:
            connection.reply(request_id, error_outcome(refused.code))
            return
        self.pending[offset] = Pending(self.core.epoch, request, connection,
                                       time.monotonic() + self.options.request_timeout_s)
        self.schedule_ready()

    def _observe_wall_clock(self) -> None:
        if self._wall_clock:
            self.core.observe_wall_clock(time.time())

    def _may_read_locally(self) -> bool:
        """wall-clock-lease switch only: a read answered from this leader's
        state machine, with no barrier, while its lease holds and it has
        applied all it committed."""
        if not self._wall_clock:
            return False
        self._observe_wall_clock()
        return self.core.lease_read_ok() and self.applied_end >= self.core.high_watermark

    def _answer_acked(self, levels: dict[int, str], level: str) -> None:
        """Answer ok the requests the core reported acknowledgeable at `level`
        (`none` or `leader`: no result to wait for)."""
        acked = []
        for offset in sorted(o for o, lv in levels.items() if lv == level):
            pending = self.pending.pop(offset, None)
            if pending is not None:
                pending.connection.reply(pending.request["id"], Outcome(True))
                acked.append(offset)
        if acked and level == LEADER_ACK:
            # The same `ack` line a commit gives (nodes.raft.faults.triggers aims power
            # cuts at it): these writes were written just now, unflushed.
            self.emit({"event": ACK.name, "epoch": self.core.epoch, "first": acked[0],
                       "last": acked[-1], "writes": len(acked), "age_ms": 0.0,
                       "flushed": self.core.flushed_end, "level": LEADER_ACK})

    def status(self) -> dict[str, Any]:
        return {
            "node": self.node_id, "role": self.core.role, "epoch": self.core.epoch,
            "leader": self.core.leader, "hw": self.core.high_watermark,
            "log_end": self.core.log_end, "voters": list(self.core.voters),
            "committed_voters": list(self.core.committed_voters),
        }

    def applied_state(self) -> dict[str, Any]:
        """What this node's state machine holds and how far it has applied,
        whatever its role: a harness compares the nodes after a run. Not
        linearizable, and no read barrier: it is this node's own view."""
        return {"node": self.node_id, "applied_end": self.applied_end,
                "kv": [[k, v] for k, v in self.state_machine.kv.items()],
                "logs": [[name, entries] for name, entries in self.state_machine.logs.items()]}

    def _log_problem(self, text: str) -> None:
        print(f"{self.node_id}: {text}", file=sys.stderr, flush=True)


def run(options: NodeOptions) -> None:
    asyncio.run(RaftServer(options).serve())
