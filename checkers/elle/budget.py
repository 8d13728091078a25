"""How much memory an Elle-style check of a history will take, estimated from
the history's size before anything is built, and the budget it is held to.

The coefficients are measured, not derived: bench/elle_memory.py checks
generated histories of several sizes (valid ones, and ones whose stale reads
make large cyclic components, which cost most) and reports the peak RSS the
check added per micro-op; docs/elle-memory.md has the figures. The estimate
is kept above every one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from checkers.history import NEMESIS, Op

# Peak bytes a check adds per txn and per micro-op (docs/elle-memory.md).
BYTES_PER_TXN = 5600
BYTES_PER_MOP = 800
# Default budget: a check may take this much besides the history itself,
# leaving most of a 24 GiB machine to the rest (the run's nodes, other checks).
DEFAULT_MEMORY_LIMIT_MB = 6144


@dataclass(frozen=True, slots=True)
class HistorySize:
    txns: int
    mops: int


def history_size(history: Iterable[Op]) -> HistorySize:
    """The txns and micro-ops a check would parse: one pass over the ops,
    looking at nothing but each txn invoke's length."""
    txns = mops = 0
    for op in history:
        if op.f == "txn" and op.type == "invoke" and op.process != NEMESIS:
            txns += 1
            v = op.value
            mops += len(v) if isinstance(v, (list, tuple)) else 1
    return HistorySize(txns, mops)


def estimate_bytes(size: HistorySize) -> int:
    return BYTES_PER_TXN * size.txns + BYTES_PER_MOP * size.mops


def over_budget(size: HistorySize, memory_limit_mb: int | None) -> str | None:
    """Why a check of a history this size is not started, or None."""
    if memory_limit_mb is None:
        return None
    need = estimate_bytes(size)
    if need <= memory_limit_mb * 2**20:
        return None
    return (f"memory limit: checking {size.txns} txns ({size.mops} micro-ops) would take "
            f"about {need >> 20} MiB, over the {memory_limit_mb} MiB limit; nothing was "
            f"built (raise the limit to check it)")
