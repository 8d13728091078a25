"""What Spark costs `faultline check`, against checking in-process.

Side by side in one run, each check a fresh CLI process as a user runs it:
in-process (the reference), Spark embedded and cold (a JVM started per check),
a warm Spark Connect server (`faultline spark serve`), and a standalone cluster
of a master and two one-core workers.
1. 1, 10 and 100 saved register histories (generated, valid, 10 keys): wall
   time per mode, each mode's overhead over in-process, and seconds per extra
   history for 1->10 and 10->100 (equal when growth is linear).
2. One history of --big events (default 1M): wall time and peak RSS of the
   CLI's process tree (our Python, an embedded JVM, its Python workers).

Prints figures; asserts nothing. The machine's load average is printed with
them, since on a shared machine it moves every figure.
Usage: python bench/spark_check.py [--ops N] [--big N] [--skip-scaling] [--skip-big]
       [--no-connect] [--no-cluster]
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
from contextlib import ExitStack
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lin_corpus import generate  # noqa: E402  (bench/ is not a package)

from checkers.spark.ops_table import cached_parquet  # noqa: E402
from harness.results.store import create_run_dir  # noqa: E402
from harness.run.history import HistoryWriter  # noqa: E402
from harness.spark.servers import StandaloneCluster, connect_server, free_port  # noqa: E402

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


def faultline_check(run_dirs: list[Path], how: list[str],
                    watch: bool = False) -> tuple[float, dict[str, int] | None]:
    """Wall time of one `faultline check` CLI process, as a user runs it."""
    argv = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
            "check", *map(str, run_dirs), *how]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    rss = PeakRss(proc.pid) if watch else None
    _, err = proc.communicate()
    elapsed = time.perf_counter() - started
    peak = rss.stop() if rss else None
    if proc.returncode != 0:  # 1 would mean a generated history judged not valid
        sys.exit(f"faultline check {' '.join(how)} failed ({proc.returncode}):\n{err[-2000:]}")
    return elapsed, peak


def modes(connect_url: str | None, cluster_url: str | None) -> dict[str, list[str]]:
    """How each column checks: in-process (the reference), Spark embedded and
    cold (a JVM per check), a warm Spark Connect server, the standalone cluster."""
    out = {"in-process": ["--in-process"], "embedded cold": []}
    if connect_url:
        out["connect warm"] = ["--remote", connect_url]
    if cluster_url:
        out["2-worker cluster"] = ["--master", cluster_url]
    return out


def bench_scaling(results: Path, n_events: int, how: dict[str, list[str]],
                  counts: tuple[int, int, int] = COUNTS) -> None:
    t = time.perf_counter()
    runs = [save_run(results, n_events, seed) for seed in range(max(counts))]
    for d in runs:
        cached_parquet(d)  # made once per history, as a repeated check would find it
    print(f"{len(runs)} histories of {n_events} events, 10 keys "
          f"(generated in {time.perf_counter() - t:.1f}s)")
    print(f"{'histories':>9} " + " ".join(f"{m + ' s':>18}" for m in how) + "  load")
    times: dict[str, dict[int, float]] = {m: {} for m in how}
    for n in counts:
        for m, args in how.items():
            times[m][n], _ = faultline_check(runs[:n], args)
        print(f"{n:9} " + " ".join(f"{times[m][n]:18.1f}" for m in how) + f"  {load()}")
    # A line through the 1- and 100-history points; linear if the 10-history
    # point sits on it (within 10% of the 100-history time, or 2 s of noise).
    # Its intercept less in-process's is what a check pays for Spark itself.
    a, b, c = counts
    fixed = {}
    for name, ts in times.items():
        per = (ts[c] - ts[a]) / (c - a)
        fixed[name] = ts[a] - per * a
        off = ts[b] - (fixed[name] + per * b)
        shape = "linear" if abs(off) <= max(0.1 * ts[c], 2.0) else "not linear"
        print(f"{name:>18}: {fixed[name]:.1f}s fixed + {per:.3f}s per history; "
              f"{b} histories {off:+.1f}s off that line ({shape})")
    for name in how:
        if name != "in-process":
            print(f"{name:>18}: fixed overhead over in-process "
                  f"{times[name][a] - times['in-process'][a]:.1f}s (1 history)")


def bench_big(results: Path, n_events: int, how: dict[str, list[str]]) -> None:
    t = time.perf_counter()
    run = save_run(results, n_events, seed=10_000)
    print(f"one history of {n_events} events, 10 keys "
          f"(generated in {time.perf_counter() - t:.1f}s)")
    t = time.perf_counter()
    cached_parquet(run)
    print(f"  parquet copy: {time.perf_counter() - t:.1f}s, "
          f"{(run / 'history.parquet').stat().st_size >> 20} MiB")
    for name, args in how.items():
        elapsed, peak = faultline_check([run], args, watch=True)
        figures = ", ".join(f"{k} {v >> 20} MiB" for k, v in (peak or {}).items()
                            if v or k == "driver python")
        print(f"  {name:>18}: {elapsed:.1f}s; peak RSS of the CLI's tree: {figures}  "
              f"(load {load()})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=20_000, help="events per history for 1/10/100")
    p.add_argument("--big", type=int, default=1_000_000, help="events in the big history")
    p.add_argument("--counts", default=",".join(map(str, COUNTS)),
                   help="three history counts for the scaling table (default 1,10,100)")
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--skip-big", action="store_true")
    p.add_argument("--no-connect", action="store_true", help="no Spark Connect column")
    p.add_argument("--no-cluster", action="store_true", help="no standalone-cluster column")
    args = p.parse_args()
    print(f"load average at start: {load()} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp, ExitStack() as stack:
        connect_url = cluster_url = None
        if not args.no_connect:
            port = free_port()
            server = connect_server(Path(tmp) / "connect.log", port).start()
            stack.callback(server.stop)
            server.wait_ready()
            connect_url = f"sc://127.0.0.1:{port}"
            # The first check through a new server starts its Python workers:
            # that is the server's start, paid once, not any check's.
            warm = save_run(Path(tmp) / "warm-up", 2_000, seed=99)
            faultline_check([warm], ["--remote", connect_url])
        if not args.no_cluster:
            cluster = stack.enter_context(StandaloneCluster(Path(tmp) / "cluster", workers=2))
            cluster_url = cluster.url
        how = modes(connect_url, cluster_url)
        if not args.skip_scaling:
            a, b, c = (int(x) for x in args.counts.split(","))
            bench_scaling(Path(tmp) / "scaling", args.ops, how, (a, b, c))
        if not args.skip_big:
            bench_big(Path(tmp) / "big", args.big, how)


if __name__ == "__main__":
    main()
