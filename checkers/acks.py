"""What each acknowledgement promised (consistency levels per write).

Redpanda's recovery RFC defines three: `quorum` (acknowledged once a
majority has the write on disk), `leader` (once the leader appended it) and
`none`. A write acknowledged at `leader` or `none` may be lost without any
bug: the leader can crash or lose its disk before replicating it. So for the
checkers that judge correctness such an ack is no ack at all: the write may or
may not have happened, exactly Jepsen's `info`. What was lost of them is
counted (durability reports it), never an anomaly. A quorum ack stays `ok`.
"""

from __future__ import annotations

from dataclasses import replace

from checkers.history import QUORUM, Op


def relaxed(op: Op) -> bool:
    """An ok completion whose ack promised less than a quorum."""
    return op.type == "ok" and op.level is not None and op.level != QUORUM


def as_promised(history: list[Op]) -> list[Op]:
    """The history with every relaxed ack turned into an indeterminate
    completion (`info`, error `acked-at-<level>`), the same list when none is."""
    if {op.level for op in history} <= {None, QUORUM}:  # in C's stride: no call per op
        return history
    return [replace(op, type="info", error=f"acked-at-{op.level}")
            if relaxed(op) else op for op in history]
