"""Latency and throughput of ok ops inside a fault's windows against the
rest of a run (docs/faults.md's findings): a window runs from the end of an
inject of FAULT (its op value not a no-op) to the next nemesis op of another
f (its heal). Prints one line per run dir; asserts nothing. Usage:
    python -P bench/latency_in_faults.py FAULT RUN_DIR...
e.g. `python -P bench/latency_in_faults.py cpu results/*/` after
`faultline run --nemesis cpu:limit=0.02,leader --time-limit 20 --nemesis-interval 3 --seed S`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgpack


def windows(run: dict, fault: str) -> list[tuple[int, int]]:
    out, start = [], None
    for e in run["schedule"]:
        if e["f"] == fault and not e.get("error") and not e.get("noop"):
            start = e["end"]
        elif start is not None and e["f"] != fault:
            out.append((start, e["time"]))
            start = None
    return out


def pct(xs: list[float], p: int) -> float | None:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p / 100 * len(xs)))], 1) if xs else None


def main(fault: str, run_dirs: list[str]) -> None:
    for d in map(Path, run_dirs):
        run = json.loads((d / "run.json").read_text())
        wins = windows(run, fault)
        open_ops: dict[int, dict] = {}
        lat: dict[bool, list[float]] = {True: [], False: []}
        other = {True: 0, False: 0}
        with open(d / "history.msgpack", "rb") as f:
            for o in msgpack.Unpacker(f, raw=False):
                if not isinstance(o, dict) or not isinstance(o.get("process"), int):
                    continue
                if o["type"] == "invoke":
                    open_ops[o["process"]] = o
                    continue
                inv = open_ops.pop(o["process"], None)
                if inv is None:
                    continue
                inside = any(a <= inv["time"] <= b for a, b in wins)
                if o["type"] == "ok":
                    lat[inside].append((o["time"] - inv["time"]) / 1e6)
                else:
                    other[inside] += 1
        span = sum(b - a for a, b in wins) / 1e9
        print(f"{d.name}: in {fault} {span:.1f} s: ok {len(lat[True])} p50 {pct(lat[True], 50)} "
              f"p99 {pct(lat[True], 99)} ms; outside: ok {len(lat[False])} p50 "
              f"{pct(lat[False], 50)} p99 {pct(lat[False], 99)} ms; not ok in/out "
              f"{other[True]}/{other[False]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
