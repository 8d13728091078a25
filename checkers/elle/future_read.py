"""Future read: a committed txn's read saw its own write of the key made
later in the txn (Elle's :future-read; for lists, an element it appends only
after the read). Writes are unique, so the value came from the future: a
trivial cycle, the txn depending on itself (G1c)."""

from __future__ import annotations

from typing import Any

from checkers.elle.explain import describe, txn_ref
from checkers.elle.txns import OK, READ, Txn


def future_reads(txns: list[Txn], write: str) -> list[dict[str, Any]]:
    """One `future-read` per read (of an ok txn) that holds a value the txn
    itself writes to that key only after it (`write`: append or w)."""
    out = []
    for t in txns:
        if t.status != OK or not t.read_mops or (not t.append_mops and write != "w"):
            continue
        later: dict[Any, list[tuple[int, Any]]] = {}
        for i, (f, k, v) in enumerate(t.mops):
            if f == write:
                later.setdefault(k, []).append((i, v))
        if not later:
            continue
        for i, (f, k, v) in enumerate(t.mops):
            if f != READ or k not in later or v is None:
                continue
            seen = set(v) if write != "w" else {v}
            ahead = [x for j, x in later[k] if j > i and x in seen]
            if ahead:
                out.append({
                    "type": "future-read", "key": k, "read": v, "element": ahead[0],
                    "txn": txn_ref(t),
                    "explanation": (f"The txn by {describe(t)} read key {k!r} as {v!r}, "
                                    f"which holds {ahead[0]!r}, a value it wrote to {k!r} "
                                    f"only later: it read its own future."),
                })
    return out
