"""Elle's rw-register workload: transactions of 1-4 writes and reads over a
small, rotating key set, every value written to a key unique, so a read names
the one write it saw."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from workloads.ops import OpSpec, UniqueValues

NAME = "rw-register"


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    active_keys = int(config.get("active_keys", 5))
    # A register's versions are only known through inference (see
    # checkers/elle/rw_register.py): few writes per key keep every version
    # near the reads that order it.
    max_writes_per_key = int(config.get("max_writes_per_key", 16))
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
                txn.append(["w", k, values.take()])
                writes[k] += 1
                if writes[k] >= max_writes_per_key:
                    keys.remove(k)
                    keys.append(next_key)
                    writes[next_key] = 0
                    next_key += 1
        yield OpSpec("txn", txn)


def checker_names(config: dict[str, Any]) -> list[str]:
    return ["stats", "rw-register", "elections", "divergence", "availability"]


def elle_options(config: dict[str, Any]) -> dict[str, bool]:
    """Which of Elle's version-order inferences the checker may use: the run's
    `elle_options`, else writes-follow-reads (true of every serializable
    store) and, when the model checked is strict serializability (which makes
    every key linearizable), linearizable keys."""
    if config.get("elle_options") is not None:
        return {k.replace("-", "_"): bool(v) for k, v in config["elle_options"].items()}
    strict = config.get("consistency_model", "strict-serializable") == "strict-serializable"
    return {"wfr_keys": True, "linearizable_keys": strict}


def final_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """Read every key the run touched, a few keys per transaction."""
    keys = sorted({k for op in issued for _, k, _ in op.value})
    return [OpSpec("txn", [["r", k, None] for k in keys[i:i + 4]])
            for i in range(0, len(keys), 4)]
