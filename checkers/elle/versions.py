"""Version orders: the order in which each key's elements were appended,
inferred from reads, and the anomalies that show up while inferring them.

A list-append read returns a key's whole history, so every read of a key must
be a prefix of its longest read; the longest read is then the key's version
order. A committed append no read saw still has a place, if a vague one:
lists only grow, so it came after every element of the longest read (as in
Elle). It follows the key's last read element and every read of the whole
list misses it; its order among the other unread appends is unknown. Failed
and indeterminate appends nobody read have no place and give no edges.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from checkers.elle.explain import describe, show_list, txn_ref
from checkers.elle.txns import FAIL, OK, Txn


@dataclass
class Versions:
    # key -> its elements in append order; keys with incompatible reads are absent
    order: dict[Any, list] = field(default_factory=dict)
    # (key, element) -> the id of the txn that appended it
    writer: dict[tuple[Any, Any], int] = field(default_factory=dict)
    # (key, element) pairs after which their writer appended to that key again
    intermediate: set[tuple[Any, Any]] = field(default_factory=set)
    # key -> elements appended by failed txns
    failed: dict[Any, set] = field(default_factory=dict)
    # key -> (element, writer) of committed appends no read saw, which all
    # come after the key's `order` in an unknown order among themselves
    unread: dict[Any, list[tuple[Any, int]]] = field(default_factory=dict)


def index_writers(txns: list[Txn]) -> Versions:
    """Who appended each element. Elements are unique per key by contract; if a
    value is appended twice the first writer is kept."""
    v = Versions()
    for t in txns:
        last: dict[Any, Any] = {}
        for k, e in t.appends():
            v.writer.setdefault((k, e), t.id)
            if k in last:
                v.intermediate.add((k, last[k]))
            last[k] = e
            if t.status == FAIL:
                v.failed.setdefault(k, set()).add(e)
    return v


def own_suffix_start(t: Txn, k: Any, r: list, versions: Versions) -> int:
    """Where the txn's own appends at the end of read `r` begin: what comes
    before is what it observed of other txns."""
    end = len(r)
    while end and versions.writer.get((k, r[end - 1])) == t.id:
        end -= 1
    return end


def infer_orders(txns: list[Txn], versions: Versions) -> list[dict[str, Any]]:
    """Fill `versions.order` from the ok txns' reads; return incompatible-order and
    duplicate-elements anomalies."""
    longest: dict[Any, tuple[list, Txn]] = {}
    reads: list[tuple[Any, list, Txn]] = []
    for t in txns:
        for k, r in t.read_mops:
            reads.append((k, r, t))
            best = longest.get(k)
            if best is None or len(r) > len(best[0]):
                longest[k] = (r, t)
    anomalies: list[dict[str, Any]] = []
    incompatible: set[Any] = set()
    checked_dupes: set[tuple] = set()
    for k, r, t in reads:
        full, full_txn = longest[k]
        if full[:len(r)] == r:
            continue
        if k not in incompatible:
            incompatible.add(k)
            anomalies.append(_incompatible(k, full, full_txn, r, t))
        if tuple(r) not in checked_dupes:
            checked_dupes.add(tuple(r))
            anomalies.extend(_duplicates(k, r, t))
    for k, (full, t) in longest.items():
        # Every compatible read is a prefix of the longest, so if it has no
        # duplicates none of them has; one report per key is enough.
        if tuple(full) not in checked_dupes:
            anomalies.extend(_duplicates(k, full, t))
        if k not in incompatible:
            versions.order[k] = full
    _place_unread(txns, versions, incompatible)
    return anomalies


def _place_unread(txns: list[Txn], versions: Versions, incompatible: set[Any]) -> None:
    seen: dict[Any, frozenset] = {}
    for (k, e), w in versions.writer.items():
        if txns[w].status != OK or k in incompatible:
            continue
        order = versions.order.get(k)
        if order is None:  # appended, never read: the initial state came before
            order = versions.order[k] = []
        elements = seen.get(k)
        if elements is None:
            elements = seen[k] = frozenset(order)
        if e not in elements:
            versions.unread.setdefault(k, []).append((e, w))


def _incompatible(k: Any, a: list, ta: Txn, b: list, tb: Txn) -> dict[str, Any]:
    return {
        "type": "incompatible-order", "key": k, "reads": [list(a), list(b)],
        "txns": [txn_ref(ta), txn_ref(tb)],
        "explanation": (f"Two reads of key {k!r} disagree about the order of its appends: "
                        f"the txn by {describe(ta)} read {show_list(a)}, and the txn by "
                        f"{describe(tb)} read {show_list(b)}, which is not a prefix of it. "
                        f"A list only grows at its end, so one of them is wrong."),
    }


def _duplicates(k: Any, r: list, t: Txn) -> list[dict[str, Any]]:
    if len(set(r)) == len(r):
        return []
    dupes = sorted((e for e, n in Counter(r).items() if n > 1), key=repr)
    return [{
        "type": "duplicate-elements", "key": k, "duplicates": dupes, "txn": txn_ref(t),
        "explanation": (f"The txn by {describe(t)} read key {k!r} containing "
                        f"{', '.join(map(repr, dupes[:5]))} more than once; every element "
                        f"is appended once, so it can appear only once."),
    }]
