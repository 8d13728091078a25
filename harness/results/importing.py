"""Saved histories from elsewhere (Jepsen EDN, Porcupine logs) as run dirs, so
`faultline check` and campaigns treat them like our own runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checkers.durable import write_atomic
from checkers.formats import read_any
from checkers.registry import LINEARIZABILITY
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter


def import_history(source: Path, results: Path, fmt: str | None = None,
                   checkers: list[str] | None = None, lin_model: str | None = None,
                   workload: str | None = None) -> Path:
    history = read_any(source, fmt)
    run_dir = create_run_dir(results)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for op in history.ops:
            w.append(op)
    config: dict[str, Any] = {"imported_from": str(source), "format": fmt,
                              "checkers": checkers or [LINEARIZABILITY.name]}
    if lin_model:
        config["lin_model"] = lin_model
    if workload:
        config["workload"] = workload
    write_atomic(run_dir / "run.json", json.dumps(
        {"run_id": run_dir.name, "config": config, "status": "imported",
         "import_warnings": history.warnings}, indent=2))
    return run_dir
