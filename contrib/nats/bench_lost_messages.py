"""How often a JetStream cluster loses acknowledged messages: N seeded runs of
the log workload under one nemesis, each judged; prints, per run, the
acknowledged appends and how many of them the final reads lack, then K/N
invalid. Uses only the `faultline` CLI.

    python contrib/nats/bench_lost_messages.py [--runs 5] [--nemesis lose-unsynced:all]

Needs root, nats-server, and this plugin installed (pip install -e contrib/nats).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def one_run(seed: int, args: argparse.Namespace, results: Path) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--system", "nats", "--workload", "log",
         "--client-option", "logs=1", "--nemesis", args.nemesis, "--seed", str(seed),
         "--time-limit", str(args.time_limit), "--nodes", str(args.nodes),
         "--nemesis-interval", str(args.nemesis_interval), "--results", str(results),
         "--recovery-time", str(args.recovery_time),
         *(["--client-option", f"reads={args.reads}"] if args.reads else [])],
        capture_output=True, text=True)
    found = re.search(r"verdict: \w+\s+\((.+)\)", proc.stdout)
    if not found:
        raise SystemExit(f"seed {seed}: no verdict (exit {proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}")
    run_dir = Path(found.group(1))
    final = json.loads((run_dir / "run.json").read_text()).get("final_reads") or {}
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    return proc.returncode, {**verdicts, "final_reads": final, "run_dir": run_dir.name}


def lost_acks(durability: dict) -> tuple[int, str]:
    """Acknowledged appends, and how many a final read lacks (pure; "at least
    N" when the checker left anomalies out of its list)."""
    stats = durability.get("stats") or {}
    acked = (stats.get("writes") or {}).get("ok", 0)
    lost = sum(1 for a in durability.get("anomalies") or [] if a.get("type") == "lost-write")
    return acked, (f"at least {lost}" if stats.get("anomalies_omitted") else str(lost))


def final_reads(verdicts: dict) -> str:
    """How many of the final reads succeeded (pure): with none, every loss
    claimed rests on a read made during the faults, which a lagging or
    deposed replica may have served."""
    final = verdicts.get("final_reads") or {}
    return f"{final.get('succeeded', '?')}/{final.get('asked', '?')}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--nemesis", default="lose-unsynced:all")
    p.add_argument("--time-limit", type=float, default=30)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--nemesis-interval", type=float, default=5)
    p.add_argument("--recovery-time", type=float, default=5)
    p.add_argument("--reads", default=None, help="the client's reads= option (consumer, leader)")
    p.add_argument("--results", type=Path, default=None)
    args = p.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="nats-bench-"))
    invalid = 0
    for seed in range(args.first_seed, args.first_seed + args.runs):
        code, verdicts = one_run(seed, args, results)
        durability = (verdicts.get("checkers") or {}).get("durability") or {}
        acked, lost = lost_acks(durability)
        kinds = Counter(a.get("type", "?") for a in durability.get("anomalies") or [])
        invalid += code == 1
        print(f"seed {seed}: exit {code}, {lost}/{acked} acknowledged appends lost, "
              f"anomalies {dict(kinds)}, final reads "
              f"{final_reads(verdicts)} ({verdicts.get('run_dir')})", flush=True)
    print(f"log x {args.nemesis}, {args.nodes} nodes: invalid in {invalid}/{args.runs} runs "
          f"(results in {results})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
