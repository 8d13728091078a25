"""Words for anomalies: how a transaction, a list and a dependency edge are
shown to a person, and the story of a cycle.

Long reads are elided in the middle because the interesting elements of a
list-append read are at its end (what it saw last) and its start (the key's
history); a 5000-element list helps nobody.
"""

from __future__ import annotations

from typing import Any

from checkers.elle.kinds import PROCESS, REALTIME, RW, WR, WW
from checkers.elle.txns import APPEND, WRITE, Txn

_MAX_LIST = 8


def show_list(xs: Any) -> str:
    if xs is None:
        return "?"
    xs = list(xs)
    if len(xs) <= _MAX_LIST:
        return "[" + " ".join(map(repr, xs)) + "]"
    head = " ".join(map(repr, xs[:3]))
    tail = " ".join(map(repr, xs[-3:]))
    return f"[{head} ...{len(xs) - 6} more... {tail}]"


def show_mops(txn: Txn) -> str:
    parts = []
    for f, k, v in txn.mops:
        if f == APPEND:
            parts.append(f"append {k!r} {v!r}")
        elif f == WRITE:
            parts.append(f"w {k!r} {v!r}")
        elif isinstance(v, (list, tuple)) or v is None:
            parts.append(f"r {k!r} {show_list(v)}")
        else:  # a register's value
            parts.append(f"r {k!r} {v!r}")
    text = ", ".join(parts)
    return text if len(text) <= 240 else text[:237] + "..."


def describe(txn: Txn) -> str:
    """One line naming a txn by its ops so a reader can find it in the history."""
    end = (f"{txn.status} at op {txn.completion.index}" if txn.completion is not None
           else "never completed")
    began = (f"invoked at op {txn.invoke.index}" if txn.invoke.index >= 0
             else "no invoke recorded")
    return (f"process {txn.process}, {began}, {end}: "
            f"[{show_mops(txn)}]")


def txn_ref(txn: Txn) -> dict[str, Any]:
    """The machine-readable identity of a txn in an anomaly."""
    return {"process": txn.process,
            "invoke": txn.invoke.index if txn.invoke.index >= 0 else None,
            "completion": txn.completion.index if txn.completion is not None else None,
            "status": txn.status}


def edge_reason(kind: int, a: str, b: str, ta: Txn, tb: Txn, evidence: Any) -> str:
    """Why txn `a` must precede txn `b` through an edge of this kind."""
    if isinstance(evidence, dict):
        return _register_reason(kind, a, b, evidence)
    unread = len(evidence) > 3 if kind in (WW, RW) else False
    if kind == WW:
        k, before, after = evidence[:3]
        if unread:
            return (f"{a} appended {before!r} to key {k!r}, the last element any read saw, "
                    f"and {b} appended {after!r}, which no read saw, so after it (ww)")
        return (f"{a} appended {before!r} to key {k!r} and {b} appended {after!r} after "
                f"it (ww)")
    if kind == WR:
        k, v = evidence
        return f"{b} read key {k!r} ending in {v!r}, which {a} appended (wr)"
    if kind == RW:
        k, last, nxt = evidence[:3]
        seen = f"ending in {last!r}" if last is not None else "as empty"
        if unread:
            return (f"{a} read key {k!r} {seen}, all any read saw of it, and so missed "
                    f"{nxt!r}, which {b} appended and no read saw (rw)")
        return (f"{a} read key {k!r} {seen} and so missed {nxt!r}, which {b} appended "
                f"next (rw)")
    if kind == PROCESS:
        return f"process {ta.process} ran {a} and then {b} (process)"
    if kind == REALTIME:
        return (f"{a} completed at op {ta.completion.index} before {b} was invoked at "
                f"op {tb.invoke.index} (realtime)")
    raise ValueError(f"unknown edge kind {kind}")


def _register_reason(kind: int, a: str, b: str, ev: dict[str, Any]) -> str:
    k, v = ev["key"], ev["value"]
    if kind == WR:
        return f"{b} read key {k!r} = {v!r}, which {a} wrote (wr)"
    seen = "the initial state (nil)" if v is None else repr(v)
    later = (f"{b} set it to {ev['next']!r}, which came later in its "
             f"version order (by {ev['by']})")
    if kind == WW:
        return f"{a} set key {k!r} to {v!r} and {later} (ww)"
    return f"{a} read key {k!r} = {seen} and {later} (rw)"


def explain_cycle(anomaly_type: str, steps: list[tuple[Txn, Txn, int, Any]]) -> str:
    """The story of a cycle: who the transactions are, why each must precede the
    next, and the contradiction. `steps` are (from, to, kind, evidence)."""
    names = {id(t): f"T{i + 1}" for i, (t, _, _, _) in enumerate(steps)}
    lines = ["Let:"]
    for t, _, _, _ in steps:
        lines.append(f"  {names[id(t)]} = the txn by {describe(t)}")
    lines.append("Then:")
    for t, u, kind, evidence in steps:
        a, b = names[id(t)], names[id(u)]
        lines.append(f"  - {a} < {b}, because {edge_reason(kind, a, b, t, u, evidence)}.")
    order = " < ".join(names[id(t)] for t, _, _, _ in steps) + f" < {names[id(steps[0][0])]}"
    lines.append(f"A cycle: {order}, so no order of these transactions agrees with what "
                 f"they observed ({anomaly_type}).")
    return "\n".join(lines)
