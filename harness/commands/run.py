"""`faultline run`: one test run against a cluster, ending with a verdict."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from checkers.verdict import checker_label
from faultline import registry as systems
from harness.run.config import ConfigError, RunConfig, parse_nemesis, validate
from harness.run.errors import EXIT_STATUS_HELP as EXIT_HELP
from harness.run.errors import UserError
from harness.run.key_values import parse_options
from nemesis.base import FAULTS
from workloads.options import describe
from workloads.registry import WORKLOADS

if TYPE_CHECKING:   # the run machinery loads only when a run starts
    from harness.run.lifecycle import RunOutcome


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    d = RunConfig()
    p.add_argument("--system", "--db", dest="db", default=d.db, metavar="SYSTEM",
                   help=f"system under test: {', '.join(systems.names())} (the "
                        "faultline.systems entry points), or package.module:NAME")
    p.add_argument("--workload", default=d.workload,
                   help=f"one of {', '.join(sorted(WORKLOADS))}")
    p.add_argument("--nemesis", default=",".join(d.nemesis),
                   help="comma-separated faults, each maybe with a variant after a colon "
                        "(e.g. partition:one-way), or none: "
                        + "; ".join(k.describe() for k in FAULTS.values()))
    p.add_argument("--nodes", type=int, default=d.nodes)
    p.add_argument("--concurrency", type=int, default=d.concurrency,
                   help="client worker processes")
    p.add_argument("--rate", type=float, default=d.rate, help="target ops/s (0: unlimited)")
    p.add_argument("--time-limit", type=float, default=d.time_limit, help="seconds of workload")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--nemesis-interval", type=float, default=d.nemesis_interval,
                   help="mean seconds between fault events")
    p.add_argument("--nemesis-min-duration", type=float, default=d.nemesis_min_duration,
                   help="shortest fault in seconds (0: min(1, interval / 2))")
    p.add_argument("--nemesis-overlap", action="store_true", default=d.nemesis_overlap,
                   help="let fault families overlap: each that degrades a node or its links "
                        "(packet, bandwidth, disk, clock, cpu, memory, stress) on a timeline "
                        "of its own beside the others (docs/faults.md)")
    p.add_argument("--companion-ops", type=float, default=d.companion_ops,
                   help="share of ops a companion workload of another data type the system "
                        "serves issues, on keys of its own, judged by its own checkers "
                        "(docs/workloads.md; 0: none)")
    p.add_argument("--recovery-time", type=float, default=d.recovery_time)
    p.add_argument("--op-timeout", type=float, default=d.op_timeout)
    p.add_argument("--node-choice", default=d.node_choice, help="random or sticky")
    p.add_argument("--bug", action="append", default=[], dest="bugs",
                   help="the system's bug switch to turn on (repeatable; docs/bug-switches.md)")
    p.add_argument("--node-option", action="append", default=[], metavar="K=V",
                   help="node option, e.g. tick_ms=20 (repeatable; V parsed as JSON if it can be)")
    p.add_argument("--client-option", action="append", default=[], metavar="K=V",
                   help="client/workload option (repeatable), e.g. serializable_reads=true; "
                        "workload options with their defaults: " + "; ".join(
                            f"{name}: {describe(m.OPTIONS)}"
                            for name, m in sorted(WORKLOADS.items())))
    p.add_argument("--threshold", action="append", default=[], metavar="K=V",
                   help="availability threshold, e.g. max_leader_changes_per_heal=1")
    p.add_argument("--consistency-model", default=d.consistency_model)
    p.add_argument("--lin-option", action="append", default=[], metavar="K=V",
                   help="linearizability search budget: time_limit=600, memory_limit_mb=4096 "
                   "(null: none), stop_on_first_failure=true")
    p.add_argument("--results", type=Path, help="results dir (default $FAULTLINE_RESULTS "
                   "or ./results)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run one test against a cluster and judge it",
                       description="Build a cluster in network namespaces, run a workload "
                       "while the nemesis injects faults, and check the history.",
                       epilog=EXIT_HELP)
    add_run_arguments(p)
    p.set_defaults(func=main)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    try:
        return validate(RunConfig(
            db=args.db, workload=args.workload, nemesis=parse_nemesis(args.nemesis),
            nodes=args.nodes, concurrency=args.concurrency, rate=args.rate,
            time_limit=args.time_limit, seed=args.seed,
            nemesis_interval=args.nemesis_interval,
            nemesis_min_duration=args.nemesis_min_duration,
            nemesis_overlap=args.nemesis_overlap, recovery_time=args.recovery_time,
            companion_ops=args.companion_ops,
            op_timeout=args.op_timeout, node_choice=args.node_choice, bugs=args.bugs,
            node_options=parse_options(args.node_option, "--node-option"),
            workload_options=parse_options(args.client_option, "--client-option"),
            thresholds=parse_options(args.threshold, "--threshold"),
            consistency_model=args.consistency_model,
            lin_options=parse_options(args.lin_option, "--lin-option")))
    except ConfigError as e:
        raise UserError(str(e)) from None


def print_outcome(outcome: RunOutcome, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    doc = outcome.verdicts or {}
    words = {True: "VALID", False: "INVALID", "unknown": "UNKNOWN"}
    checkers = doc.get("checkers") or {}
    main = _main_workload(outcome.run_dir)
    labels = {name: checker_label(name, v, main) for name, v in checkers.items()}
    width = max([16, *map(len, labels.values())])
    for name, v in checkers.items():
        stats = v.get("stats") or {}
        extra = ""
        if v.get("anomalies"):
            first = v["anomalies"][0]
            extra = f"  first anomaly: {first.get('type', '?')}"
        elif v.get("valid") == "unknown":
            extra = f"  ({stats.get('reason') or stats.get('error') or 'undecided'})"
        print(f"  {labels[name]:<{width}} {words.get(v.get('valid'), '?'):<8} "
              f"{len(v.get('anomalies') or [])} anomalies{extra}", file=stream)
    for name, reason in (doc.get("skipped") or {}).items():
        print(f"  {name:<{width}} {'skipped':<8} {reason}", file=stream)
    report = outcome.run_dir / "report.html"
    if report.exists():
        print(f"report:  {report}", file=stream)
    print(f"verdict: {words.get(doc.get('valid'), 'UNKNOWN')}   ({outcome.run_dir})", file=stream)
    coverage = doc.get("coverage")
    if isinstance(coverage, dict) and coverage.get("line"):
        print(f"         {coverage['line']}", file=stream)


def _main_workload(run_dir: Path) -> str | None:
    """The run's own workload, off its run.json (None if unreadable)."""
    import json
    try:
        config = json.loads((run_dir / "run.json").read_text()).get("config") or {}
    except (OSError, ValueError, AttributeError):
        return None
    workload = config.get("workload") if isinstance(config, dict) else None
    return workload if isinstance(workload, str) else None


def main(args: argparse.Namespace) -> int:
    from harness.results.store import results_dir
    from harness.run.lifecycle import HARNESS_ERROR, run_test
    config = config_from_args(args)
    try:
        outcome = run_test(config, results_dir(args.results))
    except UserError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as e:
        print(f"faultline: the run failed: {type(e).__name__}: {e}", file=sys.stderr)
        return HARNESS_ERROR
    print_outcome(outcome)
    return outcome.exit_code
