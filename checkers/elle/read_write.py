"""Anomalies of a txn that reads a key and then writes it, found in one pass
over the committed txns, straight from their reads and writes (no version
order needed):

- lost update (Adya's P4, H_lu; Elle's elle.txn/lost-update-cases): two
  committed txns read the same version of a key (their first read of it,
  before writing it) and both wrote it, so whichever committed second
  overwrote an update it never saw. A G2-item cycle too, when the reads
  reveal the order of the two writes; often they do not.
- future read (Elle's :future-read): a read holds a value the txn itself
  writes to that key only later. Writes are unique, so it read its own
  future: a trivial cycle, the txn depending on itself (G1c).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkers.elle.explain import describe, txn_ref
from checkers.elle.txns import OK, READ, Txn


def read_write_anomalies(txns: list[Txn], write: str,
                         longest: Mapping[Any, tuple[list, Any]] | None = None
                         ) -> list[dict[str, Any]]:
    """`lost-update` per (key, version read) two or more ok txns read before
    they wrote that key, and `future-read` per read holding a value its txn
    writes to that key later. `write`: the micro-op that writes (append, w).
    `longest` (list-append): each key's longest read, as in `Versions`."""
    # (key, version) -> the txns that read it first and then wrote the key,
    # and the version as read
    by_version: dict[tuple[Any, ...], list[int]] = {}
    shown: dict[tuple[Any, ...], Any] = {}
    future: list[dict[str, Any]] = []
    lists = write != "w"
    for t in txns:
        if (t.status != OK or not t.read_mops or (lists and not t.append_mops)
                or not t.repeats_key):
            continue
        reads: dict[Any, list] = {}    # key -> the values read of it so far
        wrote: set[Any] = set()
        for f, k, v in t.mops:
            if f == READ:
                if k in reads:
                    reads[k].append(v)
                else:
                    reads[k] = [v]
                continue
            if f != write:
                continue
            seen = reads.get(k)
            if seen is None:
                wrote.add(k)
                continue
            if k not in wrote:
                wrote.add(k)
                first = seen[0]
                version = _version(t, k, first, longest)
                ids = by_version.get(version)
                if ids is None:
                    by_version[version] = [t.id]
                    shown[version] = list(first) if type(first) is list else first
                else:
                    ids.append(t.id)
            for r in seen:
                if r is not None and (v in r if lists else v == r):
                    future.append(_future(t, k, r, v))
                    break
    return _lost(txns, by_version, shown) + future


def _version(t: Txn, k: Any, read: Any, longest: Mapping[Any, tuple[list, Any]] | None
             ) -> tuple[Any, ...]:
    """What names the version `read` saw of key k, alike for equal reads: a
    list read that is a prefix of the key's longest read (as every read of a
    txn whose reads are all prefixes is) by its length alone, equal prefixes
    being equal (sparing a tuple of its elements, a hundred and more on a
    long history); any other list read, or any without `longest`, by its
    elements."""
    if type(read) is not list:
        return (k, read)
    if longest is not None:
        if t.reads_prefix:
            return (k, len(read), True)
        full = longest[k][0]
        if len(read) <= len(full) and full[:len(read)] == read:
            return (k, len(read), True)
    return (k, tuple(read))


def _lost(txns: list[Txn], by_version: dict[tuple[Any, ...], list[int]],
          shown_as: dict[tuple[Any, ...], Any]) -> list[dict[str, Any]]:
    out = []
    for version, ids in by_version.items():
        if len(ids) < 2:
            continue
        k, shown = version[0], shown_as[version]
        out.append({
            "type": "lost-update", "key": k, "value": shown,
            "txns": [txn_ref(txns[i]) for i in ids],
            "explanation": (
                f"{len(ids)} committed txns (by {', '.join(describe(txns[i]) for i in ids)}) "
                f"each read key {k!r} = {shown!r} and then wrote {k!r}: each wrote over "
                f"a version the others' writes had replaced, so all but one of their "
                f"updates is lost."),
        })
    return out


def _future(t: Txn, k: Any, read: Any, value: Any) -> dict[str, Any]:
    return {"type": "future-read", "key": k, "read": read, "element": value,
            "txn": txn_ref(t),
            "explanation": (f"The txn by {describe(t)} read key {k!r} as {read!r}, which "
                            f"holds {value!r}, a value it wrote to {k!r} only later: it "
                            f"read its own future.")}
