"""Benchmark the Elle list-append checker on histories with a known-good answer.

Generates a list-append history from a serial execution (10 active keys, each
retired after --max-writes appends, 10 concurrent processes, 1-4 micro-ops
per txn), writes it as a msgpack history, and measures:

- check alone: `elle.check` on ops already in memory, txn/s (wall and CPU,
  the best of --repeat checks);
- end to end: reading the history file and checking it, txn/s;
- the process's peak resident memory during the check (history included);
- the fast path (`checkers.elle.fast`: columns, no Op or Txn per op), which
  `check-elle` tries first on a msgpack list-append history: reading the
  file and judging it, txn/s, and whether it answered or deferred to the
  object path (a history with any anomaly is deferred).

Each size runs in a fresh process so one size's garbage does not inflate the
next one's peak. With --edn FILE (e.g. Elle's histories/huge-scc.edn) it also
times `faultline check-elle FILE` end to end in a fresh process (CPU of the
child: interpreter start, imports, read and check; with bytecode cached, and
also without where the shell sets PYTHONDONTWRITEBYTECODE), and the EDN read
alone in MB/s. The CPU figures say how much of a wall time was the
machine's other load, and each figure is printed with the load average
(1 min) at the time, since the machine is shared. A history of fewer than
15k txns is judged without numpy or scipy (see `checkers/elle/graph.py`): the
--edn figure of a fresh process includes neither import.

    .venv/bin/python bench/elle.py                 # 10k and 100k txns
    .venv/bin/python bench/elle.py --txns 50000 --edn /path/to/huge-scc.edn
    .venv/bin/python bench/elle.py --edn-only --edn /path/to/huge-scc.edn
    .venv/bin/python bench/elle.py --txns 100000 --compare main --rounds 3 \
        --edn /path/to/huge-scc.edn                # side by side with main's code

With --compare REF the same figures are also taken with the code of git
revision REF (checked out in a temporary `git worktree`, imported first
through PYTHONPATH), the two alternating round by round so the machine's
load falls on both alike, and each figure is printed with the ratio
REF / this tree (above 1: this tree is faster). Every size then also gets
`faultline check-elle` on its msgpack history in a fresh process (what a
user types: interpreter, imports, read and check), CPU and peak resident
memory of the child (its own rusage, by wait4), the best of --cli-runs / 5
per round, and its verdict (to show both trees judge alike).

Targets (issue 16): check alone >= 100k txn/s on 100k txns, <= 400 MiB peak;
EDN read >= 5 MB/s; huge-scc end to end < 0.5 s. Issue 29: >= 100k txn/s end
to end, read included (docs/benchmarks.md has where it stands).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


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


def measure(txns: int, max_writes: int, seed: int, stale: float, repeat: int = 1,
            keep: str | None = None) -> dict:
    from checkers import elle
    from checkers.elle.simulate import serial_history
    from checkers.history import pack_op, read_history

    t0 = time.monotonic()
    ops = serial_history(txns, keys=10, concurrency=10, max_writes_per_key=max_writes,
                         p_fail=0.02, p_info=0.02, p_stale=stale, rng=random.Random(seed))
    generated = time.monotonic() - t0
    with tempfile.TemporaryDirectory() as d:
        path = keep or os.path.join(d, "history.msgpack")
        with open(path, "wb") as f:
            f.writelines(pack_op(op) for op in ops)
        # scipy is imported on first use, by a graph of 100k edges or more;
        # importing it (~0.3 s) is a cost of the process, not of the check
        # (the --edn figure shows what a fresh process pays in all).
        import scipy.sparse.csgraph  # noqa: F401
        _reset_peak_rss()
        t1, c1 = time.monotonic(), time.process_time()
        verdict = elle.check(ops)
        checked, checked_cpu = time.monotonic() - t1, time.process_time() - c1
        peak = _peak_rss_kib()
        for _ in range(repeat - 1):  # the machine is shared: the best says most
            t1, c1 = time.monotonic(), time.process_time()
            elle.check(ops)
            checked = min(checked, time.monotonic() - t1)
            checked_cpu = min(checked_cpu, time.process_time() - c1)
        del ops
        t2, c2 = time.monotonic(), time.process_time()
        history = read_history(path)
        # as check-elle does: what the reader vouches for (a tree from
        # before History.prefix_keys, in --compare, checks without)
        keys = getattr(history, "prefix_keys", None)
        elle.check(history.ops, **({"prefix_keys": keys} if keys is not None else {}))
        del history
        end_to_end, end_to_end_cpu = time.monotonic() - t2, time.process_time() - c2
        fast = _fast_end_to_end(path, repeat)
    return {**fast, "txns": txns, "generate_s": round(generated, 2),
            "check_s": round(checked, 2), "check_cpu_s": round(checked_cpu, 2),
            "end_to_end_s": round(end_to_end, 2), "end_to_end_cpu_s": round(end_to_end_cpu, 2),
            "peak_rss_mib": round(peak / 1024),
            "valid": verdict["valid"], "anomalies": len(verdict["anomalies"]),
            "graph_s": verdict["stats"]["graph_s"],
            "cycle_search_s": verdict["stats"]["cycle_search_s"],
            "edges": verdict["stats"]["edges"],
            "largest_component": verdict["stats"]["largest_component"],
            "anomaly_counts": verdict["stats"]["anomaly_counts"]}


def _fast_end_to_end(path: str, repeat: int) -> dict:
    """The fast path (`checkers.elle.fast`, what `check-elle` tries first on
    a msgpack list-append history) reading and judging the file, the best of
    `repeat`; {} for a tree without it (--compare's reference)."""
    try:
        from checkers.elle.fast import fast_check
        from checkers.history import read_txn_ops
    except ImportError:
        return {}
    best = None
    for _ in range(repeat):
        t, c = time.monotonic(), time.process_time()
        txn_ops = read_txn_ops(path)
        verdict = fast_check(txn_ops) if txn_ops is not None else None
        del txn_ops
        took = (time.monotonic() - t, time.process_time() - c)
        best = took if best is None else min(best, took)
    assert best is not None
    return {"fast_s": round(best[0], 2), "fast_cpu_s": round(best[1], 2),
            "fast_answered": verdict is not None}


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# `faultline` as its console script runs it, from whichever tree PYTHONPATH names
CLI = ["-c", "import sys; from harness.cli import main; sys.exit(main())"]


def _env(tree: str, cache: str) -> dict[str, str]:
    """The environment that imports the code of `tree` first, with bytecode
    cached in `cache` (as after any first run; the repository is not written)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _cli_best(tree: str, cache: str, argv: list[str], runs: int) -> dict:
    """`faultline ARGV` with `tree`'s code in fresh processes (see `_timed_runs`)."""
    cmd = [sys.executable, *CLI, *argv]
    env = _env(tree, cache)
    subprocess.run(cmd, capture_output=True, cwd=tree, env=env)  # fills the bytecode cache
    return _timed_runs(cmd, tree, env, runs)


def _timed_runs(cmd: list[str], cwd: str, env: dict[str, str] | None, runs: int) -> dict:
    """`cmd` run `runs` times: the best CPU of the child, the mean, the wall
    time of the best, the child's peak resident memory (the least of the
    runs), and the last run's exit status and verdict. Each child is reaped
    with wait4, so its own rusage is read, not the sum of all children's."""
    results = []
    peaks = []
    for _ in range(runs):  # the machine is shared: the best says most
        t1 = time.monotonic()
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True, cwd=cwd, env=env)
        out = child.stdout.read()  # type: ignore[union-attr]
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        child.stdout.close()  # type: ignore[union-attr]
        wall = time.monotonic() - t1
        results.append((usage.ru_utime + usage.ru_stime, wall))
        peaks.append(usage.ru_maxrss)  # KiB on Linux
    cpu, wall = min(results)
    verdict = json.loads(out)
    return {"cpu_s": cpu, "mean_cpu_s": sum(c for c, _ in results) / len(results),
            "wall_s": wall, "exit": child.returncode, "txns": verdict["stats"].get("txns") or 0,
            "anomaly_counts": verdict["stats"].get("anomaly_counts"),
            "peak_rss_mib": round(min(peaks) / 1024), "valid": verdict["valid"],
            "load": _load()}


def _child(tree: str, cache: str, args: argparse.Namespace, n: int, keep: str | None) -> dict:
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--txns", str(n),
            "--max-writes", str(args.max_writes), "--seed", str(args.seed),
            "--stale", str(args.stale), "--repeat", str(args.repeat)]
    if keep:
        argv += ["--keep", keep]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=tree,
                         env=_env(tree, cache)).stdout
    r = json.loads(out)
    r["load"] = _load()
    return r


def _best(rounds: list[dict]) -> dict:
    """Per figure, the best (least) of the rounds; the other fields from the first."""
    best = dict(rounds[0])
    for k in ("check_s", "check_cpu_s", "end_to_end_s", "end_to_end_cpu_s", "cli_cpu_s",
              "peak_rss_mib", "cli_peak_rss_mib", "fast_s", "fast_cpu_s"):
        if k in best:
            best[k] = min(r[k] for r in rounds)
    best["loads"] = "/".join(r["load"].split()[1] for r in rounds)
    return best


def _print_size(name: str, r: dict, repeat: int) -> None:
    n = r["txns"]
    print(f"{n:>7} txns, {name}: check alone (best of {repeat}) {r['check_s']:.2f} s = "
          f"{n / r['check_s']:,.0f} txn/s "
          f"(CPU {r['check_cpu_s']:.2f} s = {n / r['check_cpu_s']:,.0f} txn/s; "
          f"graph {r['graph_s']:.2f} s, cycle search {r['cycle_search_s']:.2f} s); "
          f"in process msgpack read + check {r['end_to_end_s']:.2f} s = "
          f"{n / r['end_to_end_s']:,.0f} txn/s (CPU {r['end_to_end_cpu_s']:.2f} s = "
          f"{n / r['end_to_end_cpu_s']:,.0f} txn/s); peak RSS {r['peak_rss_mib']} MiB; "
          f"valid={r['valid']}, anomalies={r['anomalies']}; load {r.get('loads', '?')}")
    if "fast_s" in r:
        print(f"{'':>7} fast path, in process msgpack read + check (best of {repeat}): "
              f"{r['fast_s']:.2f} s = {n / r['fast_s']:,.0f} txn/s (CPU "
              f"{r['fast_cpu_s']:.2f} s = {n / r['fast_cpu_s']:,.0f} txn/s), "
              + ("answered" if r["fast_answered"] else "deferred to the object path")
              + f"; object path x{r['end_to_end_cpu_s'] / r['fast_cpu_s']:.2f} its CPU")
    if "cli_cpu_s" in r:
        print(f"{'':>7} faultline check-elle history.msgpack end to end (fresh process, "
              f"bytecode cached): CPU {r['cli_cpu_s']:.2f} s = {n / r['cli_cpu_s']:,.0f} "
              f"txn/s, exit {r['cli_exit']}, valid={r['cli_valid']}, anomalies "
              f"{r['cli_anomaly_counts']}; peak RSS {r['cli_peak_rss_mib']} MiB")
    print(f"{'':>7} edges: {r['edges']}")
    if r["anomaly_counts"]:
        print(f"{'':>7} largest cyclic component {r['largest_component']} txns; "
              f"anomalies {r['anomaly_counts']}")


def _print_ratios(ref: str, mine: dict, theirs: dict) -> None:
    parts = []
    for k, what in (("check_cpu_s", "check alone CPU"), ("end_to_end_cpu_s",
                                                        "in-process read + check CPU"),
                    ("cli_cpu_s", "check-elle end to end CPU")):
        if k in mine and k in theirs:
            parts.append(f"{what} x{theirs[k] / mine[k]:.2f}")
    if "fast_cpu_s" in mine and "fast_cpu_s" not in theirs:
        parts.append(f"in-process read + check CPU against this tree's fast path "
                     f"x{theirs['end_to_end_cpu_s'] / mine['fast_cpu_s']:.2f}")
    print(f"{'':>7} {ref} / this tree: {', '.join(parts)}")


def _ref_tree(ref: str, where: str) -> str:
    tree = os.path.join(where, "ref")
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", tree, ref], check=True,
                   capture_output=True)
    return tree


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
    p.add_argument("--edn", metavar="FILE",
                   help="also time reading this EDN history and checking it with the CLI")
    p.add_argument("--repeat", type=int, default=3,
                   help="checks per size, the best reported (default %(default)s)")
    p.add_argument("--edn-only", action="store_true",
                   help="only the --edn figures (no generated histories)")
    p.add_argument("--cli-runs", type=int, default=10,
                   help="runs of the CLI on --edn per regime, the best reported "
                        "(default %(default)s)")
    p.add_argument("--compare", metavar="REF",
                   help="also measure the code of git revision REF, alternating with this "
                        "tree's, and print the ratios")
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds of every measurement per tree, the best reported "
                        "(default %(default)s)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--keep", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.txns[0], args.max_writes, args.seed, args.stale,
                                 args.repeat, args.keep)))
        return
    if args.edn and not args.compare:
        edn_figures(args.edn, args.cli_runs)
    with tempfile.TemporaryDirectory() as work:
        trees = [("this tree", REPO)]
        if args.compare:
            trees.append((args.compare, _ref_tree(args.compare, work)))
        try:
            _compare(args, trees, work)
        finally:
            if args.compare:
                subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force",
                                trees[1][1]], capture_output=True)


def _compare(args: argparse.Namespace, trees: list[tuple[str, str]], work: str) -> None:
    cache = os.path.join(work, "pycache")
    compare = len(trees) > 1
    if args.edn and compare:
        edn = {name: [] for name, _ in trees}
        for _ in range(args.rounds):
            for name, tree in trees:
                edn[name].append(_cli_best(tree, cache, ["check-elle", args.edn],
                                           args.cli_runs))
        for name, _ in trees:
            r = min(edn[name], key=lambda x: x["cpu_s"])
            loads = "/".join(x["load"].split()[1] for x in edn[name])
            print(f"{args.edn}, {name}: faultline check-elle end to end (fresh process, "
                  f"bytecode cached, best of {args.cli_runs} x {args.rounds} rounds): CPU "
                  f"{r['cpu_s']:.2f} s (mean of the best round's "
                  f"{r['mean_cpu_s']:.2f} s; wall {r['wall_s']:.2f} s; target < 0.5 s), exit "
                  f"{r['exit']}, {r['txns']} txns, anomalies {r['anomaly_counts']}; "
                  f"peak RSS {r['peak_rss_mib']} MiB; load {loads}")
        best = {name: min(x["cpu_s"] for x in edn[name]) for name in edn}
        print(f"{'':>7} {trees[1][0]} / this tree: x{best[trees[1][0]] / best['this tree']:.2f}")
    for n in [] if args.edn_only else args.txns or [10_000, 100_000]:
        path = os.path.join(work, f"history-{n}.msgpack")
        rounds: dict[str, list[dict]] = {name: [] for name, _ in trees}
        for i in range(args.rounds):
            for name, tree in trees:
                r = _child(tree, cache, args, n, path if i == 0 and tree == REPO else None)
                if compare:
                    cli = _cli_best(tree, cache, ["check-elle", path],
                                    max(1, args.cli_runs // 5))
                    r["cli_cpu_s"], r["cli_exit"] = cli["cpu_s"], cli["exit"]
                    r["cli_peak_rss_mib"], r["cli_valid"] = cli["peak_rss_mib"], cli["valid"]
                    r["cli_anomaly_counts"] = cli["anomaly_counts"]
                rounds[name].append(r)
        best = {name: _best(rs) for name, rs in rounds.items()}
        for name, _ in trees:
            _print_size(name, best[name], args.repeat)
        if compare:
            _print_ratios(trees[1][0], best["this tree"], best[trees[1][0]])
        os.unlink(path)


def edn_figures(path: str, cli_runs: int = 10) -> None:
    from checkers.formats import edn_fast
    from checkers.formats.jepsen import read_edn_history
    from checkers.formats.textfile import read_text

    size = os.path.getsize(path)
    t0, c0 = time.monotonic(), time.process_time()
    ops = read_edn_history(path)
    read_s, read_cpu = time.monotonic() - t0, time.process_time() - c0
    print(f"{path}: {size / 1e6:.1f} MB, {len(ops)} ops read in {read_s:.2f} s = "
          f"{size / read_s / 1e6:.1f} MB/s (CPU {read_cpu:.2f} s = "
          f"{size / read_cpu / 1e6:.1f} MB/s; {_load()})")
    print(f"{'':>7} read by the JSON fast path: {edn_fast.op_maps(read_text(path)) is not None}")
    cli = [os.path.join(os.path.dirname(sys.executable), "faultline"), "check-elle", path]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as cache:
        # Bytecode cached, as for an installed package after its first run (in
        # a directory of its own, so the repository is not written to);
        # and as this shell runs it: with PYTHONDONTWRITEBYTECODE set and no
        # cache, every run compiles our modules again (~0.03 s).
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        subprocess.run(cli, capture_output=True, cwd=repo, env=cached)  # fills the cache
        regimes = [("bytecode cached", cached)]
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            regimes.append(("as this shell runs it (PYTHONDONTWRITEBYTECODE set)", None))
        for what, env in regimes:
            r = _timed_runs(cli, repo, env, cli_runs)
            print(f"{'':>7} faultline check-elle end to end, {what} (fresh process, best of "
                  f"{cli_runs}): CPU {r['cpu_s']:.2f} s = {r['txns'] / r['cpu_s']:,.0f} txn/s "
                  f"(mean {r['mean_cpu_s']:.2f} s; wall {r['wall_s']:.2f} s; target < 0.5 s), "
                  f"exit {r['exit']}, {r['txns']} txns, anomalies {r['anomaly_counts']}; "
                  f"{r['load']}")


if __name__ == "__main__":
    main()
