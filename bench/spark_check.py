"""What Spark costs `faultline check`, against checking in-process, and
whether a second worker helps.

Side by side in one run, each check a fresh CLI process as a user runs it:
in-process (the reference), Spark embedded and cold (a JVM started per check),
a warm Spark Connect server (`faultline spark serve`), and standalone clusters
of a master and two, and one, one-core workers.
1. 1, 10 and 100 saved register histories (generated, valid, 10 keys): wall
   time per mode, each mode's overhead over in-process, and seconds per extra
   history for 1->10 and 10->100 (equal when growth is linear).
2. Big single histories, each checked whole by every mode, the Spark modes
   splitting it (`--split-from 0`: Elle's cycle search one strongly connected
   component per task, divergence one offset range per task), and the
   2-worker cluster once more without splitting:
   - `register`: --big events of a generated register history (linearizability
     per key);
   - `elle`: bench/elle.py's history (--elle-txns list-append txns from
     `serial_history`, max 256 appends a key), valid;
   - `elle-stale`: the same with --stale of reads stale: cycles in many
     components;
   - `run`: a saved run dir (--run, e.g. docs/benchmarks.md's 20-minute all-faults
     register run), all its checkers.
   Figures: wall, and CPU seconds of everything the check ran (the CLI's
   process tree, plus what the cluster's JVMs and their executors and Python
   workers used meanwhile); for the embedded modes, peak RSS too.

Prints figures; asserts nothing. The machine's load average is printed with
them, since on a shared machine it moves every wall-clock figure.
Usage: python bench/spark_check.py [--ops N] [--big N] [--elle-txns N] [--stale P]
       [--run RUN_DIR] [--skip-scaling] [--skip-big] [--bigs register,elle,elle-stale,run]
       [--no-embedded] [--no-connect] [--no-cluster]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import psutil

# bench/ off the path (Python puts a script's own dir first): bench/nemesis.py
# would hide the nemesis package. lin_corpus is loaded from its file instead.
_HERE = Path(__file__).resolve().parent
sys.path = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("lin_corpus", _HERE / "lin_corpus.py")
_lin_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lin_corpus)
generate = _lin_corpus.generate

from checkers.elle.simulate import serial_history  # noqa: E402
from checkers.spark.ops_table import cached_parquet  # noqa: E402
from harness.results.store import create_run_dir  # noqa: E402
from harness.run.history import HistoryWriter  # noqa: E402
from harness.spark.servers import StandaloneCluster, connect_server, free_port  # noqa: E402

COUNTS = (1, 10, 100)


def save_run(results: Path, n_events: int, seed: int) -> Path:
    """A run dir holding a generated valid register-per-key history."""
    ops = generate(n_events // 2, keys=10, processes=10, info_rate=0.02, seed=seed)
    config = {"checkers": ["linearizability"], "lin_model": "register-kv",
              "lin_options": {"time_limit": None, "memory_limit_mb": 8192}}
    return write_run(results, ops, config)


def write_run(results: Path, ops: list, config: dict) -> Path:
    run_dir = create_run_dir(results)
    with HistoryWriter(run_dir / "history.msgpack", fsync_interval=60) as w:
        for op in ops:
            w.append(op)
    (run_dir / "run.json").write_text(json.dumps(
        {"run_id": run_dir.name, "config": config, "status": "complete"}))
    return run_dir


def save_elle_run(results: Path, txns: int, stale: float, seed: int = 1) -> Path:
    """bench/elle.py's list-append history as a run dir judged by Elle."""
    ops = serial_history(txns, keys=10, concurrency=10, max_writes_per_key=256,
                         p_fail=0.02, p_info=0.02, p_stale=stale, rng=random.Random(seed))
    return write_run(results, ops, {"workload": "list-append", "checkers": ["elle"]})


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


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds of these processes and their reaped children, so far."""
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
            for child in psutil.Process(pid).children(recursive=True):
                c = child.cpu_times()
                total += c.user + c.system + c.children_user + c.children_system
        except psutil.Error:
            continue
    return total


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def faultline_check(run_dirs: list[Path], how: list[str], watch: bool = False,
                    services: list[int] = ()) -> tuple[float, float, dict[str, int] | None]:
    """Wall and CPU seconds of one `faultline check` CLI process, as a user
    runs it (CPU: its tree, and the `services` JVMs' trees meanwhile)."""
    argv = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
            "check", *map(str, run_dirs), *how]
    cpu0, svc0 = children_cpu(), tree_cpu(list(services))
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    rss = PeakRss(proc.pid) if watch else None
    _, err = proc.communicate()
    elapsed = time.perf_counter() - started
    cpu = children_cpu() - cpu0 + tree_cpu(list(services)) - svc0
    peak = rss.stop() if rss else None
    if proc.returncode not in (0, 1):  # 1: a history judged not valid (elle-stale)
        sys.exit(f"faultline check {' '.join(how)} failed ({proc.returncode}):\n{err[-2000:]}")
    return elapsed, cpu, peak


def modes(connect_url: str | None, clusters: dict[str, str],
          embedded: bool = True) -> dict[str, list[str]]:
    """How each column checks: in-process (the reference), Spark embedded and
    cold (a JVM per check), a warm Spark Connect server, the standalone clusters."""
    out = {"in-process": ["--in-process"]}
    if embedded:
        out["embedded cold"] = []
    if connect_url:
        out["connect warm"] = ["--remote", connect_url]
    for name, url in clusters.items():
        out[name] = ["--master", url]
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
            times[m][n], _, _ = faultline_check(runs[:n], args)
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


NOT_SPLIT = str(10 ** 15)


def bench_big(results: Path, name: str, run: Path, how: dict[str, list[str]],
              services: dict[str, list[int]]) -> None:
    t = time.perf_counter()
    cached_parquet(run)
    config = json.loads((run / "run.json").read_text()).get("config") or {}
    checkers = config.get("checkers") or "its workload's"
    print(f"{name}: {run.name} (checkers: {checkers}); "
          f"parquet copy "
          f"{time.perf_counter() - t:.1f}s, "
          f"{(run / 'history.parquet').stat().st_size >> 20} MiB")
    columns = {m: a if m == "in-process" else [*a, "--split-from", "0"] for m, a in how.items()}
    for m, a in how.items():
        if "cluster" in m and "2-worker" in m:
            columns[f"{m}, not split"] = [*a, "--split-from", NOT_SPLIT]
    for m, args in columns.items():
        embedded = m in ("in-process", "embedded cold")
        elapsed, cpu, peak = faultline_check(
            [run], args, watch=embedded,
            services=next((pids for c, pids in services.items() if m.startswith(c)), []))
        figures = ", ".join(f"{k} {v >> 20} MiB" for k, v in (peak or {}).items() if v)
        print(f"  {m:>28}: {elapsed:6.1f}s wall {cpu:6.1f}s CPU"
              f"{'; peak RSS ' + figures if figures else ''}  (load {load()})")


BIGS = ("register", "elle", "elle-stale", "run")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=20_000, help="events per history for 1/10/100")
    p.add_argument("--big", type=int, default=1_000_000,
                   help="events in the big register history")
    p.add_argument("--elle-txns", type=int, default=100_000,
                   help="txns in the big list-append histories (bench/elle.py's size)")
    p.add_argument("--stale", type=float, default=0.0005,
                   help="share of stale reads in elle-stale")
    p.add_argument("--run", type=Path, help="a saved run dir to check whole (copied first)")
    p.add_argument("--bigs", default=",".join(BIGS), help="which big histories")
    p.add_argument("--counts", default=",".join(map(str, COUNTS)),
                   help="three history counts for the scaling table (default 1,10,100)")
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--skip-big", action="store_true")
    p.add_argument("--no-embedded", action="store_true", help="no embedded-Spark column")
    p.add_argument("--no-connect", action="store_true", help="no Spark Connect column")
    p.add_argument("--no-cluster", action="store_true", help="no standalone-cluster columns")
    args = p.parse_args()
    print(f"load average at start: {load()} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp, ExitStack() as stack:
        connect_url = None
        clusters: dict[str, str] = {}
        services: dict[str, list[int]] = {}
        if not args.no_connect:
            port = free_port()
            server = connect_server(Path(tmp) / "connect.log", port).start()
            stack.callback(server.stop)
            server.wait_ready()
            connect_url = f"sc://127.0.0.1:{port}"
            services["connect warm"] = [server.proc.pid]
            # The first check through a new server starts its Python workers:
            # that is the server's start, paid once, not any check's.
            warm = save_run(Path(tmp) / "warm-up", 2_000, seed=99)
            faultline_check([warm], ["--remote", connect_url])
        if not args.no_cluster:
            for workers in (2, 1):
                name = f"{workers}-worker cluster"
                cluster = stack.enter_context(
                    StandaloneCluster(Path(tmp) / f"cluster-{workers}", workers=workers))
                clusters[name] = cluster.url
                services[name] = [s.proc.pid for s in cluster.services]
        how = modes(connect_url, clusters, not args.no_embedded)
        if not args.skip_scaling:
            a, b, c = (int(x) for x in args.counts.split(","))
            bench_scaling(Path(tmp) / "scaling", args.ops, how, (a, b, c))
        if args.skip_big:
            return
        bigs = args.bigs.split(",")
        results = Path(tmp) / "big"
        runs = {}
        if "register" in bigs:
            runs[f"register, {args.big} events"] = save_run(results, args.big, seed=10_000)
        if "elle" in bigs:
            runs[f"elle, {args.elle_txns} txns"] = save_elle_run(results, args.elle_txns, 0.0)
        if "elle-stale" in bigs:
            runs[f"elle, {args.elle_txns} txns, {args.stale:g} stale"] = save_elle_run(
                results, args.elle_txns, args.stale)
        if "run" in bigs and args.run:
            copy = results / args.run.name
            shutil.copytree(args.run, copy, ignore=shutil.ignore_patterns(
                "verdicts.json", "history.parquet", "*.html"))
            runs[f"run {args.run.name}"] = copy
        for name, run in runs.items():
            bench_big(results, name, run, how, services)


if __name__ == "__main__":
    main()
