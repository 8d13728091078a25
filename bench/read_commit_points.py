"""Were a run's linearizable reads answered at or past the commit point that
was already announced when they began? The figures behind a possible rule
(docs/hunt.md, "read-on-barrier-append list-append seed 3: the miss").

A node's `hw` line H says offsets [0, H) are committed. A linearizable read
(a register `read`, a list-append single-key read: the node's get) must
reflect every write committed before it began, so the node that answered it
(the ok completion's node) must by then know a commit point at least as high
as any node had announced before the read's invoke. "behind": an ok read
whose answering node's highest hw line between the read's invoke and its
completion is below the highest hw line any node wrote before the invoke.
"stale": an ok single-key list read that lacks an append acknowledged
before its invoke (what Elle's realtime order shows); "behind" needs no
conflicting write to show.

Prints figures per run dir and totals; asserts nothing. Usage:
    python bench/read_commit_points.py RUN_DIR...
"""

from __future__ import annotations

import argparse
import bisect
from dataclasses import dataclass
from typing import Any

from checkers.datatypes import is_single_key_read
from checkers.history import Op
from checkers.rundir import load_json, load_run
from nodes.events import HW

READS = ("read", "get")


@dataclass(frozen=True)
class Figures:
    run: str
    workload: str
    seed: int
    valid: Any
    reads: int
    behind: int
    stale: int


class CommitPoints:
    """Every node's hw lines, on the history's clock (ns since its start)."""

    def __init__(self, events: dict[str, list[dict[str, Any]]], start_ns: int) -> None:
        self.by_node: dict[str, tuple[list[int], list[int]]] = {}
        lines = []
        for node, evs in events.items():
            mine = sorted((ev["t"] - start_ns, ev["hw"]) for ev in evs
                          if ev.get("event") == HW.name and type(ev.get("t")) is int
                          and type(ev.get("hw")) is int)
            self.by_node[node] = ([t for t, _ in mine], [hw for _, hw in mine])
            lines += mine
        lines.sort()
        self.times = [t for t, _ in lines]
        self.highest: list[int] = []
        top = 0
        for _, hw in lines:
            top = max(top, hw)
            self.highest.append(top)

    def announced_before(self, t: int) -> int:
        i = bisect.bisect_left(self.times, t)
        return self.highest[i - 1] if i else 0

    def known_by(self, node: str | None, end: int) -> int:
        """The highest hw `node` had written by `end`."""
        times, hws = self.by_node.get(node or "", ([], []))
        i = bisect.bisect_right(times, end)
        return max(hws[:i], default=0)


def figures(run_dir: str) -> Figures:
    r = load_run(run_dir)
    points = CommitPoints(r.events or {}, r.run["start_monotonic_ns"])
    ops = [op for op in r.history.ops if op.process != "nemesis"]
    acked: dict[Any, list[tuple[int, Any]]] = {}
    for op in ops:
        if op.type == "ok" and op.f == "txn" and isinstance(op.value, list):
            for mop in op.value:
                if mop[0] == "append":
                    acked.setdefault(mop[1], []).append((op.time, mop[2]))
    invoked: dict[Any, Op] = {}
    reads = behind = stale = 0
    for op in ops:
        if op.type == "invoke":
            invoked[op.process] = op
            continue
        start = invoked.get(op.process)
        single = op.f == "txn" and is_single_key_read(op.value)
        if op.type != "ok" or start is None or not (op.f in READS or single):
            continue
        reads += 1
        if points.known_by(op.node, op.time) < points.announced_before(start.time):
            behind += 1
        if single:
            _, key, seen = op.value[0]
            stale += any(t < start.time and v not in (seen or [])
                         for t, v in acked.get(key, []))
    config = r.run.get("config") or {}
    try:
        valid = load_json(r.path / "verdicts.json").get("valid")
    except Exception:
        valid = None
    return Figures(str(run_dir), config.get("workload", "?"), config.get("seed", 0), valid,
                   reads, behind, stale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run dirs")
    args = parser.parse_args()
    totals = [0, 0, 0, 0]
    print("reads  behind  stale  verdict  workload seed  run")
    for run in args.runs:
        f = figures(run)
        print(f"{f.reads:5d}  {f.behind:6d}  {f.stale:5d}  {str(f.valid):7s}  "
              f"{f.workload} {f.seed}  {f.run}", flush=True)
        totals = [totals[0] + 1, totals[1] + f.reads, totals[2] + f.behind,
                  totals[3] + (f.behind > 0)]
    print(f"{totals[0]} runs, {totals[1]} ok reads, {totals[2]} behind, "
          f"runs with a read behind: {totals[3]}/{totals[0]}")


if __name__ == "__main__":
    main()
