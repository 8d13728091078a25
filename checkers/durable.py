"""Atomic, durable replacement of a results file.

Every results writer (run.json, verdicts.json, verdicts.parquet, a campaign's
runs.json, a report page) goes through here: the new content is written to a
unique temporary name in the same directory, fsynced, renamed over the old
file and the directory fsynced, so a reader or a crash sees the old file or
the new one, never half of one; concurrent writers never share a temporary
name; and a failed write (a full disk) leaves no partial file behind.
Here, in `checkers`, because both checkers and the harness write results.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

# mkstemp makes its file 0600; a results file keeps the mode a plain open()
# would give it (read once: os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a fresh temporary path beside `path` for the caller to write
    (by name: Parquet writers want one); on a clean exit it becomes `path`
    durably, on an exception it is removed."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
    finally:
        os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (text is UTF-8) atomically and durably."""
    raw = data.encode() if isinstance(data, str) else data
    with replacing(path) as tmp, open(tmp, "wb") as f:
        f.write(raw)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path`.lock (made if absent) for a
    read-modify-write of `path` that concurrent writers must not interleave."""
    lock = Path(path).with_name(Path(path).name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # closing releases the lock
