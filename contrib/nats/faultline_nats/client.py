"""The log client, as a JetStream user writes one: every log is a subject of
one replicated stream; an append is a publish that waits for the stream's
acknowledgement, a read an ephemeral consumer on the log's subject from the
asked-for sequence.

nats-py is asyncio-only; each worker process runs this client's calls on one
event loop of its own, one op at a time, as the harness invokes them."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from faultline import CLIENT_OPTIONS, LOGS, Op, fail, info, ok
from faultline_nats.config import STREAM, SUBJECT_PREFIX, first_seq, offset, replicas, subject

# JetStream's "stream name already in use" (by a stream of another config).
STREAM_NAME_IN_USE = 10058
# Most messages one fetch asks for.
FETCH_BATCH = 1000
# JetStream's "no message found" (no message at that sequence).
NO_MESSAGE_FOUND = 10037
# Message gets a leader read keeps in flight at once.
GET_WINDOW = 64
# Where a read is served: an ephemeral consumer on whichever replica the
# cluster places it ("consumer", what a JetStream user usually writes), or
# message gets, which only the stream's Raft leader answers ("leader"): a
# replica that is behind serves none of them. A leader's store can still be
# short of what was acknowledged (a deposed leader cut off, one just elected:
# contrib/nats/README.md), so a loss is what the final reads lack.
READS = ("consumer", "leader")


class Unsent(Exception):
    """Nothing reached a server: the op certainly did not happen."""


def stream_config(cluster_size: int) -> api.StreamConfig:
    """A file-backed stream replicated on every node (up to JetStream's 5)."""
    return api.StreamConfig(name=STREAM, subjects=[SUBJECT_PREFIX + ">"],
                            storage=api.StorageType.FILE,
                            num_replicas=replicas(cluster_size))


def read_window(from_offset: int, count: int, pending: int) -> tuple[int, int]:
    """The stream sequence a read of `count` entries from `from_offset` starts at,
    and how many messages it takes, given how many of the log's messages the
    stream holds from there (pure: a short read reached the log's end)."""
    return first_seq(from_offset), max(0, min(count, pending))


def placed_on(consumer: api.ConsumerInfo, nodes: dict[str, Any]) -> str | None:
    """The node an R1 consumer lives on, if its info names one of ours (pure)."""
    cluster = consumer.cluster
    leader = cluster.leader if cluster is not None else None
    return leader if leader in nodes else None


def decode(payload: bytes) -> int:
    return int(payload.decode())


class NatsClient:
    # appends and range reads of named logs: the log workload.
    DATA = (LOGS,)
    OPTIONS = {**CLIENT_OPTIONS, "reads": "one-of:" + "|".join(READS)}

    def __init__(self, workload: str, nodes: dict[str, tuple[str, int]],
                 options: dict[str, Any]) -> None:
        self.workload = workload
        self.nodes = nodes
        self.timeout = float(options.get("op_timeout", 1.0))
        self.connect_timeout = float(options.get("connect_timeout", 0.5))
        self.reads = str(options.get("reads", READS[0]))
        if self.reads not in READS:
            raise ValueError(f"reads= must be one of {', '.join(READS)}, not {self.reads!r}")
        self.loop = asyncio.new_event_loop()
        self._conns: dict[str, nats.NATS] = {}
        # Each worker tries to make the stream once, at its first op (before
        # any fault), never again, whatever came of it: a stream that vanishes
        # (a power cut) must show as lost, not come back empty under its name.
        self._stream_tried = False

    def invoke(self, op: Op) -> Op:
        node = op.node if op.node in self.nodes else next(iter(self.nodes))
        return self.loop.run_until_complete(self._invoke(op, node))

    async def _conn(self, node: str) -> nats.NATS:
        conn = self._conns.get(node)
        if conn is not None and conn.is_connected:
            return conn
        if conn is not None:
            await self._drop(node)
        host, port = self.nodes[node]

        async def quiet(_e: Exception) -> None:
            """Connection errors surface on the op that meets them."""

        try:
            conn = await nats.connect(f"nats://{host}:{port}",
                                      connect_timeout=self.connect_timeout,
                                      allow_reconnect=False, max_reconnect_attempts=0,
                                      error_cb=quiet)
        except (TimeoutError, OSError, nats.errors.Error) as e:
            raise Unsent(f"connect: {e!r}") from None
        self._conns[node] = conn
        return conn

    async def _drop(self, node: str) -> None:
        conn = self._conns.pop(node, None)
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), self.timeout)
            except (TimeoutError, nats.errors.Error, OSError):
                pass

    async def _invoke(self, op: Op, node: str) -> Op:
        try:
            js = (await self._conn(node)).jetstream(timeout=self.timeout)
            if op.f == "append":
                return await self._append(js, op, node)
            if op.f == "read" and self.reads == "leader":
                return await self._read_at_leader(js, op, node)
            if op.f == "read":
                return await self._read(js, op, node)
        except Unsent as e:
            return fail(op, str(e), node)
        except (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError):
            # No server took the request: nothing listened on the subject (no
            # such stream, or its interest not yet known on this server).
            return fail(op, "no responders", node)
        except (TimeoutError, nats.errors.Error, OSError) as e:
            await self._drop(node)
            # A read has no effect; a publish that got no answer may be stored.
            if op.f == "read":
                return fail(op, f"{type(e).__name__}: {e}", node)
            return info(op, f"{type(e).__name__}: {e}", node)
        raise ValueError(f"the nats {self.workload} client cannot do f={op.f!r}")

    async def _ensure_stream(self, js: Any) -> None:
        if self._stream_tried:
            return
        self._stream_tried = True
        try:
            await js.add_stream(stream_config(len(self.nodes)))
        except nats.js.errors.APIError as e:
            if e.err_code != STREAM_NAME_IN_USE:
                raise Unsent(f"add stream: {e}") from None
        except (TimeoutError, nats.errors.Error) as e:
            raise Unsent(f"add stream: {e!r}") from None

    async def _append(self, js: Any, op: Op, node: str) -> Op:
        log, value = op.value
        await self._ensure_stream(js)
        try:
            ack = await js.publish(subject(log), str(value).encode(), timeout=self.timeout,
                                   stream=STREAM)
        except nats.js.errors.APIError as e:
            # The stream answered with an error: whether the message was
            # stored is not something every JetStream error rules out.
            return info(op, f"api error: {e}", node)
        return ok(op, [log, value, offset(ack.seq)], node)

    async def _read(self, js: Any, op: Op, node: str) -> Op:
        log, from_offset, count = op.value
        await self._ensure_stream(js)
        config = api.ConsumerConfig(deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                                    opt_start_seq=first_seq(from_offset),
                                    ack_policy=api.AckPolicy.NONE, mem_storage=True,
                                    num_replicas=1,
                                    inactive_threshold=max(5.0, 2 * self.timeout))
        try:
            sub = await js.pull_subscribe(subject(log), stream=STREAM, config=config)
        except nats.js.errors.NotFoundError:
            # The cluster knows no such stream: the log is empty, whether the
            # stream was never made or was lost.
            return ok(op, [log, from_offset, []], node)
        except nats.js.errors.APIError as e:
            return fail(op, f"consumer: {e}", node)
        try:
            # The log's messages from the start sequence on, when the consumer
            # was made: the read's snapshot of the log, from the store of the
            # replica the consumer was placed on (recorded as the op's node).
            consumer = await sub.consumer_info()
            served = placed_on(consumer, self.nodes) or node
            _, want = read_window(from_offset, count, consumer.num_pending)
            entries: list[list[int]] = []
            while len(entries) < want:
                batch = await sub.fetch(batch=min(FETCH_BATCH, want - len(entries)),
                                        timeout=self.timeout)
                entries += [[offset(m.metadata.sequence.stream), decode(m.data)]
                            for m in batch[:want - len(entries)]]
        finally:
            await sub.unsubscribe()
        return ok(op, [log, from_offset, entries], served)

    async def _read_at_leader(self, js: Any, op: Op, node: str) -> Op:
        """The log's messages from the asked-for offset up to the stream's last
        sequence as its leader reports it, by message gets of each sequence,
        GET_WINDOW at a time (STREAM.INFO and STREAM.MSG.GET are answered by
        the stream's leader only; 2.9 has no batched get). Recorded as served
        by the leader the info names."""
        log, from_offset, count = op.value
        await self._ensure_stream(js)
        try:
            stream = await js.stream_info(STREAM)
        except nats.js.errors.NotFoundError:
            return ok(op, [log, from_offset, []], node)
        except nats.js.errors.APIError as e:
            return fail(op, f"stream info: {e}", node)
        last = stream.state.last_seq
        leader = stream.cluster.leader if stream.cluster is not None else None
        served = leader if leader in self.nodes else node
        wanted = subject(log)
        entries: list[list[int]] = []
        seq, _ = read_window(from_offset, count, 0)
        try:
            while len(entries) < count and seq <= last:
                window = range(seq, min(last, seq + GET_WINDOW - 1) + 1)
                got = await asyncio.gather(*(self._get(js, s) for s in window))
                entries += [[offset(m.seq), decode(m.data or b"")] for m in got
                            if m is not None and m.subject == wanted][:count - len(entries)]
                seq = window.stop
        except nats.js.errors.APIError as e:
            return fail(op, f"get: {e}", served)
        return ok(op, [log, from_offset, entries], served)

    @staticmethod
    async def _get(js: Any, seq: int) -> api.RawStreamMsg | None:
        """One message by its stream sequence; None if the stream has none there."""
        try:
            return await js.get_msg(STREAM, seq=seq)
        except nats.js.errors.NotFoundError as e:
            if e.err_code == NO_MESSAGE_FOUND:
                return None
            raise

    def close(self) -> None:
        for node in list(self._conns):
            self.loop.run_until_complete(self._drop(node))
        self.loop.close()
