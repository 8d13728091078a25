"""Anomalies of reading or overwriting what a transaction should not see:
G1a (aborted read: an element appended by a failed txn was read), G1b
(intermediate read: a read ended at an element its writer later followed with
another append to the same key) and dirty update (a failed txn's element is
followed in a key's version order by a committed one)."""

from __future__ import annotations

from typing import Any

from checkers.elle.explain import describe, show_list, txn_ref
from checkers.elle.txns import Txn
from checkers.elle.versions import Versions, own_suffix_start


def dirty_anomalies(txns: list[Txn], versions: Versions) -> list[dict[str, Any]]:
    anomalies: list[dict[str, Any]] = []
    # Compatible reads are prefixes of the key's order: one that reaches no
    # further than the order's first failed element holds none.
    # (Reads of a key whose reads disagree need not be: they are all searched.)
    clean_upto = {k: next((i for i, e in enumerate(versions.order[k]) if e in failed),
                          len(versions.order[k]))
                  for k, failed in versions.failed.items()
                  if k in versions.order and k not in versions.incompatible}
    # Only reads of keys with a failed element in reach can hold one.
    aborted_keys = {k for k in versions.failed
                    if k not in clean_upto or clean_upto[k] < len(versions.order[k])}
    intermediate, writer = versions.intermediate, versions.writer
    for t in txns:
        for _, k, r in t.read_mops:
            if k in aborted_keys:
                anomalies += _aborted_reads(txns, versions, t, k, r, clean_upto.get(k))
            inter = intermediate.get(k)
            # the common case first, without a call: the read does not end at
            # an intermediate element, nor in the txn's own appends
            if (inter is None or not r
                    or (r[-1] not in inter
                        and (not t.append_mops or writer[k].get(r[-1]) != t.id))):
                continue
            end = own_suffix_start(t, k, r, versions)
            if end and r[end - 1] in inter:
                e = r[end - 1]
                w = txns[writer[k][e]]
                anomalies.append({
                    "type": "G1b", "key": k, "element": e, "reader": txn_ref(t),
                    "writer": txn_ref(w),
                    "explanation": (f"The txn by {describe(t)} read key {k!r} ending in "
                                    f"{e!r}, an intermediate state of the txn by "
                                    f"{describe(w)}, which appended to {k!r} again after "
                                    f"{e!r}."),
                })
    for k, failed in versions.failed.items():
        order = versions.order.get(k, ())
        live = versions.live.get(k, {})
        for i, e in enumerate(order):
            if e not in failed:
                continue
            later = next((x for x in order[i + 1:] if x in live), None)
            if later is None:
                continue
            w = txns[versions.writer[k][e]]
            u = txns[live[later]]
            anomalies.append({
                "type": "dirty-update", "key": k, "element": e, "next": later,
                "aborted": txn_ref(w), "writer": txn_ref(u),
                "explanation": (f"Key {k!r} holds {e!r}, appended by the failed txn by "
                                f"{describe(w)}, followed by {later!r}, appended by the txn "
                                f"by {describe(u)}: a committed write on top of an aborted "
                                f"one."),
            })
    return anomalies


def _aborted_reads(txns: list[Txn], versions: Versions, t: Txn, k: Any, r: list,
                   upto: int | None) -> list[dict[str, Any]]:
    """G1a: the elements of read `r` that failed txns appended."""
    if upto is not None and len(r) <= upto:
        return []
    out = []
    for e in sorted(versions.failed[k].intersection(r), key=repr):
        w = txns[versions.writer[k][e]]
        out.append({
            "type": "G1a", "key": k, "element": e, "reader": txn_ref(t),
            "writer": txn_ref(w),
            "explanation": (f"The txn by {describe(t)} read key {k!r} as "
                            f"{show_list(r)}, including {e!r}, which was "
                            f"appended by the failed txn by {describe(w)}."),
        })
    return out
