"""`faultline check RUN_DIR... | --results DIR [--master URL]`: (re)check saved runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkers.elle.budget import DEFAULT_MEMORY_LIMIT_MB
from checkers.registry import ELLE, RW_REGISTER, Plan, overall_validity, rows_from_document
from checkers.rundir import HISTORY, not_a_run_dir
from checkers.spark import SPLIT_FROM
from checkers.spark.session import REMOTE_ENV
from checkers.verdict import exit_code
from harness.report.summary import print_verdict_rows
from harness.results.gate import load_verdicts
from harness.results.store import check_results_dir, results_dir
from harness.run.bounds import CHECK_BUDGETS
from harness.run.bounds import SPLIT_FROM as SPLIT_FROM_RANGE
from harness.run.errors import EXIT_STATUS_HELP, UserError
from harness.run.state import COMPLETE, read_state
from workloads.judging import plan_for


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check saved runs with Spark (or in-process)",
                       description="Re-check saved runs: histories become a Spark DataFrame, "
                       "checkers run per (run, key) and per run, verdicts go to each run's "
                       "verdicts.json and to verdicts.parquet.", epilog=EXIT_STATUS_HELP)
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN_DIR")
    p.add_argument("--results", type=Path, help="check every run under this results dir")
    p.add_argument("--master", help="Spark master URL (default: embedded local[*])")
    p.add_argument("--remote", metavar="sc://HOST:PORT",
                   help="check through a running Spark Connect server (`faultline spark "
                        f"serve`) instead of starting Spark; default ${REMOTE_ENV}")
    p.add_argument("--in-process", action="store_true",
                   help="run the checkers in this process instead of Spark")
    p.add_argument("--split-from", type=int, default=SPLIT_FROM, metavar="EVENTS",
                   help="a run of this many history events or more has its Elle cycle "
                        "search (per strongly connected component) and divergence check "
                        "(per offset range) split across executors; 0: every run "
                        "(default: none; docs/spark.md, 'One big history', says why)")
    p.add_argument("--elle-memory-limit", type=int, default=None, metavar="MB",
                   help="memory an Elle check (list-append, rw-register) may take, estimated "
                        "from the history's size before anything is built; past it that "
                        f"verdict is unknown (default {DEFAULT_MEMORY_LIMIT_MB})")
    p.set_defaults(func=run)


def elle_limited(plan: Callable[[dict[str, Any]], Plan], limit_mb: int | None
                 ) -> Callable[[dict[str, Any]], Plan]:
    """`plan`, with the Elle checkers' memory limit set to `limit_mb` (None:
    their own default)."""
    if limit_mb is None:
        return plan

    def limited(run: dict[str, Any]) -> Plan:
        return {name: {**options, "memory_limit_mb": limit_mb} if name in ELLE_CHECKERS
                else options for name, options in plan(run).items()}
    return limited


ELLE_CHECKERS = (ELLE.name, RW_REGISTER.name)


def find_runs(results: Path) -> list[Path]:
    if not results.is_dir():
        raise UserError(f"results dir {results} does not exist")
    return sorted(d for d in results.iterdir()
                  if d.is_dir() and (d / HISTORY).is_file())


def resolve_runs(args: argparse.Namespace) -> tuple[list[Path], Path]:
    if args.runs and args.results:
        raise UserError("give run dirs or --results, not both")
    if args.runs:
        for d in args.runs:
            problem = not_a_run_dir(d)
            if problem is not None:
                raise UserError(f"{d} {problem}")
            if not (d / HISTORY).is_file():
                raise UserError(f"{d} is not a run dir (it has no {HISTORY})")
        parents = {d.resolve().parent for d in args.runs}
        table_dir = parents.pop() if len(parents) == 1 else Path.cwd()
        return list(args.runs), table_dir
    results = results_dir(args.results)
    runs = find_runs(results)
    if not runs:
        raise UserError(f"no runs to check under {results}")
    return runs, results


def run(args: argparse.Namespace) -> int:
    if args.in_process and (args.master or args.remote):
        raise UserError("--in-process runs no Spark: give it without --master or --remote")
    if args.master and args.remote:
        raise UserError("give --master or --remote (a Spark Connect server), not both")
    if args.split_from is not None:
        problem = SPLIT_FROM_RANGE.problem("--split-from", args.split_from)
        if problem is not None:
            raise UserError(problem)
    if args.elle_memory_limit is not None:
        problem = CHECK_BUDGETS["memory_limit_mb"].problem("--elle-memory-limit",
                                                           args.elle_memory_limit)
        if problem is not None:
            raise UserError(problem)
    plan = elle_limited(plan_for, args.elle_memory_limit)
    runs, table_dir = resolve_runs(args)
    say = lambda s: print(f"check: {s}", file=sys.stderr, flush=True)  # noqa: E731
    for d in runs:
        state = read_state(d)
        if state.problem is not None:
            raise UserError(f"{d} is not a usable run dir: {state.problem}")
        if state.status not in (None, COMPLETE):
            say(f"{d.name} is {state.status}: its verdicts judge what was recorded, and "
                "a run that is not complete never passes a gate")
    # Verdicts go into each run dir and the table beside them: say so before judging.
    for d in [*runs, table_dir]:
        check_results_dir(d, "run dir" if d in runs else "verdict table dir")
    from harness.report.views import judge, write_views
    if args.in_process:
        rows = []
        for i, d in enumerate(runs, 1):
            rows += rows_from_document(d.name, judge(d, plan=plan))
            say(f"checked {i}/{len(runs)}: {d.name}")
        import pandas as pd
        table = pd.DataFrame(rows)
    else:
        from checkers.spark.check_job import check_runs
        from checkers.spark.session import SparkUnavailable, end_session, spark_session
        try:
            spark = spark_session(args.master, remote=args.remote)
        except SparkUnavailable as e:
            raise UserError(str(e)) from None
        try:
            table = check_runs(spark, runs, plan, say, split_from=args.split_from)
        finally:
            end_session(spark)
        # The pages show the verdicts that now stand (after a run, or a changed history).
        for d in runs:
            write_views(d, load_verdicts(d))
    from checkers.spark.check_job import update_table
    out = update_table(table_dir, table)
    print_verdict_rows(table)
    say(f"verdict table: {out}")
    return exit_code(overall_validity(table))
