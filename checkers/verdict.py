"""The common verdict shape every checker returns."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Validity = bool | Literal["unknown"]


class Verdict(TypedDict):
    valid: Validity
    anomalies: list[dict[str, Any]]
    stats: dict[str, Any]


def verdict(valid: Validity, anomalies: list[dict[str, Any]] | None = None,
            stats: dict[str, Any] | None = None) -> Verdict:
    if valid not in (True, False, "unknown"):
        raise ValueError(f"valid must be True, False or 'unknown', not {valid!r}")
    return {"valid": valid, "anomalies": anomalies or [], "stats": stats or {}}


def judged_on_events(anomalies: list[dict[str, Any]], stats: dict[str, Any],
                     events: dict[str, list[dict]]) -> Verdict:
    """A verdict from the nodes' event lines: invalid on any anomaly, unknown
    when no node left a line to judge (the reason in its stats), else valid."""
    if anomalies:
        return verdict(False, anomalies, stats)
    if not any(events.values()):
        return verdict("unknown", [], {**stats, "reason": "no node event lines"})
    return verdict(True, [], stats)


def combine(validities: list[Validity]) -> Validity:
    """Invalid if any is invalid, else unknown if any is unknown, else valid."""
    if any(v is False for v in validities):
        return False
    if any(v == "unknown" for v in validities):
        return "unknown"
    return True


def merge(verdicts: dict[str, Verdict]) -> dict[str, Any]:
    """The `verdicts.json` document: overall validity plus each checker's verdict."""
    return {"valid": combine([v["valid"] for v in verdicts.values()]),
            "checkers": verdicts}


EXIT_CODES = {True: 0, False: 1, "unknown": 2}


def exit_code(valid: Validity) -> int:
    return EXIT_CODES[valid]


def checker_label(name: str, v: Any, main: str | None = None) -> str:
    """A checker as a run's summary names it: with the workload whose ops it
    judged (stats `workload`, set in a run with a companion workload) when
    that is not the run's `main` workload, so an anomaly says which
    workload's checker found it."""
    stats = v.get("stats") if isinstance(v, dict) else None
    workload = stats.get("workload") if isinstance(stats, dict) else None
    if not isinstance(workload, str) or workload == main:
        return name
    return f"{name} ({workload} ops)"
