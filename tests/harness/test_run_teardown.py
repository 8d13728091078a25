"""The run's teardown order: nodes, then their LazyFS mounts (all at once), then
the cluster's namespaces and dirs, with the journal released for exactly the
mounts whose process stopped. The real thing is in test_run_lifecycle.py
(Ctrl-C of a power-cut run); this pins the order and the concurrency without
root."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.run.config import RunConfig
from harness.run.lifecycle import Run

NAMES = ["n1", "n2", "n3"]


class Journal:
    def __init__(self) -> None:
        self.released: list[int] = []

    def release(self, rid: int) -> None:
        self.released.append(rid)


class RecordingCluster:
    """The calls the run's teardown makes, in order; nodes hold their mounts until stopped."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.nodes_running = True
        self.resources = Journal()

    def stop_nodes(self) -> None:
        self.events.append("stop_nodes")
        self.nodes_running = False

    def teardown(self) -> None:
        self.events.append("teardown")


class FuseMount:
    """A mount whose process stays up while a node holds files on it (then its
    stop fails, as the real one does after its timeout). Every stop meets the
    others at a barrier: stops made one after another break it."""

    def __init__(self, name: str, cluster: RecordingCluster, barrier: threading.Barrier,
                 fails: bool = False) -> None:
        self.name, self.cluster, self.barrier, self.fails = name, cluster, barrier, fails

    def stop(self) -> None:
        if self.cluster.nodes_running:
            self.cluster.events.append(f"{self.name} held by a node")
            raise OSError("still mounted")
        self.barrier.wait()
        self.cluster.events.append(f"stop {self.name}")
        if self.fails:
            raise OSError("unmount failed")


def run_with_mounts(tmp_path: Path, failing: set[str] = frozenset()
                    ) -> tuple[Run, RecordingCluster, list[str]]:
    events: list[str] = []
    cluster = RecordingCluster(events)
    barrier = threading.Barrier(len(NAMES), timeout=10)
    run = Run(RunConfig(nodes=len(NAMES), nemesis=["power-cut-after-commit"]), tmp_path)
    run.run_dir = tmp_path
    run.mounts = {n: FuseMount(n, cluster, barrier, n in failing) for n in NAMES}
    run.mount_processes = {n: i for i, n in enumerate(NAMES, start=100)}
    run._teardown(cluster, interrupted=False)  # type: ignore[arg-type]
    return run, cluster, events


def test_the_nodes_stop_before_their_mounts_and_the_mounts_stop_together(tmp_path: Path) -> None:
    run, cluster, events = run_with_mounts(tmp_path)
    assert events[0] == "stop_nodes" and events[-1] == "teardown"
    assert sorted(events[1:-1]) == [f"stop {n}" for n in NAMES]
    # Every FUSE process exited: none is left journalled for `clean` to sweep.
    assert sorted(cluster.resources.released) == [100, 101, 102]
    assert run.mount_processes == {}
    assert (tmp_path / "run.json").exists()


def test_a_mount_that_fails_to_stop_stays_journalled_for_the_sweep(tmp_path: Path) -> None:
    run, cluster, events = run_with_mounts(tmp_path, failing={"n2"})
    assert events[-1] == "teardown"
    assert sorted(cluster.resources.released) == [100, 102]
    assert run.mount_processes == {"n2": 101}

