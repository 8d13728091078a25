"""One anomaly in a sentence, for the run report.

An anomaly that carries its own "explanation" (Elle's, the stats checker's)
says it best. For the common shapes without one we read the fields; anything
else is shown compactly. Verdicts may come from old or foreign runs, so a
reading that does not fit the anomaly's actual fields falls back to the
compact form instead of failing the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

NS = 1_000_000_000
MAX_CHARS = 400
VALUE_CHARS = 120


def compact(x: Any, limit: int = VALUE_CHARS) -> str:
    try:
        s = json.dumps(x, default=repr, sort_keys=True)
    except (ValueError, RecursionError):
        s = repr(x)
    return s if len(s) <= limit else s[:limit - 1] + "…"


def _short(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def explain(anomaly: Any) -> str:
    if not isinstance(anomaly, dict):
        return compact(anomaly, MAX_CHARS)
    if isinstance(anomaly.get("explanation"), str):
        return anomaly["explanation"]
    reader = READERS.get(anomaly.get("type"))
    if reader is not None:
        try:
            return _short(reader(anomaly))
        except Exception:  # a field of another shape than this reader expects
            pass
    rest = ", ".join(f"{k}={compact(v)}" for k, v in anomaly.items() if k != "type")
    kind = anomaly.get("type")
    return _short(f"{kind}: {rest}" if kind is not None else rest)


def _key(a: dict[str, Any]) -> str:
    return "" if a.get("key") is None else f" (key {compact(a['key'])})"


def _op(ref: Any) -> str:
    if not isinstance(ref, dict):
        return "an op"
    return (f"{ref.get('f')} {compact(ref.get('value'), 60)} by process "
            f"{compact(ref.get('process'))} (history index {compact(ref.get('index'))})")


def _nonlinearizable(a: dict[str, Any]) -> str:
    op = a["op"] or {}
    return (f"Not linearizable{_key(a)}: after {compact(a['linearized_count'])} ops in a "
            f"valid order, with state {compact(a.get('state'))}, the op "
            f"{compact(op.get('what'))} by process {compact(op.get('process'))} (history "
            f"index {compact(op.get('index'))}) has no valid place. See "
            "linearizability.html.")


def _unavailable(a: dict[str, Any]) -> str:
    faults = ", ".join(str(f.get("f")) for f in a.get("faults") or [] if isinstance(f, dict))
    return (f"No op succeeded for {a['duration_s']} s, from {a['start_s']} s to "
            f"{a['end_s']} s (limit {a.get('limit_s')} s); faults then: {faults or 'none'}.")


def _unavailable_while_healthy(a: dict[str, Any]) -> str:
    return (f"No op succeeded from {a['start_s']} s to {a['end_s']} s; for {a['unexcused_s']} s "
            f"of it (from {a['unexcused'][0]} s) no fault had taken a quorum or the leader "
            f"and no failover was under way (limit {a.get('limit_s')} s).")


def _leader_change_while_healthy(a: dict[str, Any]) -> str:
    out = "; ".join(f"{', '.join(f['out']) or 'no node'} out, {f['cut']} link(s) cut from "
                    f"{f['from_s']} s" for f in a.get("in_force") or [])
    return (f"Leader {a['node']} (epoch {a['epoch']}) lost its leadership at {a['time_s']} s "
            f"({a['how']}), though since {a['no_trouble_since_s']} s a quorum was connected "
            f"and it was up and linked to a majority{f' ({out})' if out else ''}.")


def _unconverged(a: dict[str, Any]) -> str:
    return (f"Node {a['node']} did not converge ({a['why']}) after the run waited "
            f"{a.get('waited_s')} s (bound {a.get('bound_s')} s) for its nodes to agree.")


def _divergence(a: dict[str, Any]) -> str:
    first, last = a["offsets"]
    sides = a["sides"]
    parts = [f"{n} has epoch(s) {', '.join(map(str, s['epochs']))}"
             for n, s in sides.items()]
    where = "both hold as committed" if a.get("why") == "committed" else \
        f"({a.get('why')})"
    return (f"Replicas {' and '.join(map(str, a['nodes']))} disagree on {a.get('count')} log "
            f"entries at offsets {first}..{last}, which {where}: {'; '.join(parts)}.")


def _lost_committed(a: dict[str, Any]) -> str:
    offsets = a["offsets"]
    shown = ", ".join(map(str, offsets[:8])) + (" ..." if len(offsets) > 8 else "")
    return (f"Node {a['node']} lost {len(offsets)} committed entries (committed up to "
            f"{a.get('committed_end')}): offsets {shown}.")


def _multiple_leaders(a: dict[str, Any]) -> str:
    return (f"Two leaders in one epoch: {', '.join(map(str, a['leaders']))} all led epoch "
            f"{a['epoch']}.")


def _epoch_regression(a: dict[str, Any]) -> str:
    restarted = " across a restart" if a.get("restarted_between") else ""
    return (f"Node {a['node']}'s epoch went back from {a['from_epoch']} to "
            f"{a['to_epoch']}{restarted}, with no data loss reported.")


def _lost_write(a: dict[str, Any]) -> str:
    where = f" in log {compact(a['log'])}" if a.get("log") is not None else _key(a)
    return (f"Lost write{where}: {compact(a.get('value'))} was acknowledged "
            f"({_op(a.get('ack') or a.get('write'))}) but is in no final read or "
            "replica log.")


def _read_of(kind: str) -> Callable[[dict[str, Any]], str]:
    why = {"phantom-read": "a value never written", "aborted-read": "a failed write's value"}

    def read(a: dict[str, Any]) -> str:
        return (f"{kind.capitalize()}{_key(a)}: {_op(a.get('read'))} saw "
                f"{compact(a.get('value'))}, {why[kind]}.")
    return read


READERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "nonlinearizable": _nonlinearizable,
    "unavailable": _unavailable,
    "divergence": _divergence,
    "unavailable-while-healthy": _unavailable_while_healthy,
    "leader-change-while-healthy": _leader_change_while_healthy,
    "unconverged": _unconverged,
    "lost-committed": _lost_committed,
    "multiple-leaders": _multiple_leaders,
    "epoch-regression": _epoch_regression,
    "lost-write": _lost_write,
    "phantom-read": _read_of("phantom-read"),
    "aborted-read": _read_of("aborted-read"),
}
