"""Elle's list-append workload: transactions of 1-4 appends and reads over a
small, rotating key set, every appended value unique."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from checkers.datatypes import LISTS
from checkers.registry import DURABILITY, ELLE
from workloads.ops import SINGLE_KEY_READS, OpShape, OpSpec, final_txn_reads, rotating_txns
from workloads.options import Option, resolve, table

NAME = "list-append"
DATA = LISTS
OPTIONS = table(
    Option("active_keys", "positive-int", 5, "keys transactions touch at once"),
    Option("max_appends_per_key", "positive-int", 32, "appends to a key before a fresh one"),
    Option("single_key_reads", "fraction", SINGLE_KEY_READS,
           "share of ops that read one key alone (a store's single-key read path)"))


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    opts = resolve(OPTIONS, config)
    active_keys = opts["active_keys"]
    # Elle infers version orders from reads of whole lists: short lists keep
    # reads cheap and give every key many reads per append.
    max_appends_per_key = opts["max_appends_per_key"]
    return rotating_txns(rng, active_keys, max_appends_per_key, "append",
                         opts["single_key_reads"])


# What judges this workload's answers (the cluster checkers come on top).
CHECKERS = (ELLE, DURABILITY)
VALUES = (OpShape("txn", '`[["append", k, v], ["r", k, None], ...]`',
                  'the same list, each read filled: `["r", k, [v1, v2, ...]]`'),)


final_reads = final_txn_reads
