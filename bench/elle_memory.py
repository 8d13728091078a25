"""Calibrate the Elle checkers' memory estimate: peak RSS of a check against
the history's size, on generated histories of several sizes.

Each size runs in a fresh process: it generates a list-append history (as
bench/elle.py does; `--stale` plants stale reads, whose cycles make the
check build its graph of record over large components, the costly case),
notes its RSS with the history in memory, then checks it with no memory
budget and reports the peak RSS the check added, per txn and per micro-op,
beside `checkers.elle.budget.estimate_bytes` for the same history. The
estimate must stay above every measured figure.

    .venv/bin/python bench/elle_memory.py                      # 25k .. 200k txns
    .venv/bin/python bench/elle_memory.py --txns 500000 --stale 0.05
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def measure(txns: int, stale: float, seed: int, budget_s: float, max_mops: int) -> dict:
    import gc

    from checkers import elle
    from checkers.elle.budget import estimate_bytes, history_size
    from checkers.elle.simulate import serial_history

    ops = serial_history(txns, keys=10, concurrency=10, max_writes_per_key=256,
                         max_mops=max_mops,
                         p_fail=0.02, p_info=0.02, p_stale=stale, rng=random.Random(seed))
    # What a check imports on a big history, imported before the baseline:
    # a cost of the process, not of the history.
    import networkx  # noqa: F401
    import scipy.sparse.csgraph  # noqa: F401
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from the RSS now
    before = _rss_kib("VmRSS")
    verdict = elle.check(ops, cycle_search_budget_s=budget_s, memory_limit_mb=None)
    peak = _rss_kib("VmHWM")
    size = history_size(ops)
    used = (peak - before) * 1024
    return {"txns": size.txns, "mops": size.mops, "stale": stale,
            "history_rss_mib": round(before / 1024), "check_peak_mib": round(used / 2**20),
            "bytes_per_txn": round(used / size.txns), "bytes_per_mop": round(used / size.mops),
            "estimate_mib": round(estimate_bytes(size) / 2**20),
            "valid": verdict["valid"], "largest_component": verdict["stats"].get(
                "largest_component")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--txns", type=int, action="append",
                   help="history size in txns (repeatable; default 25k, 50k, 100k, 200k)")
    p.add_argument("--stale", type=float, action="append",
                   help="share of stale reads (repeatable; default 0 and 0.05)")
    p.add_argument("--max-mops", type=int, action="append",
                   help="most micro-ops per txn (repeatable; default 4)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget", type=float, default=10.0,
                   help="cycle search budget, seconds (default %(default)s)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.txns[0], args.stale[0], args.seed, args.budget,
                                 args.max_mops[0])))
        return
    print(f"load {os.getloadavg()[0]:.1f}")
    sizes = [(stale, m, n) for stale in args.stale or [0.0, 0.05]
             for m in args.max_mops or [4]
             for n in args.txns or [25_000, 50_000, 100_000, 200_000]]
    for stale, max_mops, n in sizes:
        out = subprocess.run([sys.executable, __file__, "--child", "--txns", str(n),
                              "--stale", str(stale), "--seed", str(args.seed),
                              "--budget", str(args.budget), "--max-mops", str(max_mops)],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        print(f"{r['txns']:>7} txns, {r['mops']:>8} mops (at most {max_mops} a txn), "
              f"stale {r['stale']:.2f}: "
              f"history {r['history_rss_mib']} MiB; check peak +{r['check_peak_mib']} MiB "
              f"= {r['bytes_per_txn']} B/txn = {r['bytes_per_mop']} B/mop; estimate "
              f"{r['estimate_mib']} MiB; valid={r['valid']}, largest component "
              f"{r['largest_component']}", flush=True)


if __name__ == "__main__":
    main()
