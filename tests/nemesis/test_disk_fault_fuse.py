"""The `disk` faults on a real LazyFS mount: what a process reading and writing
through it gets (EIO at the rate asked, ENOSPC, delays, a flipped bit), and
that the heal takes each away and leaves the file as it was."""

from __future__ import annotations

import errno
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkers.history import NOOP
from nemesis.diskfault import DiskFault, parse_variant
from nemesis.lazyfs import LazyFS, check_installed
from nodes.db import NodeSpec

_missing = check_installed()
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")

N = 400


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[LazyFS]:
    fs = LazyFS(tmp_path / "backing", tmp_path / "mnt", tmp_path / "ctl.sock")
    fs.start()
    try:
        yield fs
    finally:
        fs.stop()
        assert not os.path.ismount(tmp_path / "mnt")


def fault(fs: LazyFS, variant: str, seed: int = 1) -> None:
    fs.add_disk_fault(parse_variant(variant).rule(seed).to_map())


def errors_of(calls: Iterator[None]) -> dict[int, int]:
    seen: dict[int, int] = {}
    for call in calls:
        try:
            call()
        except OSError as e:
            seen[e.errno] = seen.get(e.errno, 0) + 1
    return seen


def pwrite_once(path: Path, data: bytes = b"x" * 100) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)


def pread_once(path: Path, size: int = 4096) -> bytes:
    # A fresh open each time: FUSE drops the file's page cache on open, so
    # every read reaches the filesystem.
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def test_eio_fails_writes_at_the_rate_asked_and_heal_ends_it(mount: LazyFS) -> None:
    path = mount.mountpoint / "data.seg"
    pwrite_once(path)
    fault(mount, "eio=0.25+ops=write")
    seen = errors_of(lambda: pwrite_once(path) for _ in range(N))
    # Binomial(400, 0.25): mean 100, sd ~8.7; 4.5 sd either side.
    assert set(seen) == {errno.EIO} and 61 <= seen[errno.EIO] <= 139, seen
    # Reads were not asked for.
    assert errors_of(lambda: pread_once(path) for _ in range(50)) == {}
    (healed,) = mount.heal_disk()
    assert healed["did"]["eio-write"] == seen[errno.EIO]
    assert errors_of(lambda: pwrite_once(path) for _ in range(N)) == {}


def test_eio_on_reads_reaches_the_reader(mount: LazyFS) -> None:
    path = mount.mountpoint / "data.seg"
    pwrite_once(path)
    fault(mount, "eio=0.5+ops=read")
    seen = errors_of(lambda: pread_once(path) for _ in range(N))
    assert set(seen) == {errno.EIO} and 155 <= seen[errno.EIO] <= 245, seen
    mount.heal_disk()
    assert pread_once(path) == b"x" * 100


def test_eio_only_on_the_files_named(mount: LazyFS) -> None:
    seg, other = mount.mountpoint / "a.seg", mount.mountpoint / "quorum-state"
    pwrite_once(seg)
    pwrite_once(other)
    fault(mount, "eio=1+files=*.seg")
    assert errors_of(lambda: pwrite_once(seg) for _ in range(20)) == {errno.EIO: 20}
    assert errors_of(lambda: pwrite_once(other) for _ in range(20)) == {}


def test_full_returns_enospc_and_says_no_space_until_healed(mount: LazyFS) -> None:
    path = mount.mountpoint / "data"
    pwrite_once(path)
    fault(mount, "full")
    assert errors_of(lambda: pwrite_once(path) for _ in range(20)) == {errno.ENOSPC: 20}
    with pytest.raises(OSError) as created:
        (mount.mountpoint / "new-file").write_bytes(b"y")
    assert created.value.errno == errno.ENOSPC
    assert os.statvfs(mount.mountpoint).f_bavail == 0
    assert pread_once(path) == b"x" * 100          # reads still work
    mount.heal_disk()
    pwrite_once(path, b"z" * 100)
    assert os.statvfs(mount.mountpoint).f_bavail > 0
    assert pread_once(path) == b"z" * 100


def test_slow_delays_ops_and_fsync_separately_until_healed(mount: LazyFS) -> None:
    path = mount.mountpoint / "data"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fault(mount, "slow=30+fsync=300")
        started = time.monotonic()
        os.fsync(fd)
        fsync_s = time.monotonic() - started
        started = time.monotonic()
        os.pwrite(fd, b"x", 0)
        write_s = time.monotonic() - started
        # Lower bounds only: the delays are sleeps the filesystem must have taken.
        assert fsync_s >= 0.3 and write_s >= 0.03, (fsync_s, write_s)
        (healed,) = mount.heal_disk()
        assert healed["did"]["delayed"] >= 2
        assert mount.status()["disk_faults"] == []
    finally:
        os.close(fd)


def test_bitflip_returns_one_flipped_bit_and_leaves_the_file_alone(mount: LazyFS) -> None:
    path = mount.mountpoint / "zeros"
    path.write_bytes(bytes(4096))
    fault(mount, "bitflip=1", seed=9)
    for _ in range(20):
        data = pread_once(path)
        assert len(data) == 4096 and sum(bin(b).count("1") for b in data) == 1
    mount.heal_disk()
    assert pread_once(path) == bytes(4096)
    assert (mount.backing / "zeros").read_bytes() == bytes(4096)


def test_bitflip_at_the_probability_asked(mount: LazyFS) -> None:
    path = mount.mountpoint / "zeros"
    path.write_bytes(bytes(512))
    fault(mount, "bitflip=0.2", seed=4)
    flipped = sum(any(pread_once(path, 512)) for _ in range(N))
    assert 53 <= flipped <= 107, flipped   # Binomial(400, 0.2): 80 +- 4.5 sd


class Nodes:
    """The cluster as DiskFault sees it: which nodes run, and starts."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.running = set(names)
        self.started: list[list[str]] = []

    def is_running(self, name: str) -> bool:
        return name in self.running

    def start(self, names: list[str], fresh: bool = False) -> list[str]:
        todo = [n for n in names if n not in self.running]
        self.running |= set(todo)
        self.started.append(todo)
        return todo

    def kill(self, names: list[str]) -> list[str]:
        killed = [n for n in names if n in self.running]
        self.running -= set(killed)
        return killed


def test_the_fault_sets_rules_per_node_and_heal_restarts_every_node_it_refused(
        tmp_path: Path) -> None:
    mounts = {n: LazyFS(tmp_path / f"{n}.b", tmp_path / n, tmp_path / f"{n}.sock")
              for n in ("n1", "n2")}
    for fs in mounts.values():
        fs.start()
    try:
        nodes = Nodes(["n1", "n2", "n3"])
        disk = DiskFault(mounts, parse_variant("eio=1+ops=write"))
        value = disk.inject(nodes, random.Random(3), {"nodes": ["n1", "n2"]})
        again = DiskFault(mounts, parse_variant("eio=1+ops=write")).inject(
            nodes, random.Random(3), {"nodes": ["n1", "n2"]})
        assert value["seeds"] == again["seeds"]           # replay: the same rules
        assert (value["mode"], value["p"], value["ops"]) == ("eio", 1.0, ["write"])
        with pytest.raises(OSError):
            pwrite_once(tmp_path / "n1" / "f")
        nodes.running.discard("n2")                       # it crashed on the error
        healed = disk.heal(nodes)
        # n2 crashed on the error, n1 carried on: both start again, so what
        # either holds of a refused write is what its disk took.
        assert healed["nodes"] == ["n1", "n2"] and healed["restarted"] == ["n1", "n2"]
        assert nodes.started == [["n1", "n2"]] and nodes.is_running("n1")
        pwrite_once(tmp_path / "n1" / "f")
        pwrite_once(tmp_path / "n2" / "f")
        assert disk.heal(nodes)[NOOP]                     # nothing left to heal
    finally:
        for fs in mounts.values():
            fs.stop()
    assert not any(os.path.ismount(tmp_path / n) for n in mounts)


class StateDB:
    def state_files(self, node: NodeSpec) -> list[Path]:
        return [node.data_dir / "quorum-state"]


class NodesWithSpecs(Nodes):
    def __init__(self, dirs: dict[str, Path]) -> None:
        super().__init__(sorted(dirs))
        self.dirs = dirs

    def spec(self, name: str) -> NodeSpec:
        return NodeSpec(name, "127.0.0.1", 1, self.dirs[name], self.dirs[name])


def test_files_state_fails_the_state_file_and_its_replacement_only(mount: LazyFS) -> None:
    nodes = NodesWithSpecs({"n1": mount.mountpoint})
    disk = DiskFault({"n1": mount}, parse_variant("eio=1+ops=write+files=state"), StateDB())
    value = disk.inject(nodes, random.Random(1), {"nodes": ["n1"]})
    assert value["files"] == "/quorum-state*"
    root = mount.mountpoint
    assert errors_of(lambda: pwrite_once(root / "quorum-state") for _ in range(5)) == \
        {errno.EIO: 5}
    assert errors_of(lambda: pwrite_once(root / "quorum-state.tmp") for _ in range(5)) == \
        {errno.EIO: 5}
    assert errors_of(lambda: pwrite_once(root / "log.seg") for _ in range(5)) == {}
    disk.heal(nodes)
    pwrite_once(root / "quorum-state")


def test_healing_one_disk_fault_leaves_another_on_the_same_mount(mount: LazyFS) -> None:
    nodes = Nodes(["n1"])
    slow = DiskFault({"n1": mount}, parse_variant("slow=1"))
    full = DiskFault({"n1": mount}, parse_variant("full"))
    slow.inject(nodes, random.Random(1), {"nodes": ["n1"]})
    full.inject(nodes, random.Random(2), {"nodes": ["n1"]})
    healed = slow.heal(nodes)
    assert [d["mode"] for d in healed["did"]["n1"]] == ["slow"]
    assert [r["mode"] for r in mount.status()["disk_faults"]] == ["full"]
    assert errors_of(lambda: pwrite_once(mount.mountpoint / "f") for _ in range(3)) == \
        {errno.ENOSPC: 3}
    full.heal(nodes)
    assert mount.status()["disk_faults"] == []


def test_a_disk_that_refused_nothing_restarts_only_what_crashed(mount: LazyFS) -> None:
    nodes = Nodes(["n1"])
    slow = DiskFault({"n1": mount}, parse_variant("slow=1"))
    slow.inject(nodes, random.Random(1), {"nodes": ["n1"]})
    assert slow.heal(nodes)["restarted"] == [] and nodes.started == []
    assert nodes.is_running("n1")


def test_the_heal_leaves_down_a_node_that_was_down_before_it_struck(mount: LazyFS) -> None:
    nodes = Nodes(["n1"])
    nodes.running.discard("n1")                  # killed by another fault
    disk = DiskFault({"n1": mount}, parse_variant("eio"))
    disk.inject(nodes, random.Random(1), {"nodes": ["n1"]})
    assert disk.heal(nodes)["restarted"] == []
    assert not nodes.is_running("n1")
