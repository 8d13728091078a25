"""A run's state, as every command sees it.

run.json says `running` from the moment the run dir exists until the harness
writes `complete`, `interrupted` (Ctrl-C, SIGTERM) or `error` (the harness
failed). A harness that is SIGKILLed or loses its machine writes nothing, so
run.json also records the harness's pid and process start time: a `running`
run whose harness is gone is `crashed`, never `running` forever.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.history import HistoryError
from checkers.rundir import RUN_JSON, load_json
from harness.run.resources import harness_alive

RUNNING, COMPLETE, INTERRUPTED, CRASHED, ERROR = (
    "running", "complete", "interrupted", "crashed", "error")
STATES = (RUNNING, COMPLETE, INTERRUPTED, CRASHED, ERROR)


def harness_fields(pid: int, start_time: float | None) -> dict[str, Any]:
    """What run.json records so readers can tell a live harness from a dead one."""
    return {"harness": {"pid": pid, "start_time": start_time}}


def effective_status(run: dict[str, Any]) -> str | None:
    """run.json's status, with a `running` run whose harness is dead read as `crashed`."""
    status = run.get("status")
    if status is None:
        return None
    status = str(status)
    if status != RUNNING:
        return status
    harness = run.get("harness")
    if not isinstance(harness, dict):
        return RUNNING  # written before harness pids were recorded: cannot tell
    pid, started = harness.get("pid"), harness.get("start_time")
    if not isinstance(pid, int) or not isinstance(started, (int, float)):
        return CRASHED
    return RUNNING if harness_alive(pid, float(started)) else CRASHED


@dataclass(frozen=True)
class RunState:
    status: str | None         # one of STATES (or whatever an old run.json said), None: unknown
    problem: str | None        # run.json missing or unreadable
    error: str | None = None   # why the harness failed (run.json `error`), if it says


def read_state(run_dir: Path) -> RunState:
    path = Path(run_dir) / RUN_JSON
    if not path.exists():
        return RunState(None, "run.json is missing")
    try:
        run = load_json(path)
    except HistoryError as e:
        return RunState(None, f"run.json is unreadable: {e}")
    error = run.get("error")
    return RunState(effective_status(run), None, str(error) if error else None)
