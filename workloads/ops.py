"""What a generator yields: an operation to invoke, before it has a process or time."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class OpSpec:
    f: str
    value: Any = None
    key: Any = None
    # The node to send it to; None: the client pool chooses (--node-choice).
    node: str | None = None
    # The workload that issued it when a run composes several
    # (workloads.companion); None: the run's main workload.
    workload: str | None = None


@dataclass(frozen=True)
class OpShape:
    """One kind of op a workload issues, as the history records it (docs/contracts.md)."""

    f: str
    invoke: str    # the invoke op's value
    ok: str        # an ok completion's value


# register and kv: one register per key.
REGISTER_OPS = (OpShape("read", "`None`", "the value read (`None`: never written)"),
                OpShape("write", "v", "v"),
                OpShape("cas", "`[old, new]`", "`[old, new]`"))


class UniqueValues:
    """Integers never handed out twice in a run, so a read names its writer."""

    def __init__(self) -> None:
        self._next = 1

    def take(self) -> int:
        v = self._next
        self._next += 1
        return v


# Share of list-append and rw-register ops that are one read of one key.
SINGLE_KEY_READS = 0.2
# Share of register and kv ops aimed at a key nobody writes (`absent_key_probe`).
ABSENT_KEY_OPS = 0.05


def absent_key(key: Any) -> str:
    """The key that stands beside `key` and that no write of the run names."""
    return f"{key}-absent"


def absent_key_probe(rng: random.Random, values: UniqueValues, key: Any,
                     cas: bool = True) -> OpSpec:
    """A read or a cas of the key beside `key` that nobody writes: every store
    has keys that were never written, and its lookups there take a path of
    their own (a missing entry, a default value). The read must find nothing;
    the cas expects a value no op wrote, so it must fail, and while it does the
    key stays absent for the next probe. `cas` false: reads only."""
    if not cas or rng.random() < 0.5:
        return OpSpec("read", None, absent_key(key))
    return OpSpec("cas", [values.take(), values.take()], absent_key(key))


def rotating_txns(rng: random.Random, active_keys: int, writes_per_key: int,
                  write_f: str, single_key_reads: float = 0.0) -> Iterator[OpSpec]:
    """Elle's transactions: 1-4 micro-ops, half reads (`r`) and half writes
    (`write_f`) of unique values, over `active_keys` keys at a time; a key that
    took `writes_per_key` writes is retired for a fresh one, so every key's
    versions stay few and close to the reads that order them. A share
    `single_key_reads` of the ops is one read of one active key: a bug on a
    store's read path leaves its marks there, not in transactions that go
    through the log."""
    values = UniqueValues()
    keys = list(range(active_keys))
    next_key = active_keys
    writes: dict[int, int] = {k: 0 for k in keys}
    while True:
        if single_key_reads and rng.random() < single_key_reads:
            yield OpSpec("txn", [["r", rng.choice(keys), None]])
            continue
        txn: list[list[Any]] = []
        for _ in range(rng.randint(1, 4)):
            k = rng.choice(keys)
            if rng.random() < 0.5:
                txn.append(["r", k, None])
            else:
                txn.append([write_f, k, values.take()])
                writes[k] += 1
                if writes[k] >= writes_per_key:
                    keys.remove(k)
                    keys.append(next_key)
                    writes[next_key] = 0
                    next_key += 1
        yield OpSpec("txn", txn)


def on_every_node(reads: list[OpSpec], nodes: list[str]) -> list[OpSpec]:
    """Each read once per node: a node that serves stale or lost state shows
    even when the others would answer right."""
    return [replace(r, node=n) for n in nodes for r in reads]


def final_txn_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """Read every key the run's transactions touched, a few keys per transaction."""
    keys = sorted({k for op in issued for _, k, _ in op.value})
    return [OpSpec("txn", [["r", k, None] for k in keys[i:i + 4]])
            for i in range(0, len(keys), 4)]
