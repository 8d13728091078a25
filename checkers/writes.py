"""What a history wrote: one record per written (key, value), with how its op
ended. Shared by the checkers that judge where written values went
(durability, node-state), so they agree on what counts as a write and on
which acks may be lost without a bug.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from checkers.acks import relaxed
from checkers.datatypes import LISTS, LOGS, REGISTER_TXNS, REGISTERS
from checkers.history import Op, client_ops

# The mop a txn writes with, per data type whose writes are txn mops.
_TXN_WRITE = {LISTS: "append", REGISTER_TXNS: "w"}


@dataclass(frozen=True, slots=True)
class Write:
    key: Any                 # as the history names it
    value: Any
    status: str              # ok, fail (not applied) or info (maybe applied)
    invoke: Op
    completion: Op | None    # None: the op never completed
    level: str | None = None  # an ack below quorum (its status is then info)

    @property
    def invoked(self) -> int:
        return self.invoke.time

    @property
    def index(self) -> int:
        """The invoke's index in the history."""
        return self.invoke.index

    @property
    def acked(self) -> int | None:
        """History time of its ok completion; None unless it is ok."""
        return self.completion.time if self.status == "ok" and self.completion else None


def writes_of(pairs: Iterable[tuple[Op, Op | None]], data: str) -> list[Write]:
    """Every write of these (invoke, completion) pairs (`checkers.history.pair_ops`
    of the client ops): an ack below quorum counts as indeterminate
    (`checkers.acks`), as does an op that never completed."""
    out = []
    for inv, done in pairs:
        status = done.type if done is not None else "info"
        level = None
        if done is not None and relaxed(done):
            status, level = "info", done.level
        for key, value in written(inv, data):
            out.append(Write(key, value, status, inv, done, level))
    return out


def written(inv: Op, data: str) -> Iterator[tuple[Any, Any]]:
    """The (key, value) pairs an invoke of this data type writes."""
    v = inv.value
    if data == REGISTERS:
        if inv.f == "write":
            yield inv.key, v
        elif inv.f == "cas" and _pair(v):
            yield inv.key, v[1]
    elif data in _TXN_WRITE and inv.f == "txn" and isinstance(v, list):
        for mop in v:
            if isinstance(mop, list | tuple) and len(mop) == 3 and mop[0] == _TXN_WRITE[data]:
                yield mop[1], mop[2]
    elif data == LOGS and inv.f == "append" and _pair(v):
        yield v[0], v[1]


def _pair(v: Any) -> bool:
    return isinstance(v, list | tuple) and len(v) >= 2


def norm_key(key: Any) -> str | None:
    """A key as a node's state or log names it: by string (None: the one
    keyless register, whose name in the store is the system's own)."""
    return None if key is None else str(key)


def keys_named(op: Op) -> set[str | None]:
    """The keys an op names (`norm_key`): a transaction's micro-ops' keys,
    else the op's own key."""
    if op.f == "txn" and isinstance(op.value, list):
        return {norm_key(m[1]) for m in op.value if isinstance(m, list | tuple) and len(m) == 3}
    return {norm_key(op.key)}


def owners(ops: Iterable[Op], main: str) -> dict[str | None, str]:
    """Pure: key (`norm_key`) -> the workload whose ops name it, from each
    op's `workload` tag (an untagged op is the main workload's, as every op
    of a run made before runs composed workloads). A key named by several is
    the main workload's if it names it, else the first's."""
    out: dict[str | None, str] = {}
    for op in client_ops(ops):
        workload = op.workload or main
        for k in keys_named(op):
            if out.get(k) != main:
                out[k] = main if workload == main else out.get(k, workload)
    return out
