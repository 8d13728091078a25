"""Benchmark the Elle list-append checker on histories with a known-good answer.

Generates a list-append history from a serial execution (10 active keys, each
retired after --max-writes appends, 10 concurrent processes, 1-4 micro-ops
per txn), checks it, and prints the check time and the process's peak
resident memory during the check (history included). Each size runs in a
fresh process so one size's garbage does not inflate the next one's peak.

    .venv/bin/python bench/elle.py                 # 10k and 100k txns
    .venv/bin/python bench/elle.py --txns 50000

Targets (issue 8): 100k txns in under 60 s and 4 GiB.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time


def _peak_rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    try:  # Linux: "5" resets VmHWM to the current RSS
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def measure(txns: int, max_writes: int, seed: int, stale: float) -> dict:
    from checkers import elle
    from checkers.elle.simulate import serial_history

    t0 = time.monotonic()
    ops = serial_history(txns, keys=10, concurrency=10, max_writes_per_key=max_writes,
                         p_fail=0.02, p_info=0.02, p_stale=stale, rng=random.Random(seed))
    generated = time.monotonic() - t0
    _reset_peak_rss()
    t1 = time.monotonic()
    verdict = elle.check(ops)
    checked = time.monotonic() - t1
    return {"txns": txns, "ops": len(ops), "generate_s": round(generated, 2),
            "check_s": round(checked, 2), "peak_rss_mib": round(_peak_rss_kib() / 1024),
            "valid": verdict["valid"], "anomalies": len(verdict["anomalies"]),
            "graph_s": verdict["stats"]["graph_s"],
            "cycle_search_s": verdict["stats"]["cycle_search_s"],
            "edges": verdict["stats"]["edges"],
            "largest_component": verdict["stats"]["largest_component"],
            "anomaly_counts": verdict["stats"]["anomaly_counts"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--txns", type=int, action="append",
                   help="history size in txns (repeatable; default 10000 and 100000)")
    p.add_argument("--max-writes", type=int, default=256,
                   help="appends per key before it is retired (default %(default)s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stale", type=float, default=0.0,
                   help="share of reads a planted bug makes stale (default %(default)s: a "
                        "valid history); shows the cycle search on large cyclic components")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.txns[0], args.max_writes, args.seed, args.stale)))
        return
    for n in args.txns or [10_000, 100_000]:
        out = subprocess.run([sys.executable, __file__, "--child", "--txns", str(n),
                              "--max-writes", str(args.max_writes), "--seed", str(args.seed),
                              "--stale", str(args.stale)],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        print(f"{r['txns']:>7} txns ({r['ops']} ops): check {r['check_s']:.2f} s "
              f"(graph {r['graph_s']:.2f} s, cycle search {r['cycle_search_s']:.2f} s), "
              f"peak RSS {r['peak_rss_mib']} MiB, valid={r['valid']}, "
              f"anomalies={r['anomalies']}; generated in {r['generate_s']:.2f} s")
        print(f"{'':>7} edges: {r['edges']}")
        if r["anomaly_counts"]:
            print(f"{'':>7} largest cyclic component {r['largest_component']} txns; "
                  f"anomalies {r['anomaly_counts']}")


if __name__ == "__main__":
    main()
