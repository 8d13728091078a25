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

from typing import Any

from checkers.elle.explain import describe, txn_ref
from checkers.elle.txns import OK, READ, Txn


def read_write_anomalies(txns: list[Txn], write: str) -> list[dict[str, Any]]:
    """`lost-update` per (key, version read) two or more ok txns read before
    they wrote that key, and `future-read` per read holding a value its txn
    writes to that key later. `write`: the micro-op that writes (append, w)."""
    by_version: dict[tuple[Any, Any], list[int]] = {}
    future: list[dict[str, Any]] = []
    lists = write != "w"
    for t in txns:
        if t.status != OK or not t.read_mops or (lists and not t.append_mops):
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
                by_version.setdefault((k, tuple(first) if type(first) is list else first),
                                      []).append(t.id)
            for r in seen:
                if r is not None and (v in r if lists else v == r):
                    future.append(_future(t, k, r, v))
                    break
    return _lost(txns, by_version) + future


def _lost(txns: list[Txn], by_version: dict[tuple[Any, Any], list[int]]
          ) -> list[dict[str, Any]]:
    out = []
    for (k, version), ids in by_version.items():
        if len(ids) < 2:
            continue
        shown = list(version) if isinstance(version, tuple) else version
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
