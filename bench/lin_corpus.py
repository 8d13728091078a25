"""Time the linearizability checker.

1. Porcupine's corpus: every MANIFEST.tsv file checked single-threaded,
   parsing excluded (as in Porcupine's figures), min over --repeat runs; our
   total against the sum of Porcupine's check_min_ms_gmp1 from TIMINGS.tsv.
2. A generated 100k-op, 10-key register history with 10% info ops: time
   and peak memory.

Prints figures; asserts nothing. Usage: python bench/lin_corpus.py [--repeat N]
[--ops N] [--skip-corpus] [--skip-big] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import csv
import random
import resource
import time
import tracemalloc

from corpus_dir import corpus

from checkers.formats.porcupine import read_etcd_log, read_kv_log
from checkers.history import Op
from checkers.linearizability import check

CORPUS = corpus("porcupine")
MODEL_OF = {"etcd-cas-register": "cas-register", "kv-append-by-key": "kv"}


def bench_corpus(repeat: int) -> None:
    with open(CORPUS / "TIMINGS.tsv", newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    timings = [r for r in csv.DictReader(lines, delimiter="\t") if r["model"] in MODEL_OF]
    ours_total = theirs_total = ours_cpu = 0.0
    worst = []
    for r in timings:
        sub = "jepsen" if r["file"].startswith("etcd") else "kv"
        reader = read_etcd_log if sub == "jepsen" else read_kv_log
        history = reader(CORPUS / sub / r["file"])
        best = best_cpu = float("inf")
        for _ in range(repeat):
            t, cpu = time.perf_counter(), time.process_time()
            v = check(history, model=MODEL_OF[r["model"]], time_limit=None,
                      memory_limit_mb=None, stop_on_first_failure=True)
            best = min(best, time.perf_counter() - t)
            best_cpu = min(best_cpu, time.process_time() - cpu)
        ours_cpu += best_cpu * 1000
        expected = r["expected"] == "ok"
        if v["valid"] is not expected:
            print(f"WRONG VERDICT {r['file']}: {v['valid']} (expected {r['expected']})")
        ours_total += best * 1000
        theirs_total += float(r["check_min_ms_gmp1"])
        worst.append((best * 1000, float(r["check_min_ms_gmp1"]), r["file"]))
    worst.sort(reverse=True)
    print(f"corpus: {len(timings)} files (min of {repeat} runs each, parsing excluded)")
    for ours, theirs, name in worst[:6]:
        print(f"  {name:16} ours {ours:9.2f} ms   porcupine {theirs:9.2f} ms")
    print(f"  ours total      {ours_total:9.1f} ms ({ours_cpu:.1f} ms of CPU: on a loaded "
          "machine the truer figure)")
    print(f"  porcupine total {theirs_total:9.1f} ms (check_min_ms_gmp1)")
    print(f"  ratio           {ours_total / theirs_total:9.2f} "
          f"(CPU {ours_cpu / theirs_total:.2f})")


def generate(n_ops: int, keys: int = 10, processes: int = 20, info_rate: float = 0.1,
             seed: int = 1) -> list[Op]:
    """A register-per-key history from a real execution: ops overlap at random,
    each takes effect at a random moment inside its window; info ops take
    effect or not, and their process is retired."""
    rng = random.Random(seed)
    values = dict.fromkeys(range(keys))
    history: list[Op] = []
    next_value = 0
    next_process = processes
    idle = list(range(processes))
    running: dict[int, list] = {}   # process -> [invoke, applied?, result, info?]
    done = 0

    def emit(p, typ, f, value, key, error=None):
        history.append(Op(len(history), len(history), p, typ, f, value, key, error=error))

    while done < n_ops or running:
        choice = rng.random()
        if idle and done + len(running) < n_ops and (choice < 0.4 or not running):
            p = idle.pop(rng.randrange(len(idle)))
            key = rng.randrange(keys)
            f = rng.choice(("read", "write", "cas"))
            if f == "read":
                value = None
            elif f == "write":
                next_value += 1
                value = next_value
            else:
                next_value += 1
                cur = values[key]
                old = cur if rng.random() < 0.5 or cur is None else rng.randrange(next_value)
                value = [old, next_value]
            emit(p, "invoke", f, value, key)
            running[p] = [history[-1], False, None, rng.random() < info_rate]
            continue
        p = rng.choice(list(running))
        inv, applied, result, info = running[p]
        if not applied and not (info and rng.random() < 0.5):
            key = inv.key
            if inv.f == "read":
                result = ("ok", values[key])
            elif inv.f == "write":
                values[key] = inv.value
                result = ("ok", inv.value)
            elif values[key] == inv.value[0]:
                values[key] = inv.value[1]
                result = ("ok", inv.value)
            else:
                result = ("fail", inv.value)
            running[p][1:3] = [True, result]
            if rng.random() < 0.5:
                continue  # the completion arrives later
        del running[p]
        done += 1
        if info:
            emit(p, "info", inv.f, None, inv.key, error="timeout")
            idle.append(next_process)
            next_process += 1
            continue
        if result is None:  # never applied: the request was refused before it ran
            result = ("fail", inv.value)
            emit(p, "fail", inv.f, inv.value, inv.key, error="not_leader")
        else:
            emit(p, result[0], inv.f, result[1], inv.key,
                 error="cas_mismatch" if result[0] == "fail" else None)
        idle.append(p)
    return history


def bench_big(n_ops: int, trace: bool) -> None:
    history = generate(n_ops)
    n_info = sum(1 for o in history if o.type == "info")
    print(f"generated: {n_ops} ops ({len(history)} events), 10 keys, {n_info} info ops")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    v = check(history, model="register-kv", time_limit=600, memory_limit_mb=4096)
    elapsed = time.perf_counter() - t
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    steps = sum(k["steps"] for k in v["stats"]["per_key"])
    print(f"  verdict {v['valid']}, {elapsed:.2f} s, {steps} steps, peak RSS "
          f"{rss_after / 1024:.0f} MiB (was {rss_before / 1024:.0f} MiB before the check)")
    if not trace:
        return
    tracemalloc.start()
    check(history, model="register-kv", time_limit=600, memory_limit_mb=4096)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"  tracemalloc peak during the check: {peak / 2**20:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--skip-corpus", action="store_true")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="also rerun the big check under tracemalloc (several times slower)")
    args = ap.parse_args()
    if not args.skip_corpus:
        if not (CORPUS / "TIMINGS.tsv").exists():
            raise SystemExit(f"no corpus at {CORPUS}: set FAULTLINE_CORPUS or pass --skip-corpus")
        bench_corpus(args.repeat)
    if not args.skip_big:
        bench_big(args.ops, args.tracemalloc)


if __name__ == "__main__":
    main()
