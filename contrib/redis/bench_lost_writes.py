"""How often faultline catches Redis losing acknowledged writes: N seeded runs
of one workload under one nemesis, each judged; prints K/N invalid and what
the linearizability checker found. Uses only the `faultline` CLI.

    python contrib/redis/bench_lost_writes.py [--runs 5] [--nemesis partition:isolate-leader]

Needs root, redis-server, and this plugin installed (pip install -e contrib/redis).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def one_run(seed: int, args: argparse.Namespace, results: Path) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--system", "redis",
         "--workload", args.workload, "--nemesis", args.nemesis, "--seed", str(seed),
         "--time-limit", str(args.time_limit), "--nemesis-interval", str(args.interval),
         "--results", str(results)], capture_output=True, text=True)
    found = re.search(r"verdict: \w+\s+\((.+)\)", proc.stdout)
    if not found:
        raise SystemExit(f"seed {seed}: no verdict (exit {proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}")
    return proc.returncode, json.loads((Path(found.group(1)) / "verdicts.json").read_text())


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--workload", default="register")
    p.add_argument("--nemesis", default="partition:isolate-leader")
    p.add_argument("--time-limit", type=float, default=30)
    p.add_argument("--interval", type=float, default=6)
    p.add_argument("--results", type=Path, default=None)
    args = p.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="redis-bench-"))
    invalid = 0
    for seed in range(args.first_seed, args.first_seed + args.runs):
        code, verdicts = one_run(seed, args, results)
        lin = (verdicts.get("checkers") or {}).get("linearizability") or {}
        kinds = sorted({a.get("type", "?") for a in lin.get("anomalies") or []})
        invalid += code == 1
        print(f"seed {seed}: exit {code}, linearizability {lin.get('valid')}, "
              f"{len(lin.get('anomalies') or [])} anomalies {kinds}", flush=True)
    print(f"{args.workload} x {args.nemesis}: invalid in {invalid}/{args.runs} runs "
          f"(results in {results})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
