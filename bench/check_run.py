"""Where a saved run's whole in-process check spends its time and memory.

Runs `faultline check --in-process RUN_DIR` in a child process and prints its
wall and CPU seconds and peak RSS, then each checker's seconds from the
verdicts.json it wrote; then, in a second child, the run loading alone
(history, log dumps, event lines) with its CPU seconds and peak RSS. The
check rewrites RUN_DIR/verdicts.json and the results dir's verdict table,
as any re-check does.

Prints figures; asserts nothing. Usage:
    python bench/check_run.py RUN_DIR [--target-s 30]
A long run to try it on (docs/benchmarks.md's 20-minute run): `faultline run --workload
register --nodes 5 --concurrency 10 --rate 200 --time-limit 1200 --seed 7 --nemesis
partition,kill,pause,truncate,lose-unsynced --client-option ops_per_key=0`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path


def load_only(run_dir: str) -> dict:
    """In the child: load the run as the checkers see it, phase by phase."""
    from checkers.history import read_history
    from checkers.rundir import HISTORY, load_dumps, load_events, load_run

    out = {}
    t = time.process_time()
    n = len(read_history(Path(run_dir) / HISTORY).ops)
    out["history"] = (time.process_time() - t, n)
    t = time.process_time()
    n = sum(len(d.get("entries", [])) for d in load_dumps(run_dir).values())
    out["log dumps"] = (time.process_time() - t, n)
    t = time.process_time()
    n = sum(len(e) for e in load_events(run_dir).values())
    out["event lines"] = (time.process_time() - t, n)
    t = time.process_time()
    load_run(run_dir)
    out["load_run (all three)"] = (time.process_time() - t, None)
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--target-s", type=float, default=30.0,
                    help="the issue's target for the whole check, printed beside it")
    ap.add_argument("--child-load", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_load:
        print(json.dumps(load_only(str(args.run_dir))))
        return
    faultline = shutil.which("faultline", path=str(Path(sys.executable).parent)) or "faultline"
    print("(a shared, noisy 2-core machine: figures vary by tens of percent run to run)")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([faultline, "check", "--in-process", str(args.run_dir)],
                          capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"faultline check --in-process: exit {proc.returncode}, {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU, peak RSS {after.ru_maxrss / 1024:.0f} MiB "
          f"(target {args.target_s:.0f} s: ratio {wall / args.target_s:.2f})")
    verdicts = json.loads((args.run_dir / "verdicts.json").read_text())
    for name, v in sorted(verdicts.get("checkers", {}).items(),
                          key=lambda kv: -kv[1].get("stats", {}).get("seconds", 0)):
        print(f"  {name:16} {str(v.get('valid')):7} {v['stats'].get('seconds', 0):6.2f} s")
    out = subprocess.run([sys.executable, __file__, "--child-load", str(args.run_dir)],
                         capture_output=True, text=True, check=True)
    load = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"loading alone (CPU s; peak RSS {load.pop('peak_mib'):.0f} MiB):")
    for phase, (seconds, n) in load.items():
        print(f"  {phase:22} {seconds:6.2f} s" + (f"  ({n} items)" if n is not None else ""))


if __name__ == "__main__":
    main()
