"""Disk faults: pure truncation choices, and both faults against real node processes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from nemesis.disk import (
    Cut,
    LoseUnsyncedFault,
    TruncateChoice,
    TruncateFault,
    apply_cuts,
    plan_truncation,
)
from nemesis.fault import FOUND_NO_LEADER, WAITED_FOR_LEADER, NoLeader
from nemesis.lazyfs import LazyFS, check_installed, mount_data_dir
from nodes.db import NodeSpec
from nodes.raft.faults.lose_state import LoseStateFault

SIZES = {"n1": {"/d/n1/seg-0": 10_000, "/d/n1/seg-1": 500, "/d/n1/empty": 0},
         "n2": {"/d/n2/seg-0": 7_000}}


def test_same_seed_same_cuts_whatever_the_listing_order() -> None:
    reordered = {n: dict(reversed(list(files.items()))) for n, files in reversed(SIZES.items())}
    choice = TruncateChoice()
    assert plan_truncation(random.Random(7), SIZES, choice) == plan_truncation(
        random.Random(7), reordered, choice
    )


def test_tail_cut_of_exact_bytes_never_goes_below_zero() -> None:
    cuts = plan_truncation(random.Random(0), SIZES, TruncateChoice(bytes=600, every_file=True))
    assert cuts == [
        Cut("n1", "/d/n1/seg-0", 10_000, 9_400),
        Cut("n1", "/d/n1/seg-1", 500, 0),
        Cut("n2", "/d/n2/seg-0", 7_000, 6_400),
    ]


def test_random_tail_cut_stays_within_max_bytes() -> None:
    for seed in range(50):
        for cut in plan_truncation(random.Random(seed), SIZES, TruncateChoice(max_bytes=100)):
            assert 1 <= cut.old_size - cut.new_size <= 100
            assert cut.file != "/d/n1/empty"


def test_length_mode_cuts_to_an_earlier_length() -> None:
    fixed = plan_truncation(random.Random(1), SIZES, TruncateChoice(mode="length", length=4096,
                                                                   every_file=True))
    assert [c.new_size for c in fixed] == [4096, 500, 4096]
    for seed in range(50):
        for cut in plan_truncation(random.Random(seed), SIZES, TruncateChoice(mode="length")):
            assert 0 <= cut.new_size < cut.old_size


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="truncate mode"):
        TruncateChoice.from_params({"mode": "middle"})


def test_apply_cuts_refuses_a_file_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    path.write_bytes(b"x" * 100)
    apply_cuts([Cut("n1", str(path), 100, 60)])
    assert path.stat().st_size == 60
    with pytest.raises(RuntimeError, match="changed size"):
        apply_cuts([Cut("n1", str(path), 100, 10)])


# A node that appends fsynced records, one un-fsynced record, then says it is ready.
NODE = textwrap.dedent(
    """
    import os, sys, time
    data_dir, ready = sys.argv[1], sys.argv[2]
    fd = os.open(os.path.join(data_dir, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for line in (b"start\\n", b"synced\\n"):
        os.write(fd, line)
        os.fsync(fd)
    os.write(fd, b"volatile\\n")
    with open(ready, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
    """
)


class ProcessCluster:
    """Real node processes with harness.run.cluster.Cluster's methods: SIGKILL, reap, restart."""

    def __init__(self, root: Path, names: list[str]) -> None:
        self.root = root
        self.nodes = [
            NodeSpec(name, "127.0.0.1", 0, root / "data" / name, root / "logs" / name)
            for name in names
        ]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        for spec in self.nodes:
            spec.data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def names(self) -> list[str]:
        return [spec.name for spec in self.nodes]

    def spec(self, name: str) -> NodeSpec:
        return next(s for s in self.nodes if s.name == name)

    def is_running(self, name: str) -> bool:
        process = self.processes.get(name)
        return process is not None and process.poll() is None

    def start(self, names: list[str], fresh: bool = False) -> list[str]:
        started = []
        for name in names:
            if self.is_running(name):
                continue
            ready = self.root / f"{name}.ready"
            ready.unlink(missing_ok=True)
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-c", NODE, str(self.spec(name).data_dir), str(ready)],
                start_new_session=True,
            )
            deadline = time.monotonic() + 10
            while not ready.exists() or not ready.read_text():
                assert time.monotonic() < deadline, f"{name} never became ready"
                time.sleep(0.01)
            started.append(name)
        return started

    def kill(self, names: list[str], on_signalled: Callable[[], None] | None = None
             ) -> list[str]:
        killed, signalled = [], []
        for name in names:
            process = self.processes.pop(name, None)
            if process is not None:
                if process.poll() is None:
                    killed.append(name)
                os.killpg(process.pid, signal.SIGKILL)
                signalled.append(process)
        if on_signalled is not None:
            on_signalled()
        for process in signalled:
            process.wait()
        return killed


class DirectoryDB:
    """A DB adapter's data_files: every regular file in the data dir."""

    def data_files(self, node: NodeSpec) -> list[Path]:
        return sorted(p for p in node.data_dir.iterdir() if p.is_file())


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ProcessCluster]:
    c = ProcessCluster(tmp_path, ["n1", "n2"])
    try:
        yield c
    finally:
        c.kill(list(c.processes))


def test_truncate_cuts_a_stopped_nodes_file_and_heal_restarts_it(cluster: ProcessCluster) -> None:
    cluster.start(["n1", "n2"])
    log = cluster.nodes[0].data_dir / "log"
    assert log.read_bytes() == b"start\nsynced\nvolatile\n"
    fault = TruncateFault(DirectoryDB())

    value = fault.inject(cluster, random.Random(3), {"nodes": ["n1"], "bytes": 5})

    assert not cluster.is_running("n1") and cluster.is_running("n2")
    assert value == {
        "nodes": ["n1"],
        "mode": "tail",
        "cuts": [{"node": "n1", "file": str(log), "old_size": 22, "new_size": 17}],
    }
    assert log.read_bytes() == b"start\nsynced\nvola"

    assert fault.heal(cluster) == {"nodes": ["n1"]}
    assert cluster.is_running("n1")
    assert log.read_bytes() == b"start\nsynced\nvolastart\nsynced\nvolatile\n"
    assert fault.heal(cluster) == {"nodes": []}


needs_lazyfs = pytest.mark.skipif(check_installed() is not None, reason=check_installed() or "")


@needs_lazyfs
def test_lose_unsynced_kills_rolls_back_and_restarts(cluster: ProcessCluster) -> None:
    mounts: dict[str, LazyFS] = {}
    try:
        for spec in cluster.nodes:
            mounts[spec.name] = mount_data_dir(spec.data_dir)
        cluster.start(["n1", "n2"])
        first_pid = cluster.processes["n1"].pid
        fault = LoseUnsyncedFault(mounts)

        value = fault.inject(cluster, random.Random(0), {"nodes": ["n1"]})

        assert value == {
            "nodes": ["n1"],
            "lost": {"n1": [{"file": "/log", "old_size": 22, "new_size": 13,
                             "pages_restored": 1}]},
        }
        assert cluster.is_running("n1") and cluster.processes["n1"].pid != first_pid
        # The restarted node found only what its predecessor fsynced.
        assert (cluster.nodes[0].data_dir / "log").read_bytes() == (
            b"start\nsynced\nstart\nsynced\nvolatile\n"
        )
        # n2 was not touched: its un-fsynced record is still there.
        assert (cluster.nodes[1].data_dir / "log").read_bytes().endswith(b"volatile\n")
        assert fault.heal(cluster) == {"nodes": []}
    finally:
        cluster.kill(list(cluster.processes))
        for lazyfs in mounts.values():
            lazyfs.stop()


@needs_lazyfs
def test_lose_unsynced_refuses_a_node_without_a_mount(cluster: ProcessCluster) -> None:
    fault = LoseUnsyncedFault({})
    with pytest.raises(ValueError, match="no LazyFS mount for n1"):
        fault.inject(cluster, random.Random(0), {"nodes": ["n1"]})


def test_truncate_picks_nodes_by_targets_and_mode_by_variant(cluster: ProcessCluster) -> None:
    cluster.start(["n1", "n2"])
    fault = TruncateFault(DirectoryDB(), variant="length")

    value = fault.inject(cluster, random.Random(5), {"targets": "majority"})

    assert value["nodes"] == ["n1", "n2"] and value["mode"] == "length"
    for cut in value["cuts"]:
        assert 0 <= cut["new_size"] < cut["old_size"] == 22
        assert Path(cut["file"]).stat().st_size == cut["new_size"]
    assert fault.heal(cluster) == {"nodes": ["n1", "n2"]}


@needs_lazyfs
def test_a_truncation_on_lazyfs_is_durable(cluster: ProcessCluster) -> None:
    spawned: list[int] = []
    lazyfs = mount_data_dir(cluster.nodes[0].data_dir, on_spawn=spawned.append)
    try:
        assert spawned == [lazyfs.pid]
        cluster.start(["n1"])
        fault = TruncateFault(DirectoryDB())
        fault.inject(cluster, random.Random(0), {"nodes": ["n1"], "bytes": 16})
        # A later power loss must not bring the cut bytes back.
        lazyfs.lose_unsynced()
        assert (cluster.nodes[0].data_dir / "log").read_bytes() == b"start\n"
    finally:
        cluster.kill(list(cluster.processes))
        lazyfs.stop()


class StateFileDB(DirectoryDB):
    """Each node keeps its votes in `state` (raft: the quorum-state file)."""

    def state_files(self, node: NodeSpec) -> list[Path]:
        return [node.data_dir / "state"]


def test_lose_state_takes_the_leader_down_and_restarts_a_follower_without_its_state(
        tmp_path: Path) -> None:
    c = ProcessCluster(tmp_path, ["n1", "n2", "n3"])
    c.leader = lambda: "n2"
    try:
        c.start(c.names)
        for spec in c.nodes:
            (spec.data_dir / "state").write_text("voted")
        fault = LoseStateFault(StateFileDB())
        value = fault.inject(c, random.Random(1), {})
        node = value["lost_state"]
        assert value["leader"] == "n2" and node in ("n1", "n3")
        assert value["nodes"] == ["n2", node]
        assert value["removed"] == [str(c.spec(node).data_dir / "state")]
        # The follower is back at once, without its state and with the rest of its disk.
        assert c.is_running(node) and not c.is_running("n2")
        assert not (c.spec(node).data_dir / "state").exists()
        assert (c.spec(node).data_dir / "log").exists()
        assert all((c.spec(n).data_dir / "state").exists() for n in c.names if n != node)
        assert fault.heal(c) == {"nodes": ["n2"]}
        assert all(c.is_running(n) for n in c.names)
    finally:
        c.kill(list(c.processes))


def test_lose_state_waits_for_an_election_before_it_aims(tmp_path: Path) -> None:
    """Drawn while the cluster still elects (a heal just restarted the
    leader), it waits for a leader instead of doing nothing, and says so."""
    c = ProcessCluster(tmp_path, ["n1", "n2", "n3"])
    answers = iter([None, None, "n2"])
    c.leader = lambda: next(answers, "n2")
    try:
        c.start(c.names)
        value = LoseStateFault(StateFileDB()).inject(c, random.Random(1), {})
        assert value["leader"] == "n2" and not c.is_running("n2")
        assert value["waited_for_leader_s"] > 0
    finally:
        c.kill(list(c.processes))


def test_lose_state_with_no_leader_after_the_wait_does_nothing(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr("nemesis.fault.ELECTION_WAIT_S", 0.0)
    c = ProcessCluster(tmp_path, ["n1", "n2", "n3"])
    c.leader = lambda: None
    try:
        c.start(c.names)
        with pytest.raises(RuntimeError, match="no leader and follower to aim at"):
            LoseStateFault(StateFileDB()).inject(c, random.Random(1), {})
        assert all(c.is_running(n) for n in c.names)
    finally:
        c.kill(list(c.processes))


def test_a_replayed_lose_state_hits_the_recorded_leader_and_follower_without_asking(
        tmp_path: Path, monkeypatch) -> None:
    """A replay plays the nodes its original hit, after the wait it recorded;
    one whose original found no leader fails again at once."""
    slept: list[float] = []
    monkeypatch.setattr("nemesis.fault.time", SimpleNamespace(sleep=slept.append))
    c = ProcessCluster(tmp_path, ["n1", "n2", "n3"])

    def asked() -> str:
        raise AssertionError("a replay asked who leads")

    c.leader = asked
    try:
        c.start(c.names)
        for spec in c.nodes:
            (spec.data_dir / "state").write_text("voted")
        fault = LoseStateFault(StateFileDB())
        value = fault.inject(c, random.Random(1), {"nodes": ["n3", "n1"],
                                                   WAITED_FOR_LEADER: 0.9})
        assert (value["leader"], value["lost_state"], value[WAITED_FOR_LEADER]) == (
            "n3", "n1", 0.9)
        assert slept == [0.9] and not c.is_running("n3") and c.is_running("n1")
        assert not (c.spec("n1").data_dir / "state").exists()
        fault.heal(c)
        with pytest.raises(NoLeader):
            fault.inject(c, random.Random(1), {FOUND_NO_LEADER: True})
        assert all(c.is_running(n) for n in c.names)
    finally:
        c.kill(list(c.processes))


def test_lose_state_needs_a_db_that_names_its_state_files() -> None:
    with pytest.raises(ValueError, match="state files"):
        LoseStateFault(DirectoryDB())
