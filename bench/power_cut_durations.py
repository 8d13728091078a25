"""How long does a power cut take to return? `lose-unsynced` ops over real runs.

    .venv/bin/python bench/power_cut_durations.py [--base REF] [--seeds N] [--seed-base S]
        [--time-limit T] [--nemesis SPEC] [--workload W] [--stress]
    .venv/bin/python bench/power_cut_durations.py --runs RESULTS_DIR ...

Runs `faultline run --workload W --nodes 5 --nemesis SPEC --seed S` one at a
time from a scratch copy (the working tree, or commit REF with --base), then
reads every run's history: each `lose-unsynced` op's duration (its
completion's time minus its invoke's), and prints them with K/N of the ops
over SLOW_S. A power cut that waits out a frozen mount's held fsync (its 60 s
bound, docs/hunt.md "The power cut that took a minute") shows as a 60 s op.
With --runs, only reads run directories already made. Needs root.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from run_outcomes import run_faultline, stress_command, stressed  # noqa: E402
from scratch import copy_tree  # noqa: E402

from checkers.history import iter_history  # noqa: E402

SLOW_S = 5.0
POWER_CUT = "lose-unsynced"


def power_cut_durations(ops: Iterable) -> list[float]:
    """Pure: seconds from each nemesis `lose-unsynced` invoke to its completion
    (a cut still open at the end is left out)."""
    open_at: int | None = None
    out = []
    for op in ops:
        if op.process != "nemesis" or op.f != POWER_CUT:
            continue
        if op.type == "invoke":
            open_at = op.time
        elif open_at is not None:
            out.append((op.time - open_at) / 1e9)
            open_at = None
    return out


def run_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("history.msgpack"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--seed-base", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--nemesis", default="lose-unsynced:all")
    parser.add_argument("--workload", default="register")
    parser.add_argument("--stress", action="store_true")
    parser.add_argument("--runs", type=Path, nargs="*", default=None)
    args = parser.parse_args(argv)
    if args.runs is not None:
        dirs = [d for root in args.runs for d in run_dirs(root)]
    else:
        work = Path(tempfile.mkdtemp(prefix="power-cut-"))
        tree = copy_tree(work / "tree", args.base)
        dirs = []
        with stressed(stress_command() if args.stress else None):
            for seed in range(args.seed_base, args.seed_base + args.seeds):
                outcome = run_faultline(
                    "power-cut", f"seed {seed}",
                    ["--workload", args.workload, "--nodes", "5", "--nemesis", args.nemesis,
                     "--time-limit", str(args.time_limit), "--seed", str(seed)],
                    work / "runs" / f"{seed:03d}", tree)
                print(f"seed {seed}: exit {outcome.exit_code} ({outcome.seconds} s) "
                      f"{outcome.run_dir}", flush=True)
                if outcome.run_dir:
                    dirs.append(Path(outcome.run_dir))
    durations = []
    for d in dirs:
        mine = power_cut_durations(iter_history(d / "history.msgpack"))
        print(f"{d}: " + " ".join(f"{s:.2f}" for s in mine))
        durations += mine
    slow = sum(1 for s in durations if s > SLOW_S)
    top = max(durations, default=0.0)
    print(f"{slow}/{len(durations)} {POWER_CUT} ops over {SLOW_S:g} s "
          f"(longest {top:.2f} s) in {len(dirs)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
