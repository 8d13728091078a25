"""A linearizable register: read, write of unique values, cas.

Keys rotate, as Jepsen's independent generator does for its register tests:
one register at a time, a fresh one (`r0`, `r1`, ...) every `ops_per_key` ops,
so a long run is many bounded single-register histories, each checked on its
own (also by Spark, which groups by (run, key)). `ops_per_key` 0 keeps one
register for the whole run. `cas` false leaves cas out (reads and writes
only): at a rate of a few ops a run, a cas would rarely succeed, and a run
with no successful cas shows nothing about cas (stats: unknown).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from checkers.datatypes import REGISTERS
from checkers.registry import DURABILITY, LINEARIZABILITY
from workloads.ops import ABSENT_KEY_OPS, REGISTER_OPS, OpSpec, UniqueValues, absent_key_probe
from workloads.options import Option, resolve, table

NAME = "register"
DATA = REGISTERS
RECENT = 4  # cas guesses among the last few written values: a plausible mix of hits and misses
# Ops per register before the next one. A key's history of this length checks
# in well under a second, and a key still sees every fault a schedule plays
# within it.
OPS_PER_KEY = 1000
# --client-option keys the generator reads.
OPTIONS = table(
    Option("ops_per_key", "non-negative-int", OPS_PER_KEY,
           "ops per register before the next; 0: one register for the whole run"),
    Option("cas", "bool", True, "false: reads and writes only, no cas"),
    Option("absent_key_ops", "fraction", ABSENT_KEY_OPS,
           "share of ops that read or cas a key nobody writes (with rotating keys only)"))


def generate(rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]:
    options = resolve(OPTIONS, config)
    per_key, with_cas = options["ops_per_key"], options["cas"]
    # One register for the whole run has no key to stand beside.
    absent_ops = options["absent_key_ops"] if per_key else 0.0
    values = UniqueValues()
    recent: list[int] = []
    key_no = 0
    done = 0
    while True:
        if per_key and done == per_key:
            key_no, done, recent = key_no + 1, 0, []
        key = f"r{key_no}" if per_key else None
        if absent_ops and rng.random() < absent_ops:
            yield absent_key_probe(rng, values, key, with_cas)
            continue
        done += 1
        r = rng.random()
        if r < 0.5:
            yield OpSpec("read", None, key)
        elif r < 0.75 or not recent or not with_cas:
            v = values.take()
            recent = (recent + [v])[-RECENT:]
            yield OpSpec("write", v, key)
        else:
            new = values.take()
            old = rng.choice(recent)
            recent = (recent + [new])[-RECENT:]
            yield OpSpec("cas", [old, new], key)


# What judges this workload's answers (the cluster checkers come on top).
CHECKERS = (LINEARIZABILITY, DURABILITY)
VALUES = REGISTER_OPS


# The cas register per key (etcd flavour); a history without keys is one register.
LIN_MODEL = "register-kv"


def checker_options(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Defaults under what run.json's config sets for each checker."""
    return {LINEARIZABILITY.name: {"model": LIN_MODEL}}


def final_reads(issued: list[OpSpec]) -> list[OpSpec]:
    """After the faults heal: a read of every register the run used, so lost
    writes show in the final state."""
    keys = list(dict.fromkeys(op.key for op in issued)) or [None]
    return [OpSpec("read", None, k) for k in keys]
