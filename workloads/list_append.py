"""Elle's list-append workload: transactions of 1-4 appends and reads over a
small, rotating key set, every appended value unique."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from workloads.ops import OpSpec, UniqueValues

NAME = "list-append"
OPTIONS = {"active_keys": "positive-int", "max_appends_per_key": "positive-int"}


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    active_keys = int(config.get("active_keys", 5))
    # Elle infers version orders from reads of whole lists: short lists keep
    # reads cheap and give every key many reads per append.
    max_appends_per_key = int(config.get("max_appends_per_key", 32))
    values = UniqueValues()
    keys = list(range(active_keys))
    next_key = active_keys
    appends: dict[int, int] = {k: 0 for k in keys}
    while True:
        txn: list[list[Any]] = []
        for _ in range(rng.randint(1, 4)):
            k = rng.choice(keys)
            if rng.random() < 0.5:
                txn.append(["r", k, None])
            else:
                txn.append(["append", k, values.take()])
                appends[k] += 1
                if appends[k] >= max_appends_per_key:
                    keys.remove(k)
                    keys.append(next_key)
                    appends[next_key] = 0
                    next_key += 1
        yield OpSpec("txn", txn)


def checker_names(config: dict[str, Any]) -> list[str]:
    return ["stats", "elle", "durability", "elections", "invariants", "divergence",
            "availability"]


def final_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """Read every key the run touched, a few keys per transaction."""
    keys = sorted({k for op in issued for _, k, _ in op.value})
    return [OpSpec("txn", [["r", k, None] for k in keys[i:i + 4]])
            for i in range(0, len(keys), 4)]
