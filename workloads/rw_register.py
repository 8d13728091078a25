"""Elle's rw-register workload: transactions of 1-4 writes and reads over a
small, rotating key set, every value written to a key unique, so a read names
the one write it saw."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from checkers.datatypes import REGISTER_TXNS
from checkers.registry import RW_REGISTER
from workloads.ops import SINGLE_KEY_READS, OpShape, OpSpec, final_txn_reads, rotating_txns
from workloads.options import Option, resolve, table

# Named after the Elle checker that judges it: one name, defined there.
NAME = RW_REGISTER.name
DATA = REGISTER_TXNS
OPTIONS = table(
    Option("active_keys", "positive-int", 5, "keys transactions touch at once"),
    # A register's versions are only known through inference (see
    # checkers/elle/rw_register.py): few writes per key keep every version
    # near the reads that order it.
    Option("max_writes_per_key", "positive-int", 16, "writes to a key before a fresh one"),
    Option("single_key_reads", "fraction", SINGLE_KEY_READS,
           "share of ops that read one key alone (a store's single-key read path)"))


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    opts = resolve(OPTIONS, config)
    active_keys, max_writes_per_key = opts["active_keys"], opts["max_writes_per_key"]
    return rotating_txns(rng, active_keys, max_writes_per_key, "w", opts["single_key_reads"])


# What judges this workload's answers (the cluster checkers come on top).
CHECKERS = (RW_REGISTER,)
VALUES = (OpShape("txn", '`[["w", k, v], ["r", k, None], ...]`',
                  'the same list, each read filled: `["r", k, v]` (`None`: never written)'),)


final_reads = final_txn_reads
