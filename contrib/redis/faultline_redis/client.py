"""The register and kv client, as a Redis user writes one: ask a Sentinel (the
one on the node the op was routed to) which node is primary, then send the
command there. A Sentinel cut off with an old primary still names it."""

from __future__ import annotations

from typing import Any

import redis

from faultline import CLIENT_OPTIONS, REGISTERS, Op, fail, info, ok
from faultline_redis.config import MASTER_NAME
from faultline_redis.connect import connect

# Compare-and-set in one atomic script: Redis has no cas command.
CAS = ("local v = redis.call('GET', KEYS[1]) "
       "if v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0")


class RedisClient:
    # read / write / cas on keys: every workload of that type (register, kv).
    DATA = (REGISTERS,)
    OPTIONS = CLIENT_OPTIONS

    def __init__(self, workload: str, nodes: dict[str, tuple[str, int]],
                 options: dict[str, Any]) -> None:
        self.workload = workload
        self.nodes = nodes
        self.by_address = {(h, p): name for name, (h, p) in nodes.items()}
        self.timeout = float(options.get("op_timeout", 1.0))
        self.connect_timeout = float(options.get("connect_timeout", 0.5))
        self._conns: dict[tuple[str, int], redis.Redis] = {}

    def _conn(self, host: str, port: int) -> redis.Redis:
        if (host, port) not in self._conns:
            self._conns[(host, port)] = connect(host, port, self.timeout, self.connect_timeout)
        return self._conns[(host, port)]

    def primary(self, node: str) -> tuple[str, int] | None:
        host, port = self.nodes[node]
        answer = self._conn(host, port + 1).execute_command(
            "SENTINEL", "get-master-addr-by-name", MASTER_NAME)
        if not answer:
            return None
        h, p = (x.decode() if isinstance(x, bytes) else str(x) for x in answer)
        return h, int(p)

    def key(self, op: Op) -> str:
        # A keyless register is named after its workload, as on the other systems.
        return f"{self.workload}/{op.key if op.key is not None else self.workload}"

    def invoke(self, op: Op) -> Op:
        node = op.node if op.node in self.nodes else next(iter(self.nodes))
        try:
            address = self.primary(node)
        except redis.RedisError as e:
            return fail(op, f"sentinel: {e}", node)      # nothing reached a server
        if address is None:
            return fail(op, "sentinel knows no primary", node)
        served = self.by_address.get(address, f"{address[0]}:{address[1]}")
        conn = self._conn(*address)
        try:
            if op.f == "read":
                raw = conn.get(self.key(op))
                return ok(op, None if raw is None else int(raw), served)
            if op.f == "write":
                conn.set(self.key(op), op.value)
                return ok(op, op.value, served)
            if op.f == "cas":
                old, new = op.value
                if conn.eval(CAS, 1, self.key(op), str(old), str(new)) == 1:
                    return ok(op, op.value, served)
                return fail(op, "cas-mismatch", served)
        except redis.ResponseError as e:
            # The server answered with a refusal (READONLY: it is a replica now).
            return fail(op, str(e).split("\n")[0], served)
        except redis.RedisError as e:
            # A read has no effect; a write that got no answer may have happened.
            if op.f == "read":
                return fail(op, str(e), served)
            return info(op, str(e), served)
        raise ValueError(f"the redis {self.workload} client cannot do f={op.f!r}")

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
