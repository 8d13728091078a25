"""History I/O throughput: write 1M ops with HistoryWriter, read them back with
iter_history, and report ops/s both ways plus the peak RSS of reading.

    .venv/bin/python bench/history_io.py [--ops N] [--dir DIR]

Reading runs in a fresh subprocess so its peak RSS is the reader's alone.
Target: >= 200k ops/s each way.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from checkers.history import Op, iter_history, read_history
from harness.run.history import HistoryWriter


def realistic_ops(n: int, seed: int = 1) -> list[Op]:
    """Invoke/completion pairs as the workloads make them: register reads, writes
    and CASes, kv ops with keys, list-append txns, and a few nemesis events."""
    rng = random.Random(seed)
    ops: list[Op] = []
    t = 0
    next_value = 0
    while len(ops) < n:
        t += rng.randrange(1_000, 200_000)
        process = rng.randrange(10)
        node = f"n{rng.randrange(1, 6)}"
        kind = rng.random()
        key = None
        if kind < 0.01:
            ops.append(Op(0, t, "nemesis", "invoke", "partition",
                          {"nodes": ["n1", "n2"], "shape": "majorities-ring",
                           "cut": [["n1", "n3"], ["n2", "n4"]]}))
            ops.append(Op(0, t + 3_000_000, "nemesis", "info", "partition", None))
            continue
        if kind < 0.35:
            f, inv, done = "read", None, rng.randrange(next_value + 1)
        elif kind < 0.6:
            next_value += 1
            f, inv, done = "write", next_value, next_value
            key = f"k{rng.randrange(16)}"
        elif kind < 0.75:
            old, next_value = rng.randrange(next_value + 1), next_value + 1
            f, inv, done = "cas", [old, next_value], [old, next_value]
        else:
            micro = []
            filled = []
            for _ in range(rng.randrange(1, 5)):
                k = rng.randrange(32)
                if rng.random() < 0.5:
                    next_value += 1
                    micro.append(["append", k, next_value])
                    filled.append(["append", k, next_value])
                else:
                    micro.append(["r", k, None])
                    filled.append(["r", k, list(range(rng.randrange(8)))])
            f, inv, done = "txn", micro, filled
        ops.append(Op(0, t, process, "invoke", f, inv, key, node))
        r = rng.random()
        if r < 0.9:
            ops.append(Op(0, t + rng.randrange(100_000, 5_000_000), process, "ok", f, done,
                          key, node))
        elif r < 0.97:
            ops.append(Op(0, t + 1_000_000, process, "fail", f, inv, key, node, "not_leader"))
        else:
            ops.append(Op(0, t + 10_000_000, process, "info", f, inv, key, node, "timeout"))
    return ops[:n]


def write_child(path: str, n: int) -> None:
    """Runs in a subprocess: build the ops, write them, print seconds and ops."""
    ops = realistic_ops(n)
    start = time.perf_counter()
    with HistoryWriter(path) as w:
        for op in ops:
            w.append(op)
    print(f"{time.perf_counter() - start} {len(ops)}")


def read_child(path: str, keep: bool) -> None:
    """Runs in a subprocess: read, then print seconds, ops and peak RSS."""
    start = time.perf_counter()
    if keep:
        count = len(read_history(path).ops)
    else:
        count = sum(1 for _ in iter_history(path))
    elapsed = time.perf_counter() - start
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{elapsed} {count} {rss_kib}")


def child(*args: str) -> list[str]:
    # Each phase is its own process: ru_maxrss survives fork+exec, so a child of
    # a process holding 1M ops would report that process's peak, not its own.
    argv = [sys.executable, __file__, *args]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()


def baseline_rss_kib() -> int:
    """Peak RSS of a subprocess that only imports the reader, to compare against."""
    code = ("import resource, checkers.history; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return int(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--dir", default=None, help="where to write the history (default: tmp)")
    parser.add_argument("--write-child", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--read-child", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_child:
        write_child(args.write_child, args.ops)
        return
    if args.read_child:
        read_child(args.read_child, args.keep)
        return

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = Path(d) / "history.msgpack"
        write_s, count = (float(x) for x in child("--write-child", str(path),
                                                  "--ops", str(args.ops)))
        size = path.stat().st_size
        stream_s, _, stream_rss = (float(x) for x in child("--read-child", str(path)))
        keep_s, _, keep_rss = (float(x) for x in child("--read-child", str(path), "--keep"))
        base_rss = baseline_rss_kib()

    print(f"ops:                     {count:,.0f} ({size / count:.1f} bytes/op, "
          f"{size / 2**20:.1f} MiB)")
    print(f"write (HistoryWriter):   {count / write_s:,.0f} ops/s ({write_s:.2f} s)")
    print(f"read (iter_history):     {count / stream_s:,.0f} ops/s ({stream_s:.2f} s)")
    print(f"read into a list:        {count / keep_s:,.0f} ops/s ({keep_s:.2f} s)")
    print(f"peak RSS, streaming:     {stream_rss / 1024:.1f} MiB "
          f"(interpreter + imports alone: {base_rss / 1024:.1f} MiB)")
    print(f"peak RSS, read_history:  {keep_rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
