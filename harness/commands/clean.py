"""`faultline clean`: remove what a killed harness left behind.

Reads the journals indexed under /run/faultline (harness.run.resources) and
kills recorded processes (only if pid and start time still match),
unmounts recorded mounts, deletes the run's namespaces and temp dirs.
Runs whose harness is still alive are left alone unless --force.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.run.cluster import check_privileges
from harness.run.errors import HarnessError
from harness.run.resources import sweep_all


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "clean", help="remove namespaces, processes and mounts left by a killed run",
        description="Sweep what crashed or killed runs left: node processes, mounts, "
                    "network namespaces and temp dirs, as recorded in their journals.")
    p.add_argument("--run", metavar="RUN_ID", default=None,
                   help="only this run (default: every run whose harness is gone)")
    p.add_argument("--state-dir", metavar="DIR", default=None, type=Path,
                   help="journal index (default: $FAULTLINE_STATE_DIR or /run/faultline)")
    p.add_argument("--force", action="store_true",
                   help="also sweep runs whose harness still seems to be alive")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_privileges()
    report = sweep_all(args.state_dir, run_id=args.run, force=args.force)
    for line in report.removed:
        print(line)
    for line in report.skipped:
        print(f"skipped: {line}")
    for line in report.errors:
        print(f"not cleaned: {line}")
    if not (report.removed or report.errors or report.skipped):
        print("nothing to clean")
    if report.errors and not report.removed:
        raise HarnessError(f"{len(report.errors)} run(s) could not be cleaned; see above.")
    return 1 if report.errors else 0
