"""LazyFS: a real FUSE mount that forgets exactly the writes no fsync covered."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nemesis.lazyfs import (
    LazyFS,
    LazyFSError,
    check_installed,
    force_cleanup,
    mount_data_dir,
    send_command,
)

_missing = check_installed()
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")


@pytest.fixture
def lazyfs(tmp_path: Path) -> Iterator[LazyFS]:
    fs = LazyFS(tmp_path / "backing", tmp_path / "mnt", tmp_path / "ctl.sock")
    fs.start()
    try:
        yield fs
    finally:
        fs.stop()
        assert not os.path.ismount(tmp_path / "mnt")


def write_file(path: Path, data: bytes, *, offset: int = 0, sync: str | None = None) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, offset)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_fsynced_data_survives(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "log"
    write_file(path, b"committed", sync="fsync")
    lazyfs.lose_unsynced()
    assert path.read_bytes() == b"committed"
    assert (lazyfs.backing / "log").read_bytes() == b"committed"


def test_unsynced_append_is_lost_exactly(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "log"
    write_file(path, b"a" * 5000, sync="fsync")
    write_file(path, b"b" * 3000, offset=5000)
    assert os.stat(path).st_size == 8000

    undone = lazyfs.lose_unsynced()

    assert path.read_bytes() == b"a" * 5000
    assert undone == [
        {"path": "/log", "inode": os.stat(path).st_ino, "size_before": 8000,
         "synced_size": 5000, "pages_restored": 1}
    ]


def test_unsynced_overwrite_restores_pre_images_across_pages(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "data"
    original = random.Random(1).randbytes(3 * 4096 + 100)
    write_file(path, original, sync="fsync")
    write_file(path, b"X" * 5000, offset=4000)  # straddles pages 0, 1 and 2
    write_file(path, b"Y" * 10, offset=len(original) - 5)  # overwrites the tail, extends

    lazyfs.lose_unsynced()

    assert path.read_bytes() == original


def test_only_writes_since_the_last_fsync_are_lost(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "log"
    write_file(path, b"one,", sync="fsync")
    write_file(path, b"two,", offset=4, sync="fdatasync")
    write_file(path, b"three", offset=8)
    lazyfs.lose_unsynced()
    assert path.read_bytes() == b"one,two,"

    write_file(path, b"four", offset=8, sync="fsync")
    write_file(path, b"FIVE", offset=0)
    lazyfs.lose_unsynced()
    assert path.read_bytes() == b"one,two,four"


def test_shrinking_truncate_is_undone(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "seg"
    original = random.Random(2).randbytes(10_000)
    write_file(path, original, sync="fsync")
    os.truncate(path, 1000)
    write_file(path, b"new tail", offset=1000)  # then grows again over the cut range

    lazyfs.lose_unsynced()

    assert path.read_bytes() == original


def test_open_with_o_trunc_is_undone(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "state"
    write_file(path, b"epoch=7", sync="fsync")
    path.write_bytes(b"epoch=8, never synced")
    lazyfs.lose_unsynced()
    assert path.read_bytes() == b"epoch=7"


def test_o_dsync_writes_are_durable(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "wal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DSYNC, 0o644)
    try:
        os.write(fd, b"synchronous")
    finally:
        os.close(fd)
    lazyfs.lose_unsynced()
    assert path.read_bytes() == b"synchronous"


def test_created_never_fsynced_file_survives_empty(lazyfs: LazyFS) -> None:
    # Documented semantics: names are durable at once, data only at fsync.
    path = lazyfs.mountpoint / "sub" / "fresh"
    path.parent.mkdir()
    path.write_bytes(b"never synced")
    lazyfs.lose_unsynced()
    assert path.exists()
    assert path.read_bytes() == b""


def test_rename_keeps_data_state_with_the_file(lazyfs: LazyFS) -> None:
    mnt = lazyfs.mountpoint
    write_file(mnt / "current", b"old state", sync="fsync")
    # The atomic-replace pattern: the new content was fsynced before the rename.
    write_file(mnt / "next.tmp", b"new state", sync="fsync")
    os.rename(mnt / "next.tmp", mnt / "current")
    # The careless pattern: renamed without fsync, so its data is lost.
    write_file(mnt / "careless.tmp", b"careless")
    os.rename(mnt / "careless.tmp", mnt / "careless")

    lazyfs.lose_unsynced()

    assert (mnt / "current").read_bytes() == b"new state"
    assert (mnt / "careless").read_bytes() == b""
    assert sorted(p.name for p in mnt.iterdir()) == ["careless", "current"]


def test_unlinked_dirty_file_is_forgotten(lazyfs: LazyFS) -> None:
    path = lazyfs.mountpoint / "scratch"
    write_file(path, b"x" * 100, sync="fsync")
    write_file(path, b"y" * 100, offset=100)
    path.unlink()
    assert lazyfs.status()["unsynced_files"] == 0
    assert lazyfs.lose_unsynced() == []
    assert not path.exists()


def test_fsync_of_the_directory_is_passed_through(lazyfs: LazyFS) -> None:
    write_file(lazyfs.mountpoint / "f", b"data")
    fsync_path(lazyfs.mountpoint)
    lazyfs.lose_unsynced()
    # A directory fsync makes names durable, not the data of the files in it.
    assert (lazyfs.mountpoint / "f").read_bytes() == b""


@pytest.mark.parametrize("seed", range(4))
def test_random_writes_truncates_and_fsyncs_match_a_model(lazyfs: LazyFS, seed: int) -> None:
    rng = random.Random(seed)
    path = lazyfs.mountpoint / "model"
    live = bytearray()
    durable = b""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for _ in range(200):
            action = rng.choice(["write", "write", "write", "truncate", "fsync"])
            if action == "write":
                offset = rng.randrange(0, len(live) + 9000)
                data = rng.randbytes(rng.randrange(1, 9000))
                os.pwrite(fd, data, offset)
                live.extend(b"\0" * max(0, offset + len(data) - len(live)))
                live[offset : offset + len(data)] = data
            elif action == "truncate":
                length = rng.randrange(0, len(live) + 5000)
                os.ftruncate(fd, length)
                live = live[:length] + bytearray(max(0, length - len(live)))
            else:
                os.fsync(fd)
                durable = bytes(live)
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(live)

    lazyfs.lose_unsynced()

    assert path.read_bytes() == durable


SQLITE_WRITER = textwrap.dedent(
    """
    import os, signal, sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    for k in range(50):
        db.execute("INSERT INTO t VALUES (?, ?)", (k, "durable" * 20))
    db.execute("PRAGMA synchronous=OFF")
    for k in range(50, 100):
        db.execute("INSERT INTO t VALUES (?, ?)", (k, "volatile" * 20))
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_sqlite_keeps_exactly_its_synced_commits(lazyfs: LazyFS) -> None:
    db_path = lazyfs.mountpoint / "app.db"
    writer = subprocess.run([sys.executable, "-c", SQLITE_WRITER, str(db_path)], timeout=60)
    assert writer.returncode == -signal.SIGKILL

    undone = lazyfs.lose_unsynced()

    assert any(f["path"] == "/app.db-wal" for f in undone)
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*), max(k) FROM t").fetchone() == (50, 49)
    finally:
        db.close()


def test_status_and_unknown_commands(lazyfs: LazyFS) -> None:
    write_file(lazyfs.mountpoint / "f", b"z" * 10, sync="fsync")
    write_file(lazyfs.mountpoint / "f", b"w" * 10)
    status = lazyfs.status()
    assert status["pid"] == lazyfs.pid
    assert status["mounted"] is True
    assert (status["unsynced_files"], status["saved_bytes"]) == (1, 10)
    with pytest.raises(LazyFSError, match="unknown command"):
        send_command(lazyfs.control, "format-disk")


def test_stop_unmounts_and_ends_the_process(tmp_path: Path) -> None:
    fs = LazyFS(tmp_path / "b", tmp_path / "m", tmp_path / "c.sock")
    fs.start()
    pid = fs.pid
    try:
        (fs.mountpoint / "f").write_bytes(b"kept in backing")
    finally:
        fs.stop()
    assert not os.path.ismount(tmp_path / "m")
    assert pid is not None and not Path(f"/proc/{pid}").exists()
    assert (tmp_path / "b" / "f").read_bytes() == b"kept in backing"


def test_control_socket_path_longer_than_sun_path(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    fs = LazyFS(tmp_path / "b", tmp_path / "m", deep / "control.sock")
    fs.start()
    try:
        assert fs.status()["mounted"] is True
    finally:
        fs.stop()


def test_mount_data_dir_moves_existing_files_onto_the_mount(tmp_path: Path) -> None:
    data_dir = tmp_path / "nodes" / "n1"
    data_dir.mkdir(parents=True)
    (data_dir / "quorum-state").write_bytes(b"epoch 3")
    fs = mount_data_dir(data_dir)
    try:
        assert os.path.ismount(data_dir)
        assert fs.backing == tmp_path / "nodes" / "n1.backing"
        assert (data_dir / "quorum-state").read_bytes() == b"epoch 3"
        write_file(data_dir / "quorum-state", b"epoch 4")
        fs.lose_unsynced()
        assert (data_dir / "quorum-state").read_bytes() == b"epoch 3"
    finally:
        fs.stop()
    assert not os.path.ismount(data_dir)


def test_concurrent_writers_each_lose_exactly_their_unsynced_tail(lazyfs: LazyFS) -> None:
    def writer(i: int) -> None:
        path = lazyfs.mountpoint / f"w{i}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for k in range(50):
                os.write(fd, f"{i}:{k},".encode())
                if k == 29:
                    os.fsync(fd)
        finally:
            os.close(fd)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lazyfs.status()["unsynced_files"] == 4

    lazyfs.lose_unsynced()

    for i in range(4):
        expected = "".join(f"{i}:{k}," for k in range(30)).encode()
        assert (lazyfs.mountpoint / f"w{i}").read_bytes() == expected


def test_sigterm_unmounts_cleanly(tmp_path: Path) -> None:
    fs = LazyFS(tmp_path / "b", tmp_path / "m", tmp_path / "c.sock")
    fs.start()
    try:
        assert fs.pid is not None
        os.kill(fs.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while os.path.ismount(tmp_path / "m"):
            assert time.monotonic() < deadline, "SIGTERM did not unmount"
            time.sleep(0.02)
    finally:
        fs.stop()


def test_force_cleanup_after_the_process_was_killed(tmp_path: Path) -> None:
    fs = LazyFS(tmp_path / "b", tmp_path / "m", tmp_path / "c.sock")
    fs.start()
    pid = fs.pid
    try:
        assert pid is not None
        # What a crashed harness leaves: a mount whose server is gone.
        os.kill(pid, signal.SIGKILL)
        force_cleanup(pid, fs.mountpoint)
        assert not os.path.ismount(tmp_path / "m")
        force_cleanup(None, fs.mountpoint)  # idempotent
    finally:
        fs.stop()


NOBODY = 65534


def test_what_another_user_creates_is_that_users_and_opens_with_o_noatime() -> None:
    """A server that runs as its own user (a database dropping root) makes its files
    through the mount and opens them with O_NOATIME, which only a file's
    owner may: the mount (root) must give the file to its maker. Root's own
    files stay root's (the twin)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    import tempfile
    with tempfile.TemporaryDirectory(prefix="lazyfs-owner-") as where:
        root = Path(where)
        root.chmod(0o755)   # the other user passes through to the mount
        fs = LazyFS(root / "backing", root / "mnt", root / "ctl.sock")
        (root / "backing").mkdir()
        (root / "backing").chmod(0o777)
        fs.start()
        try:
            script = textwrap.dedent("""
                import os, sys
                os.setgid(65534); os.setuid(65534)
                d = os.path.join(sys.argv[1], "sub")
                os.mkdir(d)
                fd = os.open(os.path.join(d, "cache"), os.O_RDWR | os.O_CREAT, 0o600)
                os.close(fd)
                fd = os.open(os.path.join(d, "cache"), os.O_RDWR | os.O_NOATIME)
                os.close(fd)
            """)
            done = subprocess.run([sys.executable, "-c", script, str(fs.mountpoint)],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            backing = root / "backing" / "sub"
            assert backing.stat().st_uid == NOBODY and backing.stat().st_gid == NOBODY
            assert (backing / "cache").stat().st_uid == NOBODY
            write_file(fs.mountpoint / "roots", b"x")
            assert (root / "backing" / "roots").stat().st_uid == 0
        finally:
            fs.stop()
