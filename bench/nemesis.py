"""Nemesis speed figures: topology build/teardown, partition apply/heal,
SIGKILL-to-ready. Needs root.

    .venv/bin/python bench/nemesis.py [--rounds N] [--db raft|echo]

Restart figures use the raft node (nodes/raft) unless it cannot start, in
which case a tiny echo server (tests/echo_db.py); the output says which.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from harness.run.cluster import Cluster, ClusterError  # noqa: E402
from nemesis.netns import Topology  # noqa: E402
from nemesis.partition import Partitioner, isolate  # noqa: E402


def ms(samples: list[float]) -> str:
    s = sorted(samples)
    p90 = s[min(len(s) - 1, int(0.9 * len(s)))]
    return (f"median {statistics.median(s) * 1000:7.2f} ms  p90 {p90 * 1000:7.2f} ms  "
            f"max {s[-1] * 1000:7.2f} ms  (n={len(s)})")


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run_id() -> str:
    return f"bench{uuid.uuid4().hex[:8]}"


def bench_topology(rounds: int, n: int) -> None:
    names = [f"n{i}" for i in range(1, n + 1)]
    build, teardown = [], []
    for _ in range(rounds):
        topo = Topology(run_id(), names)
        try:
            build.append(timed(topo.build))
        finally:
            teardown.append(timed(topo.teardown))
    print(f"{n}-node topology build:    {ms(build)}")
    print(f"{n}-node topology teardown: {ms(teardown)}")


def make_db(kind: str) -> Any:
    if kind == "raft":
        from nodes.raft.db import RaftDB
        return RaftDB()
    from echo_db import EchoDB
    return EchoDB()


def bench_partition(rounds: int, n: int, results: Path) -> None:
    names = [f"n{i}" for i in range(1, n + 1)]
    rid = run_id()
    with Cluster(results / rid, make_db("echo"), names, rid,
                 state_dir=results / "state") as cluster:
        part = Partitioner(cluster)
        apply, heal = [], []
        try:
            for i in range(rounds):
                cut = isolate(names[i % n], names)
                apply.append(timed(lambda cut=cut: part.apply(cut)))
                heal.append(timed(part.heal))
        finally:
            part.close()
    print(f"partition apply (isolate 1 of {n}, {len(cut)} pairs): {ms(apply)}")
    print(f"partition heal:                        {ms(heal)}")


def bench_restart(rounds: int, n: int, kind: str, results: Path) -> None:
    names = [f"n{i}" for i in range(1, n + 1)]
    rid = run_id()
    with Cluster(results / rid, make_db(kind), names, rid,
                 state_dir=results / "state") as cluster:
        cluster.start_all(timeout=60)
        follower, leader_ = [], []
        for i in range(rounds):
            leader = cluster.leader() if kind == "raft" else None
            victim = next(x for x in names if x != leader) if i % 2 == 0 or not leader \
                else leader
            t = time.perf_counter()
            cluster.kill([victim])
            cluster.start([victim])
            cluster.wait_ready([victim], timeout=60)
            # For raft, ready means the restarted node sees a leader again.
            (leader_ if victim == leader else follower).append(time.perf_counter() - t)
            cluster.wait_ready(timeout=60)
    print(f"SIGKILL -> restart-ready ({kind}, {n} nodes, follower): {ms(follower)}")
    if leader_:
        print(f"SIGKILL -> restart-ready ({kind}, {n} nodes, leader):   {ms(leader_)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--db", choices=["raft", "echo"], default="raft")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        results = Path(tmp)
        bench_topology(args.rounds, args.nodes)
        bench_partition(args.rounds * 5, args.nodes, results)
        kind = args.db
        try:
            bench_restart(args.rounds, 3, kind, results)
        except ClusterError as e:
            if kind != "raft":
                raise
            print(f"raft node could not be benchmarked ({e}); falling back to the echo server")
            bench_restart(args.rounds, 3, "echo", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
