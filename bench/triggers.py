"""Trigger latency: from a node's event line hitting its stdout file to the
trigger handing its fault to the runner (the nemesis acts right after).

    .venv/bin/python bench/triggers.py [--rounds N]

Prints median / p90 / max in ms over N firings of kill-after-vote against
log files on the local disk (no cluster needed)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nemesis.base import FaultContext  # noqa: E402
from nodes.raft.faults.triggers import KillAfterVote  # noqa: E402


class Node:
    def __init__(self, name: str, log_dir: Path) -> None:
        self.name, self.log_dir = name, log_dir


class Cluster:
    def __init__(self, root: Path) -> None:
        self.nodes = []
        for n in ("n1", "n2", "n3"):
            (root / n).mkdir()
            (root / n / "stdout.log").write_bytes(b"")
            self.nodes.append(Node(n, root / n))
        self.names = [n.name for n in self.nodes]

    def leader(self) -> str:
        return "n1"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp))
        trigger = KillAfterVote(FaultContext())
        fired = threading.Event()
        seen: list[int] = []

        def fire(spec: str, params: dict) -> None:
            if "after" in params:
                seen.append(time.monotonic_ns())
                fired.set()

        trigger.fire = fire
        trigger.setup(cluster)
        delays = []
        try:
            for i in range(args.rounds):
                fired.clear()
                trigger.inject(cluster, random.Random(i), {})
                time.sleep(random.uniform(0.005, 0.03))
                t = time.monotonic_ns()
                with open(cluster.nodes[1].log_dir / "stdout.log", "a") as f:
                    f.write(json.dumps({"t": t, "node": "n2", "event": "vote", "epoch": i,
                                        "candidate": "n1"}) + "\n")
                if not fired.wait(5):
                    print(f"round {i}: no firing within 5 s")
                    return 1
                delays.append((seen[-1] - t) / 1e6)
        finally:
            trigger.teardown(cluster)
    s = sorted(delays)
    print(f"line -> fire: median {statistics.median(s):.2f} ms  "
          f"p90 {s[int(0.9 * (len(s) - 1))]:.2f} ms  max {s[-1]:.2f} ms  (n={len(s)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
