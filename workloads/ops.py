"""What a generator yields: an operation to invoke, before it has a process or time."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class OpSpec:
    f: str
    value: Any = None
    key: Any = None


class UniqueValues:
    """Integers never handed out twice in a run, so a read names its writer."""

    def __init__(self) -> None:
        self._next = 1

    def take(self) -> int:
        v = self._next
        self._next += 1
        return v


def rotating_txns(rng: random.Random, active_keys: int, writes_per_key: int,
                  write_f: str) -> Iterator[OpSpec]:
    """Elle's transactions: 1-4 micro-ops, half reads (`r`) and half writes
    (`write_f`) of unique values, over `active_keys` keys at a time; a key that
    took `writes_per_key` writes is retired for a fresh one, so every key's
    versions stay few and close to the reads that order them."""
    values = UniqueValues()
    keys = list(range(active_keys))
    next_key = active_keys
    writes: dict[int, int] = {k: 0 for k in keys}
    while True:
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


def final_txn_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """Read every key the run's transactions touched, a few keys per transaction."""
    keys = sorted({k for op in issued for _, k, _ in op.value})
    return [OpSpec("txn", [["r", k, None] for k in keys[i:i + 4]])
            for i in range(0, len(keys), 4)]
