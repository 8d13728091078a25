"""A single linearizable register: read, write of unique values, cas."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from workloads.ops import OpSpec, UniqueValues

NAME = "register"
# --client-option keys the generator reads, with their kind (harness.run_config checks them).
OPTIONS: dict[str, str] = {}
RECENT = 4  # cas guesses among the last few written values: a plausible mix of hits and misses


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    values = UniqueValues()
    recent: list[int] = []
    while True:
        r = rng.random()
        if r < 0.5:
            yield OpSpec("read")
        elif r < 0.75 or not recent:
            v = values.take()
            recent = (recent + [v])[-RECENT:]
            yield OpSpec("write", v)
        else:
            new = values.take()
            old = rng.choice(recent)
            recent = (recent + [new])[-RECENT:]
            yield OpSpec("cas", [old, new])


def checker_names(config: dict[str, Any]) -> list[str]:
    return ["stats", "linearizability", "durability", "elections", "invariants", "divergence",
            "availability"]


LIN_MODEL = "cas-register"


def final_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """After the faults heal: one read, so lost writes show in the final state."""
    return [OpSpec("read")]
