"""Detection calibration: does a real run catch each bug switch, with the
default checkers and no hand-set threshold? And does the correct build pass?

    .venv/bin/python bench/detection.py [--runs N] [--seed-base S] [--switch NAME ...]
        [--time-limit T] [--parallel K] [--correct both|same|all-faults|none]
        [--no-switches] [--stress] [--out FILE]

For each switch: N runs (seeds S, S+1, ...) of `faultline run --bug NAME` with
the nemesis its row in nodes/raft/BUGS.md names (nodes.raft.bugs.CALIBRATION).
For the correct build: the same configurations without the switch ("same"),
and every registered fault at once on 5 nodes for each workload that has a
lin/Elle checker ("all-faults"). Prints `NAME caught K/N by CHECKERS` per
switch and `correct false-positives K/N`, and writes the table (markdown) and
every run's verdict (JSON) next to each other; `--stress` keeps `stress-ng --cpu 2`
(or `stress --cpu 2`) running for the whole bench. A run that ends in a harness
error is neither caught nor a false positive: it is listed as an error.
Needs root (namespaces, LazyFS). campaigns/calibration.toml holds the same
matrix for nightly use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from run_outcomes import (  # noqa: E402
    Outcome,
    caught_line,
    false_positive_line,
    markdown_rows,
    run_faultline,
    stress_command,
    stressed,
)

from checkers.faults import HUNT  # noqa: E402
from nemesis.base import FAULTS  # noqa: E402
from nemesis.compose import COMPOSITIONS  # noqa: E402
from nodes.raft.bugs import CALIBRATION  # noqa: E402

ALL_FAULTS_WORKLOADS = ("register", "kv", "list-append")
ALL_FAULTS_NODES = 5
ALL_FAULTS_INTERVAL = 2.0
SWITCH_WORKLOAD = "register"
SWITCH_NODES = 3
DEFAULT_RATE = 200.0


@dataclass
class Planned:
    group: str                  # a switch name, or "correct"
    label: str
    config: dict[str, Any]      # RunConfig fields


def switch_config(name: str, seed: int, time_limit: float) -> dict[str, Any]:
    plan = CALIBRATION[name]
    return {"workload": SWITCH_WORKLOAD, "nodes": plan.get("nodes", SWITCH_NODES),
            "nemesis": list(plan["nemesis"]),
            "nemesis_interval": plan["nemesis_interval"],
            "nemesis_min_duration": plan.get("nemesis_min_duration", 0.0), "time_limit": time_limit,
            "nemesis_overlap": plan.get("nemesis_overlap", False),
            "rate": plan.get("rate", DEFAULT_RATE), "seed": seed, "bugs": [],
            "workload_options": dict(plan.get("workload_options", {})),
            "node_options": dict(plan.get("node_options", {}))}


def all_faults_config(workload: str, seed: int, time_limit: float) -> dict[str, Any]:
    # Every single fault on the classic seeded schedule, as measured before
    # the hunt: the hunt would replace that schedule by its own, and the
    # compositions are its moves (faultline run's default measures both).
    return {"workload": workload, "nodes": ALL_FAULTS_NODES,
            "nemesis": [name for name in FAULTS
                        if name != HUNT.name and name not in COMPOSITIONS],
            "nemesis_interval": ALL_FAULTS_INTERVAL, "nemesis_min_duration": 0.0,
            "nemesis_overlap": False,
            "time_limit": time_limit,
            "rate": DEFAULT_RATE, "seed": seed, "bugs": [], "workload_options": {}}


def cli_args(config: dict[str, Any]) -> list[str]:
    args = ["--workload", config["workload"], "--nodes", str(config["nodes"]),
            "--nemesis", ",".join(config["nemesis"]),
            "--nemesis-interval", str(config["nemesis_interval"]),
            "--time-limit", str(config["time_limit"]), "--rate", str(config["rate"]),
            "--seed", str(config["seed"])]
    if config.get("nemesis_min_duration"):
        args += ["--nemesis-min-duration", str(config["nemesis_min_duration"])]
    if config.get("nemesis_overlap"):
        args += ["--nemesis-overlap"]
    for bug in config["bugs"]:
        args += ["--bug", bug]
    for key, value in sorted(config.get("workload_options", {}).items()):
        args += ["--client-option", f"{key}={json.dumps(value)}"]
    for key, value in sorted(config.get("node_options", {}).items()):
        args += ["--node-option", f"{key}={json.dumps(value)}"]
    return args


def plan(switches: list[str], runs: int, seed_base: int, time_limit: float,
         correct: str) -> list[Planned]:
    """Pure: every run the calibration makes, in order."""
    seeds = range(seed_base, seed_base + runs)
    out = []
    for name in switches:
        for seed in seeds:
            out.append(Planned(name, f"{name} seed {seed}",
                               switch_config(name, seed, time_limit) | {"bugs": [name]}))
    if correct in ("both", "same"):
        for name in switches:
            for seed in seeds:
                out.append(Planned("correct", f"correct as {name} seed {seed}",
                                   switch_config(name, seed, time_limit)))
    if correct in ("both", "all-faults"):
        for workload in ALL_FAULTS_WORKLOADS:
            for seed in seeds:
                out.append(Planned("correct", f"correct all faults {workload} "
                                   f"{ALL_FAULTS_NODES} nodes seed {seed}",
                                   all_faults_config(workload, seed, time_limit)))
    return out


def execute(p: Planned, results: Path, index: int) -> Outcome:
    return run_faultline(p.group, p.label, cli_args(p.config),
                         results / "runs" / f"{index:03d}", ROOT)


def summarize(outcomes: list[Outcome], switches: list[str]) -> list[str]:
    """Pure: the lines the bench prints and writes."""
    lines = [caught_line(name, mine) for name in switches
             if (mine := [o for o in outcomes if o.group == name])]
    correct = [o for o in outcomes if o.group == "correct"]
    if correct:
        lines.append(false_positive_line(correct))
    return lines


def table(outcomes: list[Outcome], lines: list[str], args: argparse.Namespace,
          loads: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    stress = " ".join(stress_command() or ["stress?"]) if args.stress else "none"
    head = (f"# Detection calibration, {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}\n\n"
            f"runs per group {args.runs}, seeds from {args.seed_base}, time limit "
            f"{args.time_limit:g} s, parallel {args.parallel}; extra load: {stress}; "
            f"load average at start {loads[0][0]:.1f}, at end {loads[1][0]:.1f}\n\n")
    body = "\n".join(f"- {line}" for line in lines)
    rows = markdown_rows(outcomes)
    return head + body + "\n\n" + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed-base", type=int, default=1)
    parser.add_argument("--switch", action="append", choices=sorted(CALIBRATION),
                        help="only these switches (repeatable; default all)")
    parser.add_argument("--no-switches", action="store_true",
                        help="only the correct build's runs (with --correct)")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--correct", choices=("both", "same", "all-faults", "none"),
                        default="both")
    parser.add_argument("--out", type=Path, default=None,
                        help="table file (default results/detection/<time>/table.md)")
    parser.add_argument("--stress", action="store_true",
                        help="run the bench under stress-ng --cpu 2 (or stress)")
    args = parser.parse_args(argv)
    if args.stress and stress_command() is None:
        parser.error("--stress needs stress-ng or stress (scripts/setup.sh installs stress-ng)")
    switches = args.switch or sorted(CALIBRATION)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = ROOT / "results" / "detection" / stamp
    out = args.out or results / "table.md"
    planned = plan(switches, args.runs, args.seed_base, args.time_limit, args.correct)
    if args.no_switches:
        planned = [p for p in planned if p.group == "correct"]
    print(f"{len(planned)} runs, parallel {args.parallel}; runs under {results}", flush=True)
    outcomes: list[Outcome] = []

    def one(item: tuple[int, Planned]) -> Outcome:
        o = execute(item[1], results, item[0])
        print(f"  {o.label}: exit {o.exit_code} invalid {','.join(o.invalid_checkers) or '-'}"
              f" ({o.seconds:g} s)", flush=True)
        return o

    with stressed(stress_command() if args.stress else None):
        loads_start = os.getloadavg()
        with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
            outcomes = list(pool.map(one, enumerate(planned)))
        loads = (loads_start, os.getloadavg())
    lines = summarize(outcomes, switches)
    for line in lines:
        print(line)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table(outcomes, lines, args, loads))
    out.with_suffix(".json").write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    print(f"table: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
