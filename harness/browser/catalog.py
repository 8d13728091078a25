"""What the browser lists: campaigns and runs under a results dir, and the
filters a user narrows the runs with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.campaign.store import CAMPAIGN_JSON, RUNS_JSON, campaigns_root
from harness.results.store import RUN_ID, RunSummary


@dataclass(frozen=True)
class Campaign:
    id: str
    name: str
    created: str
    entries: list[dict[str, Any]] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(1 for e in self.entries if verdict_of_entry(e) == verdict)


def verdict_of_entry(entry: dict[str, Any]) -> str:
    """A campaign entry's verdict word, as `ls` spells run verdicts."""
    v = entry.get("verdict")
    return {True: "valid", False: "invalid", "unknown": "unknown"}.get(v, entry.get("status")
                                                                       or "pending")


def read_campaigns(results: Path) -> list[Campaign]:
    """Every campaign with a readable campaign.json, newest first; a campaign
    whose files are torn (a crash mid-write) is left out, never guessed at."""
    root = campaigns_root(results)
    if not root.is_dir():
        return []
    found = []
    for d in sorted((p for p in root.iterdir() if RUN_ID.fullmatch(p.name)), reverse=True):
        try:
            doc = json.loads((d / CAMPAIGN_JSON).read_text())
            entries = json.loads((d / RUNS_JSON).read_text()) if (d / RUNS_JSON).exists() else []
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(entries, list):
            found.append(Campaign(d.name, str(doc.get("name") or d.name),
                                  str(doc.get("created") or ""), entries))
    return found


# The filters, in the order the form shows them: query parameter -> label.
FILTERS = {"system": "system", "workload": "workload", "fault": "fault", "switch": "bug switch",
           "verdict": "verdict", "date": "date (YYYY-MM-DD)"}


def matches(run: RunSummary, filters: dict[str, str]) -> bool:
    """Whether a run passes every filter given (empty ones are ignored)."""
    checks = {
        "system": lambda v: run.db == v,
        "workload": lambda v: run.workload == v,
        "fault": lambda v: v in fault_families(run),
        "switch": lambda v: v in run.bugs,
        "verdict": lambda v: run.verdict == v,
        "date": lambda v: (run.start or "").startswith(v),
    }
    return all(checks[k](v) for k, v in filters.items() if v and k in checks)


def fault_families(run: RunSummary) -> set[str]:
    """The faults a run named, each also by its family (`partition:one-way`
    is found by `partition` too)."""
    named = {f for f in (run.nemesis or "").split(",") if f}
    return named | {f.split(":", 1)[0] for f in named}


def filter_runs(runs: list[RunSummary], filters: dict[str, str]) -> list[RunSummary]:
    return [r for r in runs if matches(r, filters)]


def choices(runs: list[RunSummary]) -> dict[str, list[str]]:
    """The values each filter can take among `runs` (for the form's lists)."""
    faults = {f for r in runs for f in fault_families(r)}
    return {"system": sorted({r.db for r in runs if r.db}),
            "workload": sorted({r.workload for r in runs if r.workload}),
            "fault": sorted(faults),
            "switch": sorted({b for r in runs for b in r.bugs}),
            "verdict": sorted({r.verdict for r in runs}),
            "date": sorted({(r.start or "")[:10] for r in runs if r.start}, reverse=True)}
