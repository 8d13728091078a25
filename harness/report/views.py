"""A run's HTML views (linearizability.html, report.html), made from the run
dir and its verdicts: after a run, and again after every re-check, so a page
never shows a verdict that no longer stands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from checkers.registry import LINEARIZABILITY


def lin_context(loaded: Any) -> dict[str, Any]:
    """What the linearizability view shows beside the checker's counterexample:
    the node that served each op (by its invoke's index) and the faults in force."""
    from checkers.history import NEMESIS, pair_ops
    from harness.report.data import fault_list
    ops = loaded.history.ops
    nodes = {}
    for inv, done in pair_ops([op for op in ops if op.process != NEMESIS]):
        node = (done.node if done is not None and done.node else None) or inv.node
        if node is not None:
            nodes[inv.index] = str(node)
    end = max((op.time for op in ops), default=0)
    faults, _ = fault_list(ops, end)
    return {"nodes": nodes, "report": "report.html",
            "faults": [{"label": w.label, "start": w.start, "end": w.end} for w in faults]}


def write_views(run_dir: Path, document: dict[str, Any] | None, loaded: Any = None,
                stream: Any = None) -> None:
    """linearizability.html (when the verdicts have one) and report.html. A view
    that cannot be made is said on `stream`; the verdict stands without it."""
    stream = stream or sys.stderr
    if loaded is None:
        from checkers.rundir import load_run
        try:
            loaded = load_run(run_dir)
        except Exception:
            loaded = None   # the report page notes what it could not read
    lin = ((document or {}).get("checkers") or {}).get(LINEARIZABILITY.name)
    if lin is not None and loaded is not None:
        try:
            from checkers.lin_report import write_html
            write_html(lin, Path(run_dir) / "linearizability.html", lin_context(loaded))
        except Exception as e:
            print(f"faultline: could not write linearizability.html ({e})", file=stream)
    try:
        from harness.report.page import write_report
        write_report(Path(run_dir), loaded)
    except Exception as e:
        print(f"faultline: could not write report.html ({e})", file=stream)


def judge(run_dir: Path, stream: Any = None, plan: Any = None) -> dict[str, Any]:
    """Check a run dir in-process; write verdicts.json (bound to the history's
    digest), linearizability.html and report.html. Returns the verdicts.
    `plan`: run.json -> the checkers and their options (default
    `workloads.judging.plan_for`)."""
    from checkers.registry import check_loaded
    from checkers.rundir import load_run
    from checkers.verdict_store import history_digest, write_verdicts
    from workloads.judging import plan_for
    digest = history_digest(run_dir)
    loaded = load_run(run_dir)
    document = check_loaded(loaded, (plan or plan_for)(loaded.run))
    write_verdicts(run_dir, document, digest)
    write_views(run_dir, document, loaded, stream)
    return document
