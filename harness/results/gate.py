"""The release gate: verdicts in, an exit status and a JUnit report out.

A gate only passes what it can stand behind: a run that is not `complete`
(crashed, interrupted, error, still running) or whose verdicts are absent or
judged another history is an `error` case, which fails the gate with or
without --allow-unknown (JUnit: <error>).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.anomaly_text import sentences
from checkers.verdict_store import read_verdicts
from harness.run.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
from harness.run.state import COMPLETE, read_state

ERROR = "error"   # a case the gate cannot judge: never passes
# A checker the run's system gives nothing to judge (verdicts.json `skipped`):
# listed with its reason, neither passing nor failing the gate.
SKIPPED = "skipped"


@dataclass(frozen=True)
class GateCase:
    run: str
    checker: str
    valid: bool | str          # True, False, "unknown", "error" or "skipped"
    detail: str                # the first anomalies, a sentence a line, or the reason
    seconds: float = 0.0
    coverage: str = ""         # the run's fault coverage line (verdicts.json `coverage`)
    leader_never_hit: bool = False


def first_detail(v: dict[str, Any]) -> str:
    """The first few anomalies, one sentence a line, then "and N more" (the JSON
    stays in verdicts.json); else the reason the checker gave."""
    anomalies = v.get("anomalies") or []
    if anomalies:
        return "\n".join(sentences(anomalies))
    stats = v.get("stats") or {}
    reason = stats.get("reason") or stats.get("error") or stats.get("note")
    if reason:
        return str(reason)
    return "" if v.get("valid") is True else "the checker gave no reason"


def cases_from_verdicts(run: str, document: dict[str, Any] | None,
                        problem: str | None = None) -> list[GateCase]:
    """Gate cases of one run; a run with no usable verdicts is one error case."""
    if not document or not document.get("checkers"):
        return [GateCase(run, "verdicts", ERROR,
                         problem or "the run has no verdicts.json: check it first")]
    cov = c if isinstance(c := document.get("coverage"), dict) else {}
    line, never = str(cov.get("line") or ""), cov.get("leader_never_hit") is True
    judged = [GateCase(run, name, v.get("valid", "unknown"), first_detail(v),
                       float((v.get("stats") or {}).get("seconds", 0.0)), line, never)
              for name, v in document["checkers"].items()]
    skipped = document.get("skipped")
    return judged + [GateCase(run, name, SKIPPED, str(why), 0.0, line, never)
                     for name, why in (skipped.items() if isinstance(skipped, dict) else ())]


def coverage_lines(cases: list[GateCase]) -> list[str]:
    """Per run, its coverage line when its faults never touched the leader, then
    how many runs that is: a pass there does not speak for losing the leader."""
    runs = {c.run: c for c in cases}
    never = [c for c in runs.values() if c.leader_never_hit]
    lines = [f"  {c.run}: {c.coverage}" for c in never]
    measured = [c for c in runs.values() if c.coverage]
    if measured:
        lines.append(f"coverage: {len(never)} of {len(measured)} runs' faults never "
                     "touched the leader")
    return lines


def cases_of_run_dir(run_dir: Path, name: str | None = None) -> list[GateCase]:
    """A run dir's cases: an error case unless it is complete and its verdicts
    judged the history it holds."""
    name = name or run_dir.name
    state = read_state(run_dir)
    if state.problem is not None:
        return [GateCase(name, "run", ERROR, state.problem)]
    if state.status != COMPLETE:
        why = f" ({state.error})" if state.error else ""
        return [GateCase(name, "run", ERROR, f"the run is {state.status}, not complete{why}: "
                                             "its verdicts (if any) cannot pass a gate")]
    stored = read_verdicts(run_dir)
    return cases_from_verdicts(name, stored.document, stored.problem)


def decide(cases: list[GateCase], allow_unknown: bool = False) -> int:
    """1 any invalid; else 2 any error (even with allow_unknown) or any unknown
    (0 with allow_unknown), or nothing judged at all; else 0. Skipped
    checkers neither pass nor fail it."""
    cases = [c for c in cases if c.valid != SKIPPED]
    if not cases:
        return EXIT_UNKNOWN
    if any(c.valid is False for c in cases):
        return EXIT_INVALID
    if any(c.valid == ERROR for c in cases):
        return EXIT_UNKNOWN
    if any(c.valid not in (True, False) for c in cases) and not allow_unknown:
        return EXIT_UNKNOWN
    return EXIT_VALID


def junit_xml(cases: list[GateCase], suite: str = "faultline") -> bytes:
    failures = sum(c.valid is False for c in cases)
    errors = sum(c.valid == ERROR for c in cases)
    unknown = sum(c.valid not in (True, False, ERROR) for c in cases)  # skipped too
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(failures), errors=str(errors), skipped=str(unknown),
                       time=f"{sum(c.seconds for c in cases):.3f}")
    for c in cases:
        tc = ET.SubElement(ts, "testcase", classname=c.run, name=c.checker,
                           time=f"{c.seconds:.3f}")
        if c.valid is False:
            ET.SubElement(tc, "failure", message=c.detail.split("\n")[0][:500],
                          type="anomaly").text = c.detail
        elif c.valid == ERROR:
            ET.SubElement(tc, "error", message=c.detail[:500], type="incomplete").text = c.detail
        elif c.valid == SKIPPED:
            ET.SubElement(tc, "skipped", message=f"not run: {c.detail}"[:500])
        elif c.valid is not True:
            ET.SubElement(tc, "skipped", message=f"unknown: {c.detail}"[:500])
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def load_verdicts(run_dir: Path) -> dict[str, Any] | None:
    """The run's verdicts if they judged the history it holds, else None."""
    return read_verdicts(run_dir).document
