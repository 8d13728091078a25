"""What Spark costs `faultline check`, against checking in-process.

1. 1, 10 and 100 saved register histories (generated, valid, 10 keys): wall
   time of `faultline check` through Spark and `faultline check --in-process`,
   each a fresh CLI process as a user runs it (so Spark's figure includes its
   JVM start), the difference (Spark's overhead), and seconds per extra
   history for 1->10 and 10->100 (equal when growth is linear).
2. One history of --big events (default 1M): wall time and peak RSS of the
   Spark driver (our Python process and the JVM) and of the Python workers,
   against in-process.

Prints figures; asserts nothing. The machine's load average is printed with
them, since on a shared machine it moves every figure.
Usage: python bench/spark_check.py [--ops N] [--big N] [--skip-scaling] [--skip-big]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lin_corpus import generate  # noqa: E402  (bench/ is not a package)

from checkers.spark.ops_table import cached_parquet  # noqa: E402
from harness.results.store import create_run_dir  # noqa: E402
from harness.run.history import HistoryWriter  # noqa: E402

COUNTS = (1, 10, 100)


def save_run(results: Path, n_events: int, seed: int) -> Path:
    """A run dir holding a generated valid register-per-key history."""
    run_dir = create_run_dir(results)
    ops = generate(n_events // 2, keys=10, processes=10, info_rate=0.02, seed=seed)
    with HistoryWriter(run_dir / "history.msgpack", fsync_interval=60) as w:
        for op in ops:
            w.append(op)
    config = {"checkers": ["linearizability"], "lin_model": "register-kv",
              "lin_options": {"time_limit": None, "memory_limit_mb": 8192}}
    (run_dir / "run.json").write_text(json.dumps(
        {"run_id": run_dir.name, "config": config, "status": "complete"}))
    return run_dir


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


class PeakRss:
    """Samples the RSS of a process tree: the CLI's own Python, the JVM, and the
    Python workers the JVM forks (its descendants)."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = {"driver python": 0, "jvm": 0, "workers (sum)": 0, "one worker": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        jvm = workers = one = 0
        try:
            mine = self.root.memory_info().rss
            for child in self.root.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                    if "java" in child.name():
                        jvm += rss
                    else:
                        workers += rss
                        one = max(one, rss)
                except psutil.Error:
                    continue
        except psutil.Error:
            return
        for k, v in (("driver python", mine), ("jvm", jvm), ("workers (sum)", workers),
                     ("one worker", one)):
            self.peak[k] = max(self.peak[k], v)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return self.peak


def faultline_check(run_dirs: list[Path], in_process: bool,
                    watch: bool = False) -> tuple[float, dict[str, int] | None]:
    argv = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
            "check", *map(str, run_dirs)]
    if in_process:
        argv.append("--in-process")
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    rss = PeakRss(proc.pid) if watch else None
    _, err = proc.communicate()
    elapsed = time.perf_counter() - started
    peak = rss.stop() if rss else None
    if proc.returncode != 0:  # 1 would mean a generated history judged not valid
        sys.exit(f"faultline check failed ({proc.returncode}):\n{err[-2000:]}")
    return elapsed, peak


def bench_scaling(results: Path, n_events: int) -> None:
    t = time.perf_counter()
    runs = [save_run(results, n_events, seed) for seed in range(max(COUNTS))]
    for d in runs:
        cached_parquet(d)  # made once per history, as a repeated check would find it
    print(f"{len(runs)} histories of {n_events} events, 10 keys "
          f"(generated in {time.perf_counter() - t:.1f}s)")
    print(f"{'histories':>9} {'spark s':>8} {'in-process s':>13} {'overhead s':>11}  load")
    spark_t, local_t = {}, {}
    for n in COUNTS:
        local_t[n], _ = faultline_check(runs[:n], in_process=True)
        spark_t[n], _ = faultline_check(runs[:n], in_process=False)
        print(f"{n:9} {spark_t[n]:8.1f} {local_t[n]:13.1f} {spark_t[n] - local_t[n]:11.1f}  "
              f"{load()}")
    # A line through the 1- and 100-history points; linear if the 10-history
    # point sits on it (within 10% of the 100-history time, or 2 s of noise).
    a, b, c = COUNTS
    for name, ts in (("spark", spark_t), ("in-process", local_t)):
        per = (ts[c] - ts[a]) / (c - a)
        fixed = ts[a] - per * a
        off = ts[b] - (fixed + per * b)
        shape = "linear" if abs(off) <= max(0.1 * ts[c], 2.0) else "not linear"
        print(f"{name:>10}: {fixed:.1f}s fixed + {per:.3f}s per history; "
              f"{b} histories {off:+.1f}s off that line ({shape})")


def bench_big(results: Path, n_events: int) -> None:
    t = time.perf_counter()
    run = save_run(results, n_events, seed=10_000)
    print(f"one history of {n_events} events, 10 keys "
          f"(generated in {time.perf_counter() - t:.1f}s)")
    t = time.perf_counter()
    cached_parquet(run)
    print(f"  parquet copy: {time.perf_counter() - t:.1f}s, "
          f"{(run / 'history.parquet').stat().st_size >> 20} MiB")
    for in_process in (True, False):
        elapsed, peak = faultline_check([run], in_process, watch=True)
        name = "in-process" if in_process else "spark"
        figures = ", ".join(f"{k} {v >> 20} MiB" for k, v in (peak or {}).items()
                            if v or k == "driver python")
        print(f"  {name:>10}: {elapsed:.1f}s; peak RSS {figures}  (load {load()})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=20_000, help="events per history for 1/10/100")
    p.add_argument("--big", type=int, default=1_000_000, help="events in the big history")
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--skip-big", action="store_true")
    args = p.parse_args()
    print(f"load average at start: {load()} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        if not args.skip_scaling:
            bench_scaling(Path(tmp) / "scaling", args.ops)
        if not args.skip_big:
            bench_big(Path(tmp) / "big", args.big)


if __name__ == "__main__":
    main()
