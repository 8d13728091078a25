"""`faultline report RUN_DIR...`: (re)make each run's report.html."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.run.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a run's report.html (verdict, timeline, faults)",
                       description="Write RUN_DIR/report.html from the run dir alone: the "
                       "verdict, each checker's anomalies, a timeline of throughput, faults, "
                       "leader changes and latency, op counts, the config and links to the "
                       "raw files. Works for old, imported and crashed runs; missing pieces "
                       "are noted on the page.")
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from checkers.history import HistoryError
    from checkers.rundir import RUN_JSON, load_json, not_a_run_dir
    from harness.report.page import write_report
    from harness.results.store import check_results_dir
    for run_dir in args.run_dirs:
        problem = not_a_run_dir(run_dir)
        if problem is not None:
            raise UserError(f"{run_dir} {problem}")
        check_results_dir(run_dir, "run dir")
        if (run_dir / RUN_JSON).exists():
            try:
                load_json(run_dir / RUN_JSON)
            except HistoryError as e:
                raise UserError(f"{run_dir} is not a usable run dir: {e}") from None
    for run_dir in args.run_dirs:
        print(write_report(run_dir))
    return 0
