"""`faultline ls`: the runs in the results directory, newest first."""

from __future__ import annotations

import argparse
from typing import Any

from harness.results.store import RunSummary, list_runs, results_dir


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "ls", help="list runs, newest first",
        description="List the runs in the results directory, newest first: id, start "
                    "time, db/workload/nemesis/nodes, seed, bug switches, node options, "
                    "campaign, and the checkers' verdict.")
    p.add_argument("--results", metavar="DIR", default=None,
                   help="results directory (default: $FAULTLINE_RESULTS or ./results)")
    p.set_defaults(func=run)


HEADER = ["RUN", "START", "CONFIG", "SEED", "BUGS", "NODE-OPTIONS", "CAMPAIGN", "VERDICT",
          "NOTES"]


def summary_row(r: RunSummary) -> list[str]:
    config = "/".join(x if x is not None else "?" for x in (r.db, r.workload, r.nemesis))
    nodes = f"{r.nodes} nodes" if r.nodes is not None else "? nodes"
    verdict = r.verdict
    if r.status and r.status != "complete":
        verdict = f"{verdict} ({r.status})"
    notes = "; ".join(r.problems)
    seed = str(r.seed) if r.seed is not None else "?"
    # A buggy and a fixed run of one config differ only here: never leave it blank.
    bugs = ",".join(r.bugs) or "-"
    options = ",".join(f"{k}={_option(v)}" for k, v in sorted(r.node_options.items())) or "-"
    return [r.run_id, r.start or "?", f"{config} {nodes}", seed, bugs, options,
            r.campaign or "-", verdict, notes]


def _option(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "+".join(map(str, value))
    return str(value)


def format_table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def run(args: argparse.Namespace) -> int:
    results = results_dir(args.results)
    runs = list_runs(results)
    if not runs:
        print(f"no runs in {results}")
        return 0
    rows = [HEADER] + [summary_row(r) for r in runs]
    for line in format_table(rows):
        print(line)
    return 0
