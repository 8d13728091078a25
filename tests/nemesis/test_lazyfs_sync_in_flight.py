"""An fsync makes durable what was written before it was called, never what
lands while it runs; with the slow-disk knob every write therefore stays in
reach of a power cut for at least the delay."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from nemesis.lazyfs import LazyFS, check_installed
from nemesis.lazyfs_main import UndoLog

_missing = check_installed()


def change(undo: UndoLog, fd: int, data: bytes, offset: int) -> None:
    """What LazyFSOperations.write does: pre-images first, then the write."""
    with undo.mutex:
        undo.before_change(fd, "/f", offset, offset + len(data))
        os.pwrite(fd, data, offset)


def contents(fd: int) -> bytes:
    return os.pread(fd, 1 << 20, 0)


@pytest.fixture
def fd(tmp_path: Path):
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o644)
    yield fd
    os.close(fd)


def test_writes_during_an_fsync_stay_unsynced(fd: int) -> None:
    undo = UndoLog()
    change(undo, fd, b"A" * 5000, 0)
    sync = undo.begin_sync(fd)
    change(undo, fd, b"B" * 3000, 5000)      # an append during the delay
    change(undo, fd, b"b" * 10, 4090)         # an overwrite across a page edge
    undo.end_sync(sync)
    undo.roll_back()
    assert contents(fd) == b"A" * 5000


def test_an_fsync_with_nothing_written_during_it_leaves_nothing_to_undo(fd: int) -> None:
    undo = UndoLog()
    change(undo, fd, b"A" * 100, 0)
    sync = undo.begin_sync(fd)
    undo.end_sync(sync)
    assert undo.status()["unsynced_files"] == 0
    assert undo.roll_back() == []
    assert contents(fd) == b"A" * 100


def test_an_unfinished_fsync_makes_nothing_durable(fd: int) -> None:
    undo = UndoLog()
    change(undo, fd, b"A" * 100, 0)
    undo.begin_sync(fd)
    change(undo, fd, b"B" * 100, 100)
    undo.roll_back()
    assert contents(fd) == b""


def test_durability_never_goes_back_when_an_older_fsync_ends_last(fd: int) -> None:
    undo = UndoLog()
    change(undo, fd, b"A" * 100, 0)
    first = undo.begin_sync(fd)
    change(undo, fd, b"B" * 100, 100)
    second = undo.begin_sync(fd)
    change(undo, fd, b"C" * 100, 200)
    undo.end_sync(second)
    undo.end_sync(first)                 # overtaken: changes nothing
    undo.roll_back()
    assert contents(fd) == b"A" * 100 + b"B" * 100


@pytest.mark.skipif(_missing is not None, reason=_missing or "")
def test_on_the_mount_a_write_during_a_slow_fsync_is_lost_and_the_one_before_kept(
        tmp_path: Path) -> None:
    fs = LazyFS(tmp_path / "backing", tmp_path / "mnt", tmp_path / "ctl.sock")
    fs.start()
    try:
        fs.set_fsync_delay(200)
        path = tmp_path / "mnt" / "f"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.write(fd, b"before the call;")
            syncing = threading.Thread(target=os.fsync, args=(fd,))
            syncing.start()
            time.sleep(0.05)
            os.write(fd, b"during the delay")
            syncing.join()
        finally:
            os.close(fd)
        fs.lose_unsynced()
        assert path.read_bytes() == b"before the call;"
    finally:
        fs.stop()
