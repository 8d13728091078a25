"""Many independent registers (the `key` field set): P-compositional checking.

Keys rotate, as Jepsen's independent generator does: each key takes a bounded
number of ops, so each per-key linearizability search stays small however long
the run is.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from checkers.datatypes import REGISTERS
from checkers.registry import DURABILITY, LINEARIZABILITY
from workloads.ops import ABSENT_KEY_OPS, REGISTER_OPS, OpSpec, UniqueValues, absent_key_probe
from workloads.options import Option, resolve, table

NAME = "kv"
DATA = REGISTERS
LIN_MODEL = "register-kv"


def checker_options(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Defaults under what run.json's config sets for each checker."""
    return {LINEARIZABILITY.name: {"model": LIN_MODEL}}
OPTIONS = table(
    Option("active_keys", "positive-int", 5, "keys written at once"),
    Option("ops_per_key", "positive-int", 200, "ops on a key before a fresh one replaces it"),
    Option("absent_key_ops", "fraction", ABSENT_KEY_OPS,
           "share of ops that read or cas a key nobody writes"))


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    opts = resolve(OPTIONS, config)
    active_keys, ops_per_key = opts["active_keys"], opts["ops_per_key"]
    values = UniqueValues()
    next_key = active_keys
    active = {f"k{i}": 0 for i in range(active_keys)}
    last_written: dict[str, int] = {}
    while True:
        key = rng.choice(sorted(active))
        if rng.random() < opts["absent_key_ops"]:
            yield absent_key_probe(rng, values, key)
            continue
        active[key] += 1
        if active[key] >= ops_per_key:
            del active[key]
            active[f"k{next_key}"] = 0
            next_key += 1
        r = rng.random()
        if r < 0.5:
            yield OpSpec("read", None, key)
        elif r < 0.75 or key not in last_written:
            v = values.take()
            last_written[key] = v
            yield OpSpec("write", v, key)
        else:
            new = values.take()
            old = last_written[key] if rng.random() < 0.7 else new - 1
            last_written[key] = new
            yield OpSpec("cas", [old, new], key)


# What judges this workload's answers (the cluster checkers come on top).
CHECKERS = (LINEARIZABILITY, DURABILITY)
VALUES = REGISTER_OPS


def final_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """A read of every key the run touched."""
    keys = sorted({op.key for op in issued}, key=lambda k: (len(str(k)), str(k)))
    return [OpSpec("read", None, k) for k in keys]
