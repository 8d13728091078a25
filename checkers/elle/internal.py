"""Internal consistency: a transaction must see its own appends. Whatever
isolation a database offers, a txn that appends to a key and then reads it
must find its appends at the end, in order, on top of what it read before."""

from __future__ import annotations

from typing import Any

from checkers.elle.explain import describe, show_list, txn_ref
from checkers.elle.txns import APPEND, Txn


def internal_anomalies(txns: list[Txn]) -> list[dict[str, Any]]:
    anomalies = []
    for t in txns:
        if not t.rereads:
            continue
        known: dict[Any, list] = {}      # key -> the list as this txn last saw it
        unread: dict[Any, list] = {}     # key -> own appends made before any read of it
        for f, k, v in t.mops:
            if f == APPEND:
                if k in known:
                    known[k].append(v)
                else:
                    unread.setdefault(k, []).append(v)
                continue
            if k in known:
                expected = known[k]
                ok = v == expected
            else:
                mine = unread.get(k, [])
                ok = not mine or v[len(v) - len(mine):] == mine and len(v) >= len(mine)
            if not ok:
                want = (show_list(expected) if k in known
                        else f"a list ending in {show_list(mine)}")
                anomalies.append({
                    "type": "internal", "key": k, "read": list(v), "txn": txn_ref(t),
                    "explanation": (f"The txn by {describe(t)} read key {k!r} as "
                                    f"{show_list(v)}, but given its own earlier reads and "
                                    f"appends it should have read {want}."),
                })
            known[k] = list(v)
    return anomalies
