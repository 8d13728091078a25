"""The hunt: does the DEFAULT `faultline run` catch bugs nobody planted?

    .venv/bin/python bench/hunt.py [--bug NAME ...] [--seeds N] [--seed-base S]
        [--workload W ...] [--correct-seeds N] [--time-limit T] [--nodes N]
        [--parallel K] [--stress] [--base REF] [--out FILE]
    .venv/bin/python bench/hunt.py --retable results/hunt/<time>/table.json

Each bug of bench/unplanted/*.patch is applied to its own scratch copy of the
repo (bench/scratch.py; the working tree, or commit REF with --base), and
`faultline run --workload W --nodes 5 --time-limit 60 --seed S` runs from
that copy, with no --nemesis: whatever the default is. N seeds per (bug,
workload); the correct build (an unpatched copy) for --correct-seeds seeds,
the workloads taken in turn. `--stress` keeps `stress-ng --cpu 2` (or
`stress --cpu 2`) running for the whole bench. Prints progress, then
`NAME caught K/N by CHECKERS` per bug, the overall rate and the correct
build's false positives, and writes the table (markdown) and every run (JSON)
under results/hunt/<time>/. A run that ends in a harness error is neither
caught nor a false positive: it is listed as an error. Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from run_outcomes import (  # noqa: E402
    Outcome,
    by_checker,
    caught_line,
    copy_first_env,
    false_positive_line,
    markdown_rows,
    run_faultline,
    stress_command,
)
from scratch import Unplanted, scratch_copy, unplanted_bugs  # noqa: E402

WORKLOADS = ("register", "list-append")
NODES = 5
TIME_LIMIT = 60.0
SEEDS = 3
CORRECT_SEEDS = 30
CORRECT = "correct"


@dataclass(frozen=True)
class Planned:
    group: str       # a bug's name, or "correct"
    workload: str
    seed: int

    @property
    def label(self) -> str:
        return f"{self.group} {self.workload} seed {self.seed}"


def plan(bugs: list[str], workloads: list[str], seeds: int, seed_base: int,
         correct_seeds: int) -> list[Planned]:
    """Pure: every run of the hunt, in order (bug runs, then the correct build's)."""
    out = [Planned(bug, w, seed) for bug in bugs for w in workloads
           for seed in range(seed_base, seed_base + seeds)]
    out += [Planned(CORRECT, workloads[i % len(workloads)], seed_base + i)
            for i in range(correct_seeds)]
    return out


def run_args(p: Planned, nodes: int, time_limit: float) -> list[str]:
    """The default run: no --nemesis, no rate, nothing tuned to a bug."""
    return ["--workload", p.workload, "--nodes", str(nodes), "--time-limit", f"{time_limit:g}",
            "--seed", str(p.seed)]


def summarize(outcomes: list[Outcome], bugs: list[str]) -> list[str]:
    """Pure: per bug, overall over the bugs' runs, and the correct build's line."""
    lines = [caught_line(bug, mine) for bug in bugs
             if (mine := [o for o in outcomes if o.group == bug])]
    bug_runs = [o for o in outcomes if o.group != CORRECT]
    if bug_runs:
        judged = [o for o in bug_runs if o.judged]
        caught = sum(o.exit_code == 1 for o in judged)
        share = f" ({100 * caught / len(judged):.0f}%)" if judged else ""
        never = [b for b in bugs if (mine := [o for o in bug_runs if o.group == b])
                 and not any(o.exit_code == 1 for o in mine)]
        lines.append(f"overall caught {caught}/{len(judged)}{share}; bugs never caught: "
                     f"{len(never)}/{len(bugs)}"
                     + (f" ({len(bug_runs) - len(judged)} harness errors)"
                        if len(judged) < len(bug_runs) else ""))
    correct = [o for o in outcomes if o.group == CORRECT]
    if correct:
        lines.append(false_positive_line(correct))
    return lines


def code_version(base: str | None) -> str:
    """What the copies hold: `base`'s commit, or the working tree on top of HEAD."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", base or "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return f"{base} ({commit})" if base else f"working tree on {commit}"


def check_copy_imports_itself(tree: Path) -> None:
    """A run from the copy must load the copy's node code, not the editable install's,
    in the node processes too: they start with `-P` (nodes.child_python), as here."""
    out = subprocess.run([sys.executable, "-P", "-c",
                          "import nodes.raft.core as c; print(c.__file__)"],
                         cwd=tree, env=copy_first_env(tree), capture_output=True, text=True,
                         check=True).stdout.strip()
    if not Path(out).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"hunt: {tree} imports nodes.raft from {out}, not from itself")


def bug_rows(outcomes: list[Outcome], categories: dict[str, str]) -> list[str]:
    """Pure: one markdown row per bug: its category, K/N per workload and in all."""
    workloads = list(dict.fromkeys(o.label.split()[1] for o in outcomes))
    rows = ["| bug | category | " + " | ".join(workloads) + " | all | caught by |",
            "|---|---|" + "---|" * len(workloads) + "---|---|"]
    for bug, category in categories.items():
        mine = [o for o in outcomes if o.group == bug]
        if not mine:
            continue

        def rate(runs: list[Outcome]) -> str:
            judged = [o for o in runs if o.judged]
            errors = len(runs) - len(judged)
            return (f"{sum(o.exit_code == 1 for o in judged)}/{len(judged)}"
                    + (f" (+{errors} err)" if errors else ""))
        per = [rate([o for o in mine if o.label.split()[1] == w]) for w in workloads]
        caught = [o for o in mine if o.exit_code == 1]
        rows.append(f"| {bug} | {category} | " + " | ".join(per)
                    + f" | {rate(mine)} | {by_checker(caught) or '-'} |")
    return rows


def table(outcomes: list[Outcome], lines: list[str], args: argparse.Namespace,
          loads: tuple[tuple[float, ...], tuple[float, ...]],
          categories: dict[str, str], when: str) -> str:
    stress = " ".join(stress_command() or ["stress?"]) if args.stress else "none"
    head = (f"# Hunt, finished {when}\n\n"
            f"default `faultline run` (no --nemesis), {args.nodes} nodes, "
            f"{args.time_limit:g} s, workloads {', '.join(args.workloads)}, {args.seeds} seeds "
            f"per bug and workload from {args.seed_base}, correct build {args.correct_seeds} "
            f"seeds; code: {getattr(args, 'code', None) or args.base or 'working tree'}; "
            f"parallel {args.parallel}; "
            f"extra load: {stress}; load average at start {loads[0][0]:.1f}, "
            f"at end {loads[1][0]:.1f}\n\n")
    body = "\n".join(f"- {line}" for line in lines)
    return (head + body + "\n\n" + "\n".join(bug_rows(outcomes, categories)) + "\n\n"
            + "\n".join(markdown_rows(outcomes)) + "\n")


def retable(saved: Path, out: Path | None, all_bugs: dict[str, Unplanted]) -> int:
    """The table of a finished hunt, from its JSON (after the table's format changed)."""
    doc = json.loads(saved.read_text())
    outcomes = [Outcome(**r) for r in doc["runs"]]
    args = argparse.Namespace(**doc["args"])
    bugs = [b for b in (args.bug or sorted(all_bugs)) if any(o.group == b for o in outcomes)]
    lines = summarize(outcomes, bugs)
    target = out or saved.with_suffix(".md")
    loads = (tuple(doc["loads"][0]), tuple(doc["loads"][1]))
    when = doc.get("finished") or f"(results dir {saved.parent.name})"
    target.write_text(table(outcomes, lines, args, loads,
                            {b: all_bugs[b].category for b in bugs}, when))
    print(f"table: {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    all_bugs = unplanted_bugs()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bug", action="append", choices=sorted(all_bugs),
                        help="only these bugs (repeatable; default all)")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="runs per bug and workload")
    parser.add_argument("--seed-base", type=int, default=1)
    parser.add_argument("--workload", action="append", dest="workloads",
                        choices=WORKLOADS + ("kv", "rw-register"))
    parser.add_argument("--correct-seeds", type=int, default=CORRECT_SEEDS,
                        help="runs of the correct build (0: none)")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--stress", action="store_true",
                        help="run the bench under stress-ng --cpu 2 (or stress)")
    parser.add_argument("--base", default=None,
                        help="copy this commit (git archive) instead of the working tree")
    parser.add_argument("--out", type=Path, default=None,
                        help="table file (default results/hunt/<time>/table.md)")
    parser.add_argument("--retable", type=Path, default=None, metavar="JSON",
                        help="run nothing: write the table again from a hunt's JSON")
    args = parser.parse_args(argv)
    if args.retable is not None:
        return retable(args.retable, args.out, all_bugs)
    args.workloads = args.workloads or list(WORKLOADS)
    if args.seeds < 0 or args.correct_seeds < 0 or args.parallel < 1:
        parser.error("--seeds and --correct-seeds must be >= 0, --parallel >= 1")
    stress = stress_command() if args.stress else None
    if args.stress and stress is None:
        parser.error("--stress needs stress-ng or stress (scripts/setup.sh installs stress-ng)")
    bugs = args.bug or sorted(all_bugs)
    args.code = code_version(args.base)
    planned = plan(bugs if args.seeds else [], args.workloads, args.seeds, args.seed_base,
                   args.correct_seeds)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = ROOT / "results" / "hunt" / stamp
    out = args.out or results / "table.md"
    results.mkdir(parents=True, exist_ok=True)
    trees = Path(tempfile.mkdtemp(prefix="hunt-trees-"))
    stressor = None
    try:
        copies: dict[str, Path] = {}
        for group in dict.fromkeys(p.group for p in planned):
            patch = None if group == CORRECT else all_bugs[group].patch
            copies[group] = scratch_copy(trees / group, patch, args.base)
        for tree in copies.values():
            check_copy_imports_itself(tree)
        print(f"{len(planned)} runs ({len(bugs)} bugs x {len(args.workloads)} workloads x "
              f"{args.seeds} seeds, correct build {args.correct_seeds}), parallel "
              f"{args.parallel}; runs under {results}", flush=True)
        if stress:
            stressor = subprocess.Popen(stress, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        loads_start = os.getloadavg()
        started = time.monotonic()
        done = 0
        lock = threading.Lock()

        def one(item: tuple[int, Planned]) -> Outcome:
            nonlocal done
            index, p = item
            o = run_faultline(p.group, p.label, run_args(p, args.nodes, args.time_limit),
                              results / "runs" / f"{index:03d}", copies[p.group])
            with lock:
                done += 1
                verdict = ("caught" if o.exit_code == 1 else "valid" if o.exit_code == 0
                           else "unknown" if o.exit_code == 2 else "HARNESS ERROR")
                left = (time.monotonic() - started) / done * (len(planned) - done)
                print(f"[{done}/{len(planned)}] {o.label}: {verdict} (exit {o.exit_code}) "
                      f"invalid {','.join(o.invalid_checkers) or '-'} ({o.seconds:g} s; "
                      f"~{left / 60:.0f} min left)", flush=True)
            return o

        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            outcomes = list(pool.map(one, enumerate(planned)))
        loads = (loads_start, os.getloadavg())
    finally:
        if stressor is not None:
            os.killpg(stressor.pid, signal.SIGTERM)
            stressor.wait()
        shutil.rmtree(trees, ignore_errors=True)
    lines = summarize(outcomes, bugs)
    for line in lines:
        print(line)
    out.parent.mkdir(parents=True, exist_ok=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out.write_text(table(outcomes, lines, args, loads,
                         {b: all_bugs[b].category for b in bugs}, when))
    out.with_suffix(".json").write_text(json.dumps(
        {"args": {k: v for k, v in vars(args).items() if k != "out"} | {"stress": stress},
         "finished": when, "loads": loads, "summary": lines,
         "runs": [asdict(o) for o in outcomes]}, indent=1, default=str))
    print(f"table: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
