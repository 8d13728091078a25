"""Harness throughput: recorded ops/s and client latency on a fault-free
5-node raft cluster with 10 clients, and the recorder's own cost per op.

    .venv/bin/python bench/harness_throughput.py [--time-limit 20] [--workload register]

Needs root (network namespaces). Target: >= 1,000 ops/s recorded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The repo first: bench/nemesis.py would otherwise shadow the nemesis package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checkers.history import pair_ops, read_history  # noqa: E402
from harness.run.config import RunConfig  # noqa: E402
from harness.run.lifecycle import run_test  # noqa: E402
from harness.run.recorder import Recorder  # noqa: E402


def recorder_cost(n: int = 200_000) -> float:
    """Microseconds per recorded op (invoke + completion counted as two)."""
    with tempfile.TemporaryDirectory() as d:
        rec = Recorder(Path(d) / "history.msgpack")
        started = time.perf_counter()
        for i in range(n // 2):
            rec.record(i % 10, "invoke", "write", i)
            rec.record(i % 10, "ok", "write", i, node="n1")
        elapsed = time.perf_counter() - started
        rec.close()
    return elapsed / n * 1e6


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--workload", default="register")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as results:
        config = RunConfig(db="raft", workload=args.workload, nemesis=[], nodes=args.nodes,
                           concurrency=args.concurrency, rate=0, time_limit=args.time_limit,
                           recovery_time=0.5, final_read_timeout=5)
        outcome = run_test(config, Path(results), stream=sys.stderr)
        ops = read_history(outcome.run_dir / "history.msgpack").ops
        main_phase = [(a, b) for a, b in pair_ops(ops)
                      if b is not None and a.process != "nemesis"
                      and a.time <= args.time_limit * 1e9]
        done = len(main_phase)
        ok = [b.time - a.time for a, b in main_phase if b.type == "ok"]
        print(f"workload {args.workload}, {args.nodes} nodes, {args.concurrency} clients, "
              f"no faults, {args.time_limit:g}s")
        print(f"recorded ops/s:      {done / args.time_limit:8.0f}   (target >= 1000)")
        print(f"ok ops/s:            {len(ok) / args.time_limit:8.0f}")
        if ok:
            print(f"latency p50 / p99:   {percentile(ok, 50) / 1e6:8.1f} / "
                  f"{percentile(ok, 99) / 1e6:.1f} ms   (mean {statistics.mean(ok) / 1e6:.1f} ms)")
        print(f"verdict:             {outcome.verdicts['valid']}")
    cost = recorder_cost()
    print(f"recorder overhead:   {cost:8.1f} us per recorded op "
          f"({1e6 / cost:,.0f} ops/s on one core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
