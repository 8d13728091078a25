"""Client requests: check their shape and turn them into log commands.

Everything a client sends is untrusted; anything malformed becomes BadRequest
(answered `bad_request`, definite) before it can reach the log.
"""

from __future__ import annotations

from typing import Any

from nodes.raft.state_machine import TXN_MICRO_OPS

MAX_COMMAND_BYTES = 1024 * 1024  # leaves room for many entries in one 4 MiB fetch frame
MAX_READ_COUNT = 10_000
MAX_TXN_OPS = 1_000

READS = ("get", "read")  # answered from the state machine after a read barrier commits
WRITES = ("put", "cas", "txn", "append")
# Consistency levels of the Redpanda raft recovery RFC: ack once a majority
# flushed the entry (quorum_ack), once the leader appended it (leader_ack),
# or at once (no_ack). Only writes whose answer needs no state may use the
# last two: a cas or a read has no result before its entry is applied.
QUORUM, LEADER_ACK, NO_ACK = "quorum", "leader", "none"
CONSISTENCY_LEVELS = (QUORUM, LEADER_ACK, NO_ACK)
BLIND_TXN_OPS = ("append", "w")


# An operator's request, answered by any node from its own state machine
# without a read barrier: its applied state and how far it applied.
APPLIED_STATE = "applied_state"


def store_key(workload: str, key: Any) -> str:
    """The node's key for a workload's key: a keyless register is the key
    named after the workload; the node keys everything by string."""
    return workload if key is None else str(key)


class BadRequest(Exception):
    pass


def _require(request: dict[str, Any], name: str, kind: type) -> Any:
    if name not in request:
        raise BadRequest(f"missing field {name!r}")
    value = request[name]
    # bool is an int subclass in Python; an offset of True is still a bad request
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest(f"field {name!r} has the wrong type")
    return value


def _check_txn_ops(ops: list[Any]) -> None:
    if len(ops) > MAX_TXN_OPS:
        raise BadRequest("too many micro-ops")
    for op in ops:
        if not isinstance(op, list) or len(op) != 3 or not isinstance(op[1], str):
            raise BadRequest("a micro-op is [f, key, value] with a str key")
        if op[0] not in TXN_MICRO_OPS:
            raise BadRequest(f"unknown micro-op {op[0]!r}")


def is_blind_write(request: dict[str, Any]) -> bool:
    """A write whose answer is known before it applies (put, append, a txn of them)."""
    op = request.get("op")
    if op in ("put", "append"):
        return True
    ops = request.get("ops")
    return op == "txn" and isinstance(ops, list) and all(
        isinstance(mop, list) and mop and mop[0] in BLIND_TXN_OPS for mop in ops)


def consistency_of(request: dict[str, Any]) -> str:
    """The request's consistency level (default quorum), or BadRequest."""
    level = request.get("consistency", QUORUM)
    if level not in CONSISTENCY_LEVELS:
        raise BadRequest(f"consistency must be one of {', '.join(CONSISTENCY_LEVELS)}")
    if level != QUORUM and not is_blind_write(request):
        raise BadRequest(f"only put, append and txns of writes may be acked at {level}")
    return level


def command_for(request: dict[str, Any]) -> dict[str, Any]:
    """The command to append to the log for this request (without "rid")."""
    op = request.get("op")
    if op == "get":
        _require(request, "key", str)
        return {"op": "read_barrier"}
    if op == "read":
        _require(request, "log", str)
        if _require(request, "from", int) < 0:
            raise BadRequest("from must be >= 0")
        if not 0 <= _require(request, "count", int) <= MAX_READ_COUNT:
            raise BadRequest(f"count must be in 0..{MAX_READ_COUNT}")
        return {"op": "read_barrier"}
    if op == "put":
        _require(request, "value", object)
        return {"op": "put", "key": _require(request, "key", str), "value": request["value"]}
    if op == "cas":
        _require(request, "expect", object)
        _require(request, "value", object)
        return {
            "op": "cas",
            "key": _require(request, "key", str),
            "expect": request["expect"],
            "value": request["value"],
        }
    if op == "txn":
        ops = _require(request, "ops", list)
        _check_txn_ops(ops)
        return {"op": "txn", "ops": ops}
    if op == "append":
        _require(request, "value", object)
        return {"op": "append", "log": _require(request, "log", str), "value": request["value"]}
    raise BadRequest(f"unknown op {op!r}")
