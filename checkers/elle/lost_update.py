"""Lost update (Adya's P4, H_lu): two committed txns read the same version of
a key and both wrote that key, so whichever committed second overwrote an
update it never saw. As Elle finds it (elle.txn/lost-update-cases), straight
from the reads and writes, in one pass: no version order is needed, and
none of the dependency edges such a pair would show as a G2-item cycle
(the rw edges need the order of the two writes, which reads may never
reveal)."""

from __future__ import annotations

from typing import Any

from checkers.elle.explain import describe, txn_ref
from checkers.elle.txns import OK, READ, Txn


def lost_updates(txns: list[Txn], write: str) -> list[dict[str, Any]]:
    """One `lost-update` anomaly per (key, version read) that two or more ok
    txns read before they wrote that key (`write`: the micro-op that writes,
    append or w). The version is what the first read of the key returned."""
    by_version: dict[tuple[Any, Any], list[int]] = {}
    for t in txns:
        if t.status != OK or not t.read_mops or (not t.append_mops and write != "w"):
            continue
        read: dict[Any, Any] = {}
        wrote: set[Any] = set()
        for f, k, v in t.mops:
            if f == READ:
                if k not in read and k not in wrote:
                    read[k] = v
            elif f == write and k not in wrote:
                wrote.add(k)
                if k in read:
                    seen = read[k]
                    version = tuple(seen) if type(seen) is list else seen
                    by_version.setdefault((k, version), []).append(t.id)
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
