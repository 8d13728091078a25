"""The raft store on a disk that refuses writes (a LazyFS mount with a `disk:eio`
rule): the correct node stops (exit 74) and acknowledges nothing it could not
write; the `ignore-write-error` switch acknowledges past a hole in its log."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nemesis.diskfault import parse_variant
from nemesis.lazyfs import LazyFS, check_installed, mount_data_dir
from nodes.raft import bugs
from nodes.raft.local_cluster import LocalCluster
from nodes.raft.server import DISK_FAILED_EXIT
from nodes.raft.storage import LogRecord, SegmentedLog

_missing = check_installed()
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")

SEGMENT_WRITES_FAIL = "eio=1+ops=write+files=*.seg"


def refuse_segment_writes(fs: LazyFS) -> None:
    fs.add_disk_fault(parse_variant(SEGMENT_WRITES_FAIL).rule(0).to_map())


def records(start: int, n: int) -> list[LogRecord]:
    return [LogRecord(o, 1, f"v{o}".encode()) for o in range(start, start + n)]


@pytest.mark.parametrize("ignore", [False, True])
def test_a_refused_log_write_raises_unless_the_switch_swallows_it(tmp_path: Path,
                                                                  ignore: bool) -> None:
    fs = mount_data_dir(tmp_path / "data")
    try:
        log, _ = SegmentedLog.open(tmp_path / "data")
        log.ignore_write_errors = ignore
        log.append(records(0, 3))
        log.sync()
        refuse_segment_writes(fs)
        if not ignore:
            with pytest.raises(OSError):
                log.append(records(3, 2))
            assert log.log_end == 3                  # nothing claimed
        else:
            log.append(records(3, 2))                # the bug: as if written
            assert log.log_end == 5
        fs.heal_disk()
        if ignore:
            log.append(records(5, 1))
            log.sync()
            assert log.flushed_end == 6              # "durable" past the hole
        log.close()
        reopened, _ = SegmentedLog.open(tmp_path / "data")
        # What the disk holds: the first three, and (the switch) nothing past the hole.
        assert reopened.log_end == 3
        reopened.close()
    finally:
        fs.stop()


@pytest.mark.slow
def test_the_node_stops_on_a_refused_write_and_acknowledges_nothing_past_it(
        tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, size=1)
    fs = mount_data_dir(cluster.data_dir("n1"))
    try:
        cluster.start("n1")
        cluster.wait_for_leader()
        client = cluster.client(timeout=3.0)
        try:
            assert client.call("put", key="k", value=1).ok
            refuse_segment_writes(fs)
            try:
                acked = client.call("put", key="k", value=2).ok
            except OSError:
                acked = False                    # the node went away mid-request
        finally:
            client.close()
        assert not acked
        proc = cluster.procs["n1"]
        deadline = time.monotonic() + 30       # a hang guard, not a speed claim
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.returncode == DISK_FAILED_EXIT
        assert "storage failed" in (tmp_path / "n1" / "stderr.log").read_text()
    finally:
        cluster.close()
        fs.stop()


@pytest.mark.slow
def test_the_switch_acknowledges_a_write_its_disk_refused(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, size=1, extra_args=["--bug", bugs.IGNORE_WRITE_ERROR])
    fs = mount_data_dir(cluster.data_dir("n1"))
    try:
        cluster.start("n1")
        cluster.wait_for_leader()
        client = cluster.client()
        try:
            assert client.call("put", key="k", value=1).ok
            refuse_segment_writes(fs)
            assert client.call("put", key="k", value=2).ok   # acknowledged, never written
        finally:
            client.close()
        fs.heal_disk()
        cluster.kill("n1")
        cluster.start("n1")
        cluster.wait_for_leader()
        client = cluster.client()
        try:
            assert client.call("get", key="k").value == 1     # the acknowledged 2 is gone
        finally:
            client.close()
    finally:
        cluster.close()
        fs.stop()
