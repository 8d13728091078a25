"""A run's companion workload: ops of another data type mixed into the main
workload's, as Jepsen composes workloads.

A user's bug may sit in any operation the system serves, whichever workload
the user picked: a register run never issues a transaction, a list-append run
never a cas. So a run also issues, at a small share of its ops, the ops of a
companion workload whose data type the system's clients also serve. The
companion's ops carry its name (`OpSpec.workload`, the history's `workload`
field) and keys of their own (`companion_key`), and only the companion's own
checkers judge them (`workloads.judging`).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator
from dataclasses import replace

from checkers.checker import companion_key
from workloads import list_append, register, rw_register
from workloads.contract import Workload
from workloads.ops import OpSpec

# Share of a run's ops the companion issues by default (--companion-ops; 0: none).
COMPANION_OPS = 0.1
# The companions in the order they are preferred: the first whose data type
# differs from the main workload's and that the system serves. Registers
# reach single-key reads, writes and cas (absent keys among them); list-append
# reaches transactions and Elle's cycle search; rw-register transactions on a
# store that has no lists.
PREFERRED: tuple[Workload, ...] = (register, list_append, rw_register)


def choose(main: Workload, served: Collection[str]) -> Workload | None:
    """Pure: the companion of `main` on a system serving the workloads named in
    `served`; None when it serves no other data type."""
    for candidate in PREFERRED:
        if candidate.DATA != main.DATA and candidate.NAME in served:
            return candidate
    return None


def left_out_reason(main: Workload, db: str, share: float) -> str:
    """Why a run has no companion, in words for its one line."""
    if not share:
        return "--companion-ops is 0"
    return f"system {db} serves no data type but {main.DATA}"


def in_namespace(workload: str, spec: OpSpec) -> OpSpec:
    """`spec` tagged with its companion workload, its keys (the op's own, or
    its transaction's micro-ops') moved into the companion's namespace. Its
    values are its generator's: they may equal the main workload's, as the
    checkers match values on (workload, key, value)."""
    if spec.f == "txn" and isinstance(spec.value, list):
        value = [[mf, companion_key(workload, k), mv] for mf, k, mv in spec.value]
        return replace(spec, value=value, workload=workload)
    return replace(spec, key=companion_key(workload, spec.key), workload=workload)


def compose(main: Iterator[OpSpec], companion: Iterator[OpSpec], workload: str, share: float,
            rng: random.Random) -> Iterator[OpSpec]:
    """The main workload's ops with, at `share` of the ops (drawn from `rng`),
    the companion's in its namespace. Each stream keeps its own order, so the
    main workload issues what it would alone, only fewer of them."""
    while True:
        if share and rng.random() < share:
            spec = next(companion, None)
            if spec is not None:
                yield in_namespace(workload, spec)
                continue
        spec = next(main, None)
        if spec is None:
            return
        yield spec


def final_reads(main: Workload, companion: Workload | None,
                issued: list[OpSpec]) -> list[OpSpec]:
    """Each workload's final reads, from the ops it issued: the companion's of
    its own keys (already in its namespace), tagged as its."""
    reads = main.final_reads([op for op in issued if op.workload is None])
    if companion is None:
        return reads
    theirs = [op for op in issued if op.workload == companion.NAME]
    if theirs:
        reads += [replace(r, workload=companion.NAME) for r in companion.final_reads(theirs)]
    return reads
