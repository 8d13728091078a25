"""The workload client for our raft store (client protocol in docs/contracts.md)."""

from __future__ import annotations

import socket
import zlib
from typing import Any

from checkers.datatypes import ALL, LOGS, REGISTER_TXNS, is_single_key_read
from checkers.history import Op
from nodes.raft.codec import BadMessage, FrameError, encode_frame, recv_frame
from nodes.raft.requests import CONSISTENCY_LEVELS, is_blind_write, store_key
from workloads.clients.outcome import CLIENT_OPTIONS, fail, info, ok
from workloads.registry import get as get_workload


class _Unsent(Exception):
    """The request never fully left: it certainly did not take effect."""


def parse_levels(spec: str) -> tuple[str, ...]:
    """`quorum`, `leader`, `none`, or several comma-separated (a run mixing them)."""
    levels = tuple(x.strip() for x in spec.split(",") if x.strip())
    bad = [x for x in levels if x not in CONSISTENCY_LEVELS]
    if not levels or bad:
        raise ValueError(f"consistency must be one or more of {', '.join(CONSISTENCY_LEVELS)} "
                         f"(comma-separated), not {spec!r}")
    return levels


class RaftClient:
    # The node serves every data type (checkers.datatypes), so every workload.
    DATA = ALL
    # consistency: the ack level of blind writes (put, append, txns of writes);
    # several levels are spread over the writes by their value.
    OPTIONS = CLIENT_OPTIONS | {"consistency": "string"}

    def __init__(self, workload: str, nodes: dict[str, tuple[str, int]],
                 options: dict[str, Any]) -> None:
        self.workload = workload
        self.data = get_workload(workload).DATA
        self.nodes = nodes
        self.timeout = float(options.get("op_timeout", 2.0))
        self.connect_timeout = float(options.get("connect_timeout", 1.0))
        self._conns: dict[str, socket.socket] = {}
        self._next_id = 1
        # The leader the last not_leader answer named: asked first next time, as
        # a client library that follows redirects would, unless told to stay put.
        self.follow_leader = bool(options.get("follow_leader", True))
        self._leader: str | None = None
        spec = options.get("consistency")
        self.levels = parse_levels(str(spec)) if spec is not None else None

    # --- requests and completions -------------------------------------------

    def request(self, op: Op) -> dict[str, Any]:
        f, v = op.f, op.value
        # A keyless register is the node's key named after the workload.
        key = store_key(self.workload, op.key)
        if self.data == LOGS:
            if f == "append":
                return {"op": "append", "log": v[0], "value": v[1]}
            if f == "read":
                return {"op": "read", "log": v[0], "from": v[1], "count": v[2]}
        elif f == "read":
            return {"op": "get", "key": key}
        elif f == "write":
            return {"op": "put", "key": key, "value": v}
        elif f == "cas":
            return {"op": "cas", "key": key, "expect": v[0], "value": v[1]}
        elif f == "txn" and is_single_key_read(v):
            # One read of one key: the node's linearizable get (its read path,
            # a barrier through the log), not a transaction applied in order.
            return {"op": "get", "key": str(v[0][1])}
        elif f == "txn":
            # The node keys its lists by string; the history keeps the workload's keys.
            # A register read is the node's "get" (nil when unset), a list read its "r".
            reads = "get" if self.data == REGISTER_TXNS else "r"
            return {"op": "txn", "ops": [[reads if mf == "r" else mf,
                                          store_key(self.workload, k), mv] for mf, k, mv in v]}
        raise ValueError(f"{self.workload} client cannot do f={f!r}")

    def ok_value(self, op: Op, resp: dict[str, Any]) -> Any:
        if self.data == LOGS:
            if op.f == "append":
                return [op.value[0], op.value[1], resp.get("value")]
            return [op.value[0], op.value[1], resp.get("value")]
        if op.f == "read":
            return resp.get("value")
        if op.f == "txn" and is_single_key_read(op.value):
            value = resp.get("value")
            # An absent list reads as the empty one, as the txn's "r" says.
            return [["r", op.value[0][1], [] if value is None and self.data != REGISTER_TXNS
                     else value]]
        if op.f == "txn":
            done = resp.get("value") or []
            return [[mf, k, done[i][2] if mf == "r" else mv]
                    for i, (mf, k, mv) in enumerate(op.value)]
        return op.value

    # --- transport ----------------------------------------------------------

    def _conn(self, node: str) -> socket.socket:
        s = self._conns.get(node)
        if s is None:
            try:
                s = socket.create_connection(self.nodes[node], timeout=self.connect_timeout)
            except OSError as e:
                raise _Unsent(f"connect: {e.strerror or e}") from None
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conns[node] = s
        return s

    def _drop(self, node: str) -> None:
        s = self._conns.pop(node, None)
        if s is not None:
            s.close()

    def _call(self, node: str, req: dict[str, Any]) -> dict[str, Any]:
        """The response to `req`; raises _Unsent (definite) or OSError (unknown)."""
        rid = self._next_id
        self._next_id += 1
        frame = encode_frame({"kind": "client", "id": rid, **req})
        s = self._conn(node)
        try:
            s.settimeout(self.timeout)
            s.sendall(frame)
        except OSError as e:
            # sendall raising means the whole frame did not reach the kernel, so
            # the node cannot have decoded it.
            self._drop(node)
            raise _Unsent(f"send: {e.strerror or e}") from None
        try:
            while True:
                resp = recv_frame(s)
                if resp.get("id") == rid:
                    return resp
        except (OSError, FrameError, BadMessage):
            # A late answer to this request could still arrive on this
            # connection and be mistaken for the next one's: drop it.
            self._drop(node)
            raise

    def level_for(self, op: Op, req: dict[str, Any]) -> str | None:
        """The level this write asks for (None: the option is not set, or not
        a blind write). Chosen by the written value, so a replay asks alike."""
        if self.levels is None or not is_blind_write(req):
            return None
        if len(self.levels) == 1:
            return self.levels[0]
        return self.levels[zlib.crc32(repr(op.value).encode()) % len(self.levels)]

    def invoke(self, op: Op) -> Op:
        req = self.request(op)
        level = self.level_for(op, req)
        if level is None:
            return self._invoke(op, req)
        done = self._invoke(op, req | {"consistency": level})
        # What the ack promised, for the checkers (checkers.acks).
        done.level = level
        return done

    def _invoke(self, op: Op, req: dict[str, Any]) -> Op:
        node = op.node if op.node in self.nodes else next(iter(self.nodes))
        if self.follow_leader and self._leader is not None:
            node = self._leader
        for _ in range(2):
            try:
                resp = self._call(node, req)
            except _Unsent as e:
                self._forget_leader(node)
                return fail(op, f"unsent: {e}", node)
            except TimeoutError:
                self._forget_leader(node)
                return info(op, "timeout", node)
            except (OSError, FrameError, BadMessage) as e:
                self._forget_leader(node)
                return info(op, f"connection lost: {e}", node)
            if resp.get("ok"):
                return ok(op, self.ok_value(op, resp), node)
            error = str(resp.get("error") or "unknown-error")
            hint = resp.get("leader")
            # not_leader is definite, so trying the leader it names is safe.
            if error == "not_leader" and hint in self.nodes and hint != node:
                node = self._leader = hint
                continue
            if error == "not_leader":
                self._leader = None
            return (fail if resp.get("definite") else info)(op, error, node)
        return fail(op, "not_leader", node)

    def _forget_leader(self, node: str) -> None:
        """A leader that stops answering may be dead or cut off: go back to the
        node the harness chose, which will name the new leader."""
        if self._leader == node:
            self._leader = None

    def close(self) -> None:
        for node in list(self._conns):
            self._drop(node)
