"""The release gate: verdicts in, an exit status and a JUnit report out."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GateCase:
    run: str
    checker: str
    valid: bool | str          # True, False or "unknown"
    detail: str                # first anomaly or the reason it is unknown
    seconds: float = 0.0


def first_detail(v: dict[str, Any]) -> str:
    anomalies = v.get("anomalies") or []
    if anomalies:
        a = anomalies[0]
        text = a.get("explanation") or a.get("message") or json.dumps(a, default=str)
        more = f" (+{len(anomalies) - 1} more)" if len(anomalies) > 1 else ""
        return f"{a.get('type', 'anomaly')}: {text}"[:2000] + more
    stats = v.get("stats") or {}
    return str(stats.get("reason") or stats.get("error") or "")


def cases_from_verdicts(run: str, document: dict[str, Any] | None) -> list[GateCase]:
    """Gate cases of one run; a run with no verdicts is one unknown case."""
    if not document or not document.get("checkers"):
        return [GateCase(run, "verdicts", "unknown",
                         "the run has no verdicts.json: check it first")]
    return [GateCase(run, name, v.get("valid", "unknown"), first_detail(v),
                     float((v.get("stats") or {}).get("seconds", 0.0)))
            for name, v in document["checkers"].items()]


def decide(cases: list[GateCase], allow_unknown: bool = False) -> int:
    """0 all valid, 1 any invalid, 2 any unknown and none invalid (0 with allow_unknown)."""
    if any(c.valid is False for c in cases):
        return 1
    if any(c.valid not in (True, False) for c in cases) and not allow_unknown:
        return 2
    return 0


def junit_xml(cases: list[GateCase], suite: str = "faultline") -> bytes:
    failures = sum(c.valid is False for c in cases)
    unknown = sum(c.valid not in (True, False) for c in cases)
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(failures), errors="0", skipped=str(unknown),
                       time=f"{sum(c.seconds for c in cases):.3f}")
    for c in cases:
        tc = ET.SubElement(ts, "testcase", classname=c.run, name=c.checker,
                           time=f"{c.seconds:.3f}")
        if c.valid is False:
            ET.SubElement(tc, "failure", message="invalid", type="anomaly").text = c.detail
        elif c.valid not in (True, False):
            ET.SubElement(tc, "skipped", message=f"unknown: {c.detail}"[:500])
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def load_verdicts(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / "verdicts.json").read_text())
    except (OSError, ValueError):
        return None
