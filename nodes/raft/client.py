"""A small synchronous client for the raft node protocol (docs/contracts.md).

Used by tests, benchmarks, workloads and the DB adapter. One `NodeClient`
talks to one node over one TCP connection, one request at a time; a
`ClusterClient` follows `not_leader` hints across nodes.

Transport failures are raised, never turned into responses, because only the
caller knows how to record them: `NotSent` means the request certainly never
left this process (definite), any other `OSError` means it may have been
applied (indeterminate).
"""

from __future__ import annotations

import itertools
import socket
import time
from dataclasses import dataclass
from typing import Any

from nodes.raft import codec
from nodes.raft.requests import APPLIED_STATE


class NotSent(ConnectionError):
    """Could not connect: the request was not sent."""


@dataclass(frozen=True)
class Response:
    ok: bool
    value: Any = None
    error: str | None = None
    definite: bool = True
    leader: str | None = None

    @classmethod
    def from_map(cls, m: dict[str, Any]) -> Response:
        return cls(
            bool(m.get("ok")), m.get("value"), m.get("error"), bool(m.get("definite", False)),
            m.get("leader"),
        )


def parse_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


class NodeClient:
    def __init__(self, address: str, timeout: float = 5.0, cluster_id: str | None = None) -> None:
        self.address = address
        self.timeout = timeout
        self.cluster_id = cluster_id
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)

    def _connect(self) -> socket.socket:
        if self._sock is None:
            try:
                sock = socket.create_connection(parse_address(self.address), self.timeout)
            except OSError as e:
                raise NotSent(f"{self.address}: {e}") from e
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        return self._sock

    def call(self, op: str, **fields: Any) -> Response:
        """Send one request and wait for its response (at most `timeout` seconds)."""
        request_id = next(self._ids)
        request = {"kind": "client", "id": request_id, "op": op, **fields}
        if self.cluster_id is not None:
            request["cluster_id"] = self.cluster_id
        sock = self._connect()
        try:
            codec.send_frame(sock, request)
            while True:
                reply = codec.recv_frame(sock)
                # An answer to an earlier, abandoned request cannot arrive: the
                # connection is dropped whenever a call fails. Still, match ids.
                if reply.get("id") == request_id:
                    return Response.from_map(reply)
        except (OSError, codec.FrameError, codec.BadMessage):
            self.close()
            raise

    def get(self, key: str) -> Response:
        return self.call("get", key=key)

    def put(self, key: str, value: Any) -> Response:
        return self.call("put", key=key, value=value)

    def cas(self, key: str, expect: Any, value: Any) -> Response:
        return self.call("cas", key=key, expect=expect, value=value)

    def txn(self, ops: list[list[Any]]) -> Response:
        return self.call("txn", ops=ops)

    def append(self, log: str, value: Any) -> Response:
        return self.call("append", log=log, value=value)

    def read(self, log: str, start: int, count: int) -> Response:
        return self.call("read", log=log, count=count, **{"from": start})

    def status(self) -> Response:
        """{"node", "role", "epoch", "leader", "hw", "log_end"}; not linearizable."""
        return self.call("status")

    def applied_state(self) -> Response:
        """{"node", "applied_end", "kv": [[key, value]...], "logs": [[name, values]...]}:
        this node's own state machine, not linearizable."""
        return self.call(APPLIED_STATE)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> NodeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ClusterClient:
    """Sends each request to the node believed to lead, following hints.

    Only definite refusals (`not_leader`, `NotSent`) are retried elsewhere;
    anything indeterminate goes back to the caller.
    """

    def __init__(self, addresses: dict[str, str], timeout: float = 5.0, attempts: int = 10):
        self.clients = {name: NodeClient(addr, timeout) for name, addr in addresses.items()}
        self.attempts = attempts
        self.target = next(iter(self.clients))

    def call(self, op: str, **fields: Any) -> Response:
        names = list(self.clients)
        response = Response(False, error="unavailable")
        for attempt in range(self.attempts):
            try:
                response = self.clients[self.target].call(op, **fields)
            except NotSent:
                self.target = names[(names.index(self.target) + 1) % len(names)]
                continue
            except OSError:
                # Indeterminate: the caller decides; the next call tries elsewhere.
                self.target = names[(names.index(self.target) + 1) % len(names)]
                raise
            if response.error != "not_leader":
                return response
            if response.leader in self.clients and response.leader != self.target:
                self.target = response.leader
            else:
                self.target = names[(names.index(self.target) + 1) % len(names)]
                if attempt >= len(names):
                    # nobody knows a leader yet (election running): wait a little
                    time.sleep(0.05)
        return response

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
