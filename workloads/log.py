"""A Kafka-like log workload: appends to named logs and range reads.

Judged for lost or duplicated acknowledged appends and for reads whose
offsets go backwards."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from checkers.datatypes import LOGS
from checkers.registry import DURABILITY
from workloads.ops import OpShape, OpSpec, UniqueValues
from workloads.options import Option, resolve, table

NAME = "log"
DATA = LOGS
OPTIONS = table(
    Option("logs", "positive-int", 3, "independent logs"),
    Option("read_count", "positive-int", 50, "entries a poll asks for"))


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    opts = resolve(OPTIONS, config)
    logs = [f"log{i}" for i in range(opts["logs"])]
    read_count = opts["read_count"]
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


# What judges this workload's answers (the cluster checkers come on top).
CHECKERS = (DURABILITY,)
VALUES = (OpShape("append", "`[log_name, v]`", "`[log_name, v, offset]`"),
          OpShape("read", "`[log_name, from_offset, count]`",
                  "`[log_name, from_offset, [[offset, v], ...]]`"))

# The node caps one read at this many entries (nodes.raft.requests.MAX_READ_COUNT).
FINAL_READ_COUNT = 10_000


def final_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """Read each log from offset 0 to past every append the run made."""
    appends: dict[str, int] = {}
    for op in issued:
        if op.f == "append":
            appends[op.value[0]] = appends.get(op.value[0], 0) + 1
    return [OpSpec("read", [name, start, FINAL_READ_COUNT])
            for name in sorted(appends)
            for start in range(0, appends[name] + 1, FINAL_READ_COUNT)]
