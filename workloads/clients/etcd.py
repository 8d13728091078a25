"""The workload client for etcd, over its v3 JSON gateway (one HTTP
connection kept per node, no retries by the HTTP library: every retry is a
decision about the history, made here).

Keys live under the workload's name; what to do follows the workload's data
type (checkers.datatypes). Registers: read -> range (linearizable unless the
client option `serializable_reads` asks for etcd's serializable reads, which a
member answers from its own, possibly stale, state); write -> put; cas -> a
txn comparing the value. Lists: each key's list is a JSON value; a txn reads
every key it touches, then commits its appends in one etcd txn guarded by the
mod_revision of every one of those keys, so it lands only if nothing it read
changed in between. Register txns: the same, with each key's value a JSON
scalar.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError, ReadTimeoutError

from checkers.datatypes import LISTS, REGISTER_TXNS, REGISTERS
from checkers.history import Op
from nodes.etcd.codec import as_int, b64, unb64, workload_key
from workloads.clients.outcome import fail, info, ok
from workloads.registry import get as get_workload

# gRPC codes etcd returns for requests it rejected before proposing them:
# InvalidArgument, NotFound, PermissionDenied, ResourceExhausted ("too many
# requests"), FailedPrecondition, OutOfRange, Unimplemented, Unauthenticated.
DEFINITE_CODES = {3, 5, 7, 8, 9, 11, 12, 16}


class _Unsent(Exception):
    """No connection was made: the request certainly did not reach etcd."""


class _Rejected(Exception):
    """etcd answered with an error; `definite` if it certainly had no effect."""

    def __init__(self, message: str, definite: bool) -> None:
        super().__init__(message)
        self.definite = definite


class _Ambiguous(Exception):
    """Sent, and then no answer (timeout, connection lost)."""


def encode_value(value: Any) -> str:
    return b64(json.dumps(value))


def decode_value(kv: dict[str, Any] | None) -> Any:
    return json.loads(unb64(kv.get("value"))) if kv else None


def first_kv(range_response: dict[str, Any]) -> dict[str, Any] | None:
    kvs = range_response.get("kvs") or []
    return kvs[0] if kvs else None


def rejection(status: int, body: bytes) -> _Rejected:
    """An error answer, judged by its gRPC code where the gateway sent one.
    Without one, a 4xx is the gateway refusing the request, and anything else
    might have been proposed."""
    try:
        doc = json.loads(body)
        code = int(doc.get("code"))
        message = str(doc.get("error") or doc.get("message") or f"http {status}")
    except (ValueError, TypeError, AttributeError):
        return _Rejected(f"http {status}", 400 <= status < 500)
    return _Rejected(message, code in DEFINITE_CODES)


class EtcdClient:
    # The data types (checkers.datatypes) it carries out: every workload of
    # these types is etcd's (faultline.builtin).
    DATA = (REGISTERS, LISTS, REGISTER_TXNS)
    OPTIONS = {"serializable_reads": "bool", "txn_attempts": "positive-int",
               "connect_timeout": "positive-number", "op_timeout": "positive-number"}

    def __init__(self, workload: str, nodes: dict[str, tuple[str, int]],
                 options: dict[str, Any]) -> None:
        self.data = get_workload(workload).DATA
        if self.data not in self.DATA:
            raise ValueError(f"the etcd client has no {workload!r} workload")
        self.workload = workload
        self.nodes = nodes
        self.serializable = bool(options.get("serializable_reads", False))
        self.txn_attempts = max(1, int(options.get("txn_attempts", 3)))
        self._timeout = urllib3.Timeout(connect=float(options.get("connect_timeout", 1.0)),
                                        read=float(options.get("op_timeout", 2.0)))
        self._pools: dict[str, urllib3.HTTPConnectionPool] = {}

    # --- transport ----------------------------------------------------------

    def _pool(self, node: str) -> urllib3.HTTPConnectionPool:
        pool = self._pools.get(node)
        if pool is None:
            host, port = self.nodes[node]
            pool = urllib3.HTTPConnectionPool(host, port, maxsize=1, retries=False,
                                              timeout=self._timeout)
            self._pools[node] = pool
        return pool

    def _post(self, node: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = self._pool(node).request(
                "POST", path, body=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"})
        except ConnectTimeoutError as e:
            # Includes refused connections (NewConnectionError): nothing was sent.
            raise _Unsent(str(e)) from None
        except ReadTimeoutError:
            raise _Ambiguous("timeout") from None
        except HTTPError as e:
            # urllib3 closes the connection on any error, so a late answer to
            # this request can never be read as the next one's.
            raise _Ambiguous(f"connection lost: {e}") from None
        if resp.status != 200:
            raise rejection(resp.status, resp.data)
        try:
            return json.loads(resp.data)
        except ValueError:
            raise _Rejected("undecodable answer", False) from None

    def key(self, op: Op) -> str:
        return self.key_of(op.key)

    def key_of(self, key: Any) -> str:
        """etcd's key for a workload's key, under the workload's name (None: the one register)."""
        return workload_key(self.workload, key)

    # --- requests -----------------------------------------------------------

    def _range(self, key: str) -> dict[str, Any]:
        req: dict[str, Any] = {"key": b64(key)}
        if self.serializable:
            req["serializable"] = True
        return req

    def read(self, node: str, op: Op) -> Any:
        return decode_value(first_kv(self._post(node, "/v3/kv/range", self._range(self.key(op)))))

    def write(self, node: str, op: Op) -> None:
        self._post(node, "/v3/kv/put", {"key": b64(self.key(op)), "value": encode_value(op.value)})

    def cas(self, node: str, op: Op) -> bool:
        old, new = op.value
        key = b64(self.key(op))
        if old is None:
            compare = {"key": key, "target": "VERSION", "result": "EQUAL", "version": "0"}
        else:
            compare = {"key": key, "target": "VALUE", "result": "EQUAL",
                       "value": encode_value(old)}
        resp = self._post(node, "/v3/kv/txn", {
            "compare": [compare],
            "success": [{"request_put": {"key": key, "value": encode_value(new)}}]})
        return bool(resp.get("succeeded"))

    def read_values(self, node: str, keys: list[str]) -> dict[str, tuple[Any, int]]:
        """Each key's value (None: absent) and mod_revision (0: absent), in one snapshot."""
        resp = self._post(node, "/v3/kv/txn", {
            "success": [{"request_range": self._range(k)} for k in keys]})
        out = {}
        for k, r in zip(keys, resp.get("responses") or [], strict=True):
            kv = first_kv(r.get("response_range") or {})
            out[k] = (decode_value(kv), as_int(kv.get("mod_revision")) if kv else 0)
        return out

    def register_txn(self, node: str, op: Op) -> Op:
        """rw-register: a write sets the key's value, a read sees the latest."""
        def step(values: dict[str, Any], mf: str, key: str, mv: Any) -> Any:
            if mf == "w":
                values[key] = mv
                return mv
            return values[key]
        return self.guarded_txn(node, op, "w", step)

    def txn(self, node: str, op: Op) -> Op:
        """list-append: an append extends the key's list, a read sees a copy of it."""
        def step(values: dict[str, Any], mf: str, key: str, mv: Any) -> Any:
            if mf == "append":
                values[key] = [*(values[key] or []), mv]
                return mv
            return list(values[key] or [])
        return self.guarded_txn(node, op, "append", step)

    def guarded_txn(self, node: str, op: Op, write_f: str,
                    step: Callable[[dict[str, Any], str, str, Any], Any]) -> Op:
        """Read every key the txn touches in one snapshot, apply its micro-ops
        locally, then commit the written keys guarded by every read key's
        mod_revision: serializable, and retried while the guard fails."""
        keys = list(dict.fromkeys(self.key_of(k) for _, k, _ in op.value))
        for _ in range(self.txn_attempts):
            try:
                seen = self.read_values(node, keys)
            except (_Unsent, _Rejected, _Ambiguous) as e:
                return fail(op, f"read step: {e}", node)   # nothing was written yet
            values = {k: v for k, (v, _) in seen.items()}
            result, written = [], set()
            for mf, k, mv in op.value:
                key = self.key_of(k)
                result.append([mf, k, step(values, mf, key, mv)])
                if mf == write_f:
                    written.add(key)
            if not written:
                return ok(op, result, node)
            if self.commit_values(node, seen, {k: values[k] for k in written}):
                return ok(op, result, node)
            # A guard failed: nothing was written, so trying again is safe.
        return fail(op, "txn-conflict: keys kept changing", node)

    def commit_values(self, node: str, seen: dict[str, tuple[Any, int]],
                     new: dict[str, Any]) -> bool:
        """Write `new` if no key in `seen` has changed since it was read."""
        resp = self._post(node, "/v3/kv/txn", {
            "compare": [{"key": b64(k), "target": "MOD", "result": "EQUAL",
                         "mod_revision": str(rev)} for k, (_, rev) in seen.items()],
            "success": [{"request_put": {"key": b64(k), "value": encode_value(v)}}
                        for k, v in new.items()]})
        return bool(resp.get("succeeded"))

    # --- outcomes -----------------------------------------------------------

    def invoke(self, op: Op) -> Op:
        node = op.node if op.node in self.nodes else next(iter(self.nodes))
        try:
            if op.f == "read":
                return ok(op, self.read(node, op), node)
            if op.f == "write":
                self.write(node, op)
                return ok(op, op.value, node)
            if op.f == "cas":
                if self.cas(node, op):
                    return ok(op, op.value, node)
                return fail(op, "cas-mismatch", node)
            if op.f == "txn" and self.data == LISTS:
                return self.txn(node, op)
            if op.f == "txn" and self.data == REGISTER_TXNS:
                return self.register_txn(node, op)
        except _Unsent as e:
            return fail(op, f"unsent: {e}", node)
        except (_Rejected, _Ambiguous) as e:
            # A read has no effect, so one that did not answer certainly did not happen.
            if op.f == "read" or (isinstance(e, _Rejected) and e.definite):
                return fail(op, str(e), node)
            return info(op, str(e), node)
        raise ValueError(f"the etcd {self.workload} client cannot do f={op.f!r}")

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
