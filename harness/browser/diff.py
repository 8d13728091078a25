"""Two runs side by side: what differs in their config, their executed fault
schedules and their verdicts. Pure functions of the runs' documents."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any


def flatten(doc: Any, prefix: str = "") -> dict[str, str]:
    """Nested dicts as dotted keys; lists and scalars as JSON text."""
    if isinstance(doc, dict):
        out: dict[str, str] = {}
        for k in sorted(doc, key=str):
            out.update(flatten(doc[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: json.dumps(doc, sort_keys=True, default=str)}


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, a's value, b's value) for each config key whose values differ;
    a key one run lacks shows as "-"."""
    fa, fb = flatten(a.get("config") or {}), flatten(b.get("config") or {})
    return [(k, fa.get(k, "-"), fb.get(k, "-")) for k in sorted(set(fa) | set(fb))
            if fa.get(k) != fb.get(k)]


def schedule_labels(run: dict[str, Any]) -> list[tuple[float, str]]:
    """The executed schedule as (seconds, label) per fault or heal."""
    out = []
    for e in run.get("schedule") or []:
        if isinstance(e, dict):
            label = str(e.get("label") or e.get("f"))
            if e.get("noop"):
                label += " (no-op)"
            out.append((float(e.get("time") or 0) / 1e9, label))
    return out


@dataclass(frozen=True)
class Row:
    tag: str          # "same", "changed", "only-a", "only-b"
    a: str
    b: str


def schedule_diff(a: dict[str, Any], b: dict[str, Any]) -> list[Row]:
    """The two schedules aligned by what was done (times differ between any two
    runs, so they are shown, not compared)."""
    la, lb = schedule_labels(a), schedule_labels(b)
    matcher = difflib.SequenceMatcher(a=[x[1] for x in la], b=[x[1] for x in lb],
                                      autojunk=False)
    rows: list[Row] = []

    def text(item: tuple[float, str]) -> str:
        return f"{item[0]:7.2f}s  {item[1]}"

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = la[i1:i2], lb[j1:j2]
        for k in range(max(len(left), len(right))):
            lt = text(left[k]) if k < len(left) else ""
            rt = text(right[k]) if k < len(right) else ""
            kind = ("same" if tag == "equal" else "changed" if lt and rt
                    else "only-a" if lt else "only-b")
            rows.append(Row(kind, lt, rt))
    return rows


def _word(valid: Any) -> str:
    return {True: "valid", False: "INVALID"}.get(valid, "unknown" if valid is not None
                                                 else "-")


def verdict_diff(a: dict[str, Any] | None, b: dict[str, Any] | None
                 ) -> list[tuple[str, str, str, bool]]:
    """(checker, a's verdict and anomaly kinds, b's, whether they differ)."""
    ca = (a or {}).get("checkers") or {}
    cb = (b or {}).get("checkers") or {}

    def said(v: Any) -> str:
        if not isinstance(v, dict):
            return "-"
        kinds = sorted({str(x.get("type")) for x in v.get("anomalies") or []
                        if isinstance(x, dict)})
        return _word(v.get("valid")) + (f" ({', '.join(kinds)})" if kinds else "")

    return [(name, said(ca.get(name)), said(cb.get(name)), said(ca.get(name)) != said(cb.get(name)))
            for name in sorted(set(ca) | set(cb))]
