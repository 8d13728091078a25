"""Version orders: the order in which each key's elements were appended,
inferred from reads, and the anomalies that show up while inferring them.

A list-append read returns a key's whole history, so every read of a key must
be a prefix of its longest read; the longest read is then the key's version
order. A read that is not (an incompatible order) is reported, and the key is
still ordered by its longest read, as Elle does (its `append-index` takes the
longest of a key's `sorted-values` whether or not the others are prefixes of
it): the edges of such a key follow that order, and a read that contradicts
it is placed by the element it saw last (`position`). Of reads of one
length the first in invoke order counts as the longest (Elle takes whichever
its set of reads yields last).

A committed append no read saw still has a place, if a vague one: lists
only grow, so it came after every element of the longest read (as in
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
    # key -> its elements in append order: its longest read (see `unread`)
    order: dict[Any, list] = field(default_factory=dict)
    # keys whose reads are not all prefixes of the longest one
    incompatible: set = field(default_factory=set)
    # key -> element -> its place in `order`, for the `incompatible` keys only
    position: dict[Any, dict[Any, int]] = field(default_factory=dict)
    # key -> element -> the id of the txn that appended it
    writer: dict[Any, dict[Any, int]] = field(default_factory=dict)
    # the same for the elements whose writer did not fail (it may have happened)
    live: dict[Any, dict[Any, int]] = field(default_factory=dict)
    # key -> elements after which their writer appended to that key again
    intermediate: dict[Any, set] = field(default_factory=dict)
    # key -> elements appended by failed txns
    failed: dict[Any, set] = field(default_factory=dict)
    # key -> (element, writer) of committed appends no read saw, which all
    # come after the key's `order` in an unknown order among themselves
    unread: dict[Any, list[tuple[Any, int]]] = field(default_factory=dict)
    # key -> the longest list an ok txn read, and that txn
    longest: dict[Any, tuple[list, Txn]] = field(default_factory=dict)

    def writer_of(self, k: Any, e: Any) -> int | None:
        w = self.writer.get(k)
        return None if w is None else w.get(e)


def index_writers(txns: list[Txn]) -> Versions:
    """Who appended each element, and each key's longest read. Elements are
    unique per key by contract; if a value is appended twice the first writer
    is kept."""
    v = Versions()
    writer, live, longest = v.writer, v.live, v.longest
    for t in txns:
        tid = t.id
        committed = t.status != FAIL
        appends = t.append_mops
        # the last element appended to each key so far, if more than one append
        last: dict[Any, Any] | None = {} if len(appends) > 1 else None
        for _, k, e in appends:
            wk = writer.get(k)
            if wk is None:
                wk = writer[k] = {}
                live[k] = {}
            if e not in wk:
                wk[e] = tid
                if committed:
                    live[k][e] = tid
            if last is not None:
                if k in last:
                    v.intermediate.setdefault(k, set()).add(last[k])
                last[k] = e
            if not committed:
                v.failed.setdefault(k, set()).add(e)
        for _, k, r in t.read_mops:
            best = longest.get(k)
            if best is None or len(r) > len(best[0]):
                longest[k] = (r, t)
    return v


def own_suffix_start(t: Txn, k: Any, r: list, versions: Versions) -> int:
    """Where the txn's own appends at the end of read `r` begin: what comes
    before is what it observed of other txns."""
    end = len(r)
    wk = versions.writer.get(k, {})
    while end and wk.get(r[end - 1]) == t.id:
        end -= 1
    return end


def infer_orders(txns: list[Txn], versions: Versions) -> list[dict[str, Any]]:
    """Fill `versions.order` from the ok txns' reads; return incompatible-order and
    duplicate-elements anomalies."""
    longest = versions.longest
    anomalies: list[dict[str, Any]] = []
    incompatible = versions.incompatible
    checked_dupes: set[tuple] = set()
    for t in txns:
        if t.reads_prefix:  # `transactions` compared them already
            continue
        for _, k, r in t.read_mops:
            full = longest[k][0]
            if r is full or full[:len(r)] == r:
                continue
            if k not in incompatible:
                incompatible.add(k)
                anomalies.append(_incompatible(k, full, longest[k][1], r, t))
            if tuple(r) not in checked_dupes:
                checked_dupes.add(tuple(r))
                anomalies.extend(_duplicates(k, r, t))
    for k, (full, t) in longest.items():
        # Every compatible read is a prefix of the longest, so if it has no
        # duplicates none of them has; one report per key is enough.
        if tuple(full) not in checked_dupes:
            anomalies.extend(_duplicates(k, full, t))
        versions.order[k] = full
    for k in incompatible:
        versions.position[k] = {e: i for i, e in reversed(list(enumerate(versions.order[k])))}
    _place_unread(txns, versions)
    return anomalies


def _place_unread(txns: list[Txn], versions: Versions) -> None:
    # An element only a contradicting read saw is not in its key's order:
    # like an append nobody read, it came after the order (as in Elle, whose
    # `previously-appended-element` of an unindexed append is the order's last).
    for k, lk in versions.live.items():
        order = versions.order.get(k, ())
        missing = lk.keys() - order
        if missing:  # in append order, as the writers were indexed
            unread = [(e, w) for e, w in lk.items()
                      if e in missing and txns[w].status == OK]
            if unread:
                versions.unread[k] = unread
                if not order:  # appended, never read: the initial state came before
                    versions.order[k] = []


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
