"""Who may touch a campaign dir: one campaign process at a time, and each
run's worker for as long as it lives.

Both are flock locks, which the kernel drops when their holder dies however it
dies (SIGKILL too), so a lock is never stale and no pid is ever trusted:

- `campaign.lock`: held by `faultline campaign` (start or --resume) for as long
  as it runs; a second one on the same id is refused, naming the holder.
- `work/<index>.lock`: taken by the campaign before it starts a run's worker
  and inherited by the worker (the same open file), so it is held from before
  the worker exists until the worker exits, even if the campaign is killed in
  between. A resume that finds it held knows a worker of the killed campaign
  is still running that run, and waits for it instead of running it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.run.errors import HarnessError, UserError
from harness.run.resources import process_start_time

CAMPAIGN_LOCK = "campaign.lock"


def _open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def holder_record() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "host": platform.node(), "start_time": process_start_time(pid),
            "since": datetime.now(UTC).isoformat(timespec="seconds")}


def holder_text(path: Path) -> str:
    """Who holds a lock, from what its holder wrote into the lock file."""
    try:
        doc = json.loads(path.read_text())
        return f"pid {doc['pid']} on {doc['host']}, since {doc['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"


@contextlib.contextmanager
def campaign_lock(cdir: Path) -> Iterator[None]:
    """Hold the campaign's lock, or refuse (254) saying who holds it."""
    path = cdir / CAMPAIGN_LOCK
    fd = _open_lock(path)
    try:
        if not _try_flock(fd):
            raise UserError(f"campaign {cdir.name} is in use by {holder_text(path)}; "
                            "one campaign process at a time may run or resume it")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder_record()).encode(), 0)
        yield
    finally:
        os.close(fd)


def run_lock_path(work: Path, index: int) -> Path:
    return work / f"{index}.lock"


def take_run_lock(work: Path, index: int) -> int:
    """The run's lock, held, as an fd for its worker to inherit."""
    fd = _open_lock(run_lock_path(work, index))
    if not _try_flock(fd):
        os.close(fd)
        raise HarnessError(f"run {index + 1} of the campaign still has a live worker "
                           f"({holder_text(work / f'{index}.worker.json')})")
    return fd


def worker_alive(work: Path, index: int) -> bool:
    """True if a worker of an earlier campaign process is still running this run."""
    path = run_lock_path(work, index)
    if not path.exists():
        return False
    fd = _open_lock(path)
    try:
        return not _try_flock(fd)
    finally:
        os.close(fd)


def wait_for_worker(work: Path, index: int) -> None:
    """Block until no worker holds the run's lock (it has exited)."""
    fd = _open_lock(run_lock_path(work, index))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)
