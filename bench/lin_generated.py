"""Check every generated register history in the shared corpus with the
default budget, beside Porcupine's time for it.

Each file is checked in a fresh Python process (so its peak RSS is its own):
verdict (against MANIFEST.tsv), check seconds (parsing excluded, as in
Porcupine's figures), search steps, peak RSS in MiB, Porcupine's seconds
(MANIFEST.tsv, or --porcupine FILE: a TSV `file<TAB>seconds[<TAB>cpu seconds]`
measured live beside this run) and the ratio ours / Porcupine's (wall). CPU
seconds are printed too: on a loaded machine they say more than the wall
clock, so when the live TSV gives Porcupine's CPU seconds the CPU ratio is
printed beside the wall one (each side's least CPU over its runs).

Prints figures; asserts nothing (exit status 1 if any verdict is wrong or
unknown). Usage: python bench/lin_generated.py [--only SUBSTRING] [--repeat N]
[--porcupine TIMES.tsv]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from corpus_dir import corpus

CORPUS = corpus("generated")
EXPECTED = {"ok": True, "illegal": False}


def check_one(path: str, model: str) -> dict:
    """Run in the child: read, check with the default budget, report."""
    from checkers.history import read_history
    from checkers.linearizability import check

    ops = read_history(path).ops
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t, cpu = time.perf_counter(), time.process_time()
    v = check(ops, model=model)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    per_key = v["stats"].get("per_key", [])
    return {"valid": v["valid"], "seconds": seconds, "cpu": cpu,
            "steps": sum(k.get("steps", 0) for k in per_key),
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_mib": rss_before / 1024,
            "reason": next((a.get("reason") for a in v["anomalies"]
                            if a.get("type") == "search-incomplete"), None)}


def porcupine_seconds(text: str) -> float | None:
    """The manifest's figure as a number: a range's midpoint; None if undecided."""
    nums = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]
    if not nums or "undecided" in text or "out of memory" in text:
        return None
    return sum(nums[:2]) / len(nums[:2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=1, help="runs per file; the best is shown")
    ap.add_argument("--porcupine", type=Path,
                    help="TSV of file<TAB>seconds measured live (overrides the manifest)")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "MODEL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(check_one(*args.child)))
        return
    if not (CORPUS / "MANIFEST.tsv").exists():
        raise SystemExit(f"no generated corpus at {CORPUS}: set FAULTLINE_CORPUS")
    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if args.only in r["file"]]
    live, live_cpu = {}, {}
    if args.porcupine:
        for line in args.porcupine.read_text().splitlines():
            name, secs, *cpu = line.split("\t")
            live[name] = secs
            if cpu:
                live_cpu[name] = float(cpu[0])
    print("(a shared, noisy 2-core machine: figures vary by tens of percent run to run)")
    cpu_head = f" {'porc cpu':>8} {'cpu ratio':>9}" if live_cpu else ""
    print(f"{'file':38} {'expect':7} {'verdict':8} {'s':>7} {'cpu s':>7} {'steps':>8} "
          f"{'MiB':>5} {'porcupine s':>12} {'ratio':>6}{cpu_head}")
    bad = 0
    for r in rows:
        best = None
        least_cpu = float("inf")
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, "--child",
                                  str(CORPUS / r["file"]), r["model"]],
                                 capture_output=True, text=True, check=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            least_cpu = min(least_cpu, res["cpu"])
            if best is None or res["seconds"] < best["seconds"]:
                best = res
        theirs_text = live.get(r["file"], r["porcupine_s"])
        theirs = porcupine_seconds(theirs_text)
        cpu_cols = ""
        if live_cpu:
            theirs_cpu = live_cpu.get(r["file"])
            cpu_cols = (f" {theirs_cpu:8.3f} {least_cpu / theirs_cpu:9.2f}" if theirs_cpu
                        else f" {'-':>8} {'-':>9}")
        expected = EXPECTED[r["expected"]]
        verdict = {True: "ok", False: "illegal"}.get(best["valid"], "unknown")
        if best["valid"] is not expected:
            bad += 1
            verdict += "!"
        ratio = f"{best['seconds'] / theirs:6.2f}" if theirs else "     -"
        print(f"{r['file']:38} {r['expected']:7} {verdict:8} {best['seconds']:7.2f} "
              f"{best['cpu']:7.2f} {best['steps']:8} {best['peak_mib']:5.0f} "
              f"{theirs_text[:12]:>12} {ratio}{cpu_cols}")
        if best["reason"]:
            print(f"    {best['reason']}")
    print(f"{len(rows) - bad}/{len(rows)} verdicts as expected")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
