"""`report.html` for a run directory: the page a person reads first.

This is the I/O edge: it reads whatever the run dir holds (run.json,
verdicts.json, the history, node event lines), tolerating every missing or
broken piece, and writes the page that `harness.report.html` renders. It
reads the run dir alone, so `faultline report` can (re)make the page for an
old, imported or crashed run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from checkers.durable import write_atomic
from checkers.history import HistoryError, Op, iter_history
from checkers.lin_report import failure_anchor
from checkers.registry import LINEARIZABILITY
from checkers.rundir import (
    HISTORY,
    NODES_DIR,
    RUN_JSON,
    STDOUT_LOG,
    VERDICTS_JSON,
    Run,
    RunDirError,
    iter_events,
    load_json,
    node_names,
)
from checkers.verdict_store import read_verdicts
from harness.report.data import FailingOp, RunReport, op_counts, timeline
from harness.report.html import render
from harness.run.state import effective_status

REPORT_HTML = "report.html"
LIN_HTML = "linearizability.html"
NODE_FILES = ("stdout.log", "stderr.log", "log.msgpack")


def write_report(run_dir: str | os.PathLike[str], loaded: Run | None = None) -> Path:
    """Write `run_dir/report.html` from what the run dir holds; returns its path.

    `loaded`: the run as the checkers just loaded it (`checkers.rundir.load_run`),
    so a run that ends with a big history does not read it twice.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(run_dir, None, None, "not a run directory")
    out = run_dir / REPORT_HTML
    write_atomic(out, render(gather(run_dir, loaded)))
    return out


def gather(run_dir: Path, loaded: Run | None = None) -> RunReport:
    """The report's data; each missing or unreadable piece becomes a note."""
    notes: list[str] = []
    run = _optional_json(run_dir / RUN_JSON, notes) or {}
    if run:
        # What a reader must see is the run's state now: a dead harness's
        # "running" run is crashed.
        run = {**run, "status": effective_status(run)}
    stored = read_verdicts(run_dir)
    verdicts = stored.document
    if stored.problem is not None:
        notes.append(stored.problem)
    if loaded is not None:
        ops: list[Op] | None = loaded.history.ops
        notes += loaded.history.warnings
        events = loaded.events
    else:
        ops = _history(run_dir / HISTORY, notes)
        events = _events(run_dir, notes)
    start = run.get("start_monotonic_ns")
    tl = timeline(ops, events, run) if ops is not None else None
    if tl is not None and verdicts is not None and (run_dir / LIN_HTML).is_file():
        tl.failing = failing_ops(verdicts)
    if tl is not None and events and type(start) is not int:
        notes.append("run.json has no start_monotonic_ns: leader changes are not plotted")
    run_id = str(run.get("run_id") or run_dir.name)
    return RunReport(run_id, run, verdicts, op_counts(ops or []), tl, links(run_dir), notes)


def failing_ops(verdicts: dict[str, Any]) -> list[FailingOp]:
    """The ops linearizability could not place, linked to their counterexample."""
    lin = (verdicts.get("checkers") or {}).get(LINEARIZABILITY.name)
    anomalies = lin.get("anomalies") if isinstance(lin, dict) else None
    out = []
    for a in anomalies if isinstance(anomalies, list) else []:
        op = a.get("op") if isinstance(a, dict) else None
        if a.get("type") != "nonlinearizable" or not isinstance(op, dict):
            continue
        t = op.get("invoke_time")
        if type(t) is not int:
            continue
        key = a.get("key")
        where = "" if key is None else f" (key {key})"
        out.append(FailingOp(t, f"not linearizable: {op.get('what')}{where}",
                             f"{LIN_HTML}#{failure_anchor(key)}"))
    return out


def _optional_json(path: Path, notes: list[str]) -> dict[str, Any] | None:
    if not path.exists():
        notes.append(f"{path.name} is missing")
        return None
    try:
        return load_json(path)
    except RunDirError as e:
        notes.append(str(e))
        return None


def _history(path: Path, notes: list[str]) -> list[Op] | None:
    """The ops, up to the first unreadable one: a report of most of a broken
    history is worth more than no report."""
    if not path.exists():
        notes.append(f"{path.name} is missing")
        return None
    ops: list[Op] = []
    try:
        for op in iter_history(path, warn=notes.append):
            ops.append(op)
    except HistoryError as e:
        notes.append(f"history read stopped after {len(ops)} ops: {e}")
    return ops


def _events(run_dir: Path, notes: list[str]) -> dict[str, list[dict[str, Any]]]:
    events = {}
    for name in node_names(run_dir):
        path = run_dir / NODES_DIR / name / STDOUT_LOG
        if not path.exists():
            continue
        try:
            events[name] = list(iter_events(path))
        except RunDirError as e:
            notes.append(str(e))
    return events


def links(run_dir: Path) -> list[tuple[str, str]]:
    """(relative href, label) for the run's files a reader may want, those that exist."""
    out = [(name, label) for name, label in
           ((LIN_HTML, "linearizability view"), (HISTORY, "history (msgpack)"),
            (RUN_JSON, "run.json"), (VERDICTS_JSON, "verdicts.json"))
           if (run_dir / name).is_file()]
    for node in node_names(run_dir):
        for f in NODE_FILES:
            rel = f"{NODES_DIR}/{node}/{f}"
            if (run_dir / rel).is_file():
                out.append((rel, f"{node} {f}"))
    clients = run_dir / "clients"
    if clients.is_dir():
        out += [(f"clients/{p.name}", f"client {p.name}") for p in sorted(clients.iterdir())
                if p.is_file()]
    return out
