"""A campaign's directory, `results/campaigns/<id>/`, and resume decisions.

    campaign.json   name, source file, the parsed TOML, when it ran
    runs.json       one entry per planned run: index, label, config, run dir,
                    status, verdict (the run list; rewritten after every run)
    work/           per-run worker specs and results, logs/ per-run output
    verdicts.parquet, summary.json, summary.txt   after the Spark check

The id has the run-id form (`harness.results.store`): ids sort by start time and the
directory is made with an exclusive mkdir.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.durable import write_atomic
from harness.results.store import create_run_dir

CAMPAIGNS = "campaigns"
CAMPAIGN_JSON = "campaign.json"
RUNS_JSON = "runs.json"


def campaigns_root(results: Path) -> Path:
    return results / CAMPAIGNS


def create_campaign_dir(results: Path) -> Path:
    return create_run_dir(campaigns_root(results))


def campaign_dir(results: Path, campaign_id: str) -> Path:
    return campaigns_root(results) / campaign_id


def write_json(path: Path, doc: Any) -> None:
    """Atomic replace: a reader (or a resume after a crash) never sees half a file."""
    write_atomic(path, json.dumps(doc, indent=2, default=str))


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def new_entry(index: int, label: str, config: dict[str, Any]) -> dict[str, Any]:
    """A runs.json entry before its run has started."""
    return {"index": index, "label": label, "config": config, "run_id": None,
            "run_dir": None, "status": "pending", "verdict": None, "exit_code": None,
            "error": None, "seconds": None}


@dataclass(frozen=True)
class RunState:
    """What a run dir on disk says about a run, read at the edge."""

    exists: bool
    status: str | None = None
    has_history: bool = False


def read_run_state(run_dir: str | None) -> RunState:
    if not run_dir or not Path(run_dir).is_dir():
        return RunState(False)
    path = Path(run_dir)
    try:
        status = json.loads((path / "run.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    return RunState(True, status, (path / "history.msgpack").is_file())


def redo_reason(state: RunState) -> str | None:
    """Pure: why a run must be run again, or None if it is complete."""
    if not state.exists:
        return "never ran"
    if state.status != "complete":
        return f"status {state.status or 'unreadable'}"
    if not state.has_history:
        return "history missing"
    return None


def plan_resume(entries: list[dict[str, Any]], states: dict[int, RunState]
                ) -> dict[int, str]:
    """Pure: the entries to run again, by index, each with the reason."""
    todo = {}
    for e in entries:
        reason = redo_reason(states.get(e["index"], RunState(False)))
        if reason is not None:
            todo[e["index"]] = reason
    return todo
