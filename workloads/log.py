"""A Kafka-like log workload: appends to named logs and range reads.

Judged for lost or duplicated acknowledged appends and for reads whose
offsets go backwards."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from workloads.ops import OpSpec, UniqueValues

NAME = "log"


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    logs = [f"log{i}" for i in range(int(config.get("logs", 3)))]
    read_count = int(config.get("read_count", 50))
    values = UniqueValues()
    appended: dict[str, int] = {name: 0 for name in logs}
    while True:
        name = rng.choice(logs)
        if rng.random() < 0.6:
            appended[name] += 1
            yield OpSpec("append", [name, values.take()])
        else:
            # Read near the tail most of the time, from the start sometimes,
            # so both recent and old offsets are re-observed.
            end = appended[name]
            start = 0 if rng.random() < 0.2 else max(0, end - read_count)
            yield OpSpec("read", [name, start, read_count])


def checker_names(config: dict[str, Any]) -> list[str]:
    return ["durability", "elections", "divergence", "availability"]
