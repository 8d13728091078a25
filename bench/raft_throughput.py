"""Acknowledged quorum writes/s and latency of a 3-node raft cluster on loopback.

Real node processes, real fsync (data dirs on a real disk, not tmpfs), one
client thread per concurrent writer, each with its own connection to the
leader. Prints one line per concurrency level; asserts nothing.

    .venv/bin/python bench/raft_throughput.py [--seconds 5] [--concurrency 1 8 32]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

from nodes.raft.client import NodeClient
from nodes.raft.local_cluster import LocalCluster


def writer(address: str, stop_at: float, worker: int, latencies: list[float],
           failures: list[str]) -> None:
    with NodeClient(address, timeout=10.0) as client:
        i = 0
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            try:
                response = client.put(f"k{worker}-{i % 100}", i)
            except OSError as e:
                failures.append(type(e).__name__)
                continue
            if response.ok:
                latencies.append(time.perf_counter() - started)
            else:
                failures.append(response.error or "?")
            i += 1


def measure(address: str, concurrency: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []  # list.append is atomic under the GIL
    failures: list[str] = []
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(target=writer, args=(address, stop_at, w, latencies, failures))
        for w in range(concurrency)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [float("nan")] * 99
    return {
        "writes_per_s": len(latencies) / elapsed,
        "p50_ms": cuts[49] * 1000,
        "p99_ms": cuts[98] * 1000,
        "acked": len(latencies),
        "failed": len(failures),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--tick-ms", type=int, default=50)
    p.add_argument("--dir", type=Path, default=Path("/var/tmp"),
                   help="parent of the data dirs; must be a real disk for fsync to count")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="raft-bench-", dir=args.dir) as root, \
            LocalCluster(Path(root), size=3, tick_ms=args.tick_ms) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        address = cluster.address(leader)
        measure(address, 4, 1.0)  # warm up connections and the page cache
        print(f"3 nodes, loopback, fsync on, tick {args.tick_ms} ms, {args.seconds:g} s per level")
        for concurrency in args.concurrency:
            r = measure(address, concurrency, args.seconds)
            print(
                f"concurrency {concurrency:3d}: {r['writes_per_s']:8.1f} writes/s  "
                f"p50 {r['p50_ms']:7.2f} ms  p99 {r['p99_ms']:7.2f} ms  "
                f"(acked {r['acked']}, failed {r['failed']})",
                flush=True,
            )


if __name__ == "__main__":
    main()
