"""Crash safety: a journal of everything a run creates, and the sweeper that
removes what a killed harness left behind.

Each run appends one JSON line per namespace, veth, process, mount and temp
dir to `results/<run>/resources.jsonl` *before* relying on it, and a line
saying it was released when teardown removes it. An index of live journals
(symlinks under `/run/faultline/`) lets `faultline clean` find runs whose
harness died without tearing down. `/run` is tmpfs, like the namespaces it
indexes, so neither outlives a reboot.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from nemesis.netns import (  # noqa: F401 (re-exported for the sweeper's callers)
    NETNS_DIR,
    netns_of_run,
    netns_prefix,
    pids_in_netns,
    remove_netns,
)

STATE_DIR_ENV = "FAULTLINE_STATE_DIR"
DEFAULT_STATE_DIR = Path("/run/faultline")
PR_SET_CHILD_SUBREAPER = 36
# Two readings of one process's create_time differ by clock-tick rounding only.
START_TIME_TOLERANCE = 0.05
# Sweep order: stop what uses things before removing the things.
SWEEP_ORDER = ("process", "cgroup", "mount", "veth", "netns", "tempdir")


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def process_start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None


def same_process(pid: int, start_time: float) -> bool:
    """True if `pid` is still the process that had `start_time` (never a reused pid)."""
    now = process_start_time(pid)
    return now is not None and abs(now - start_time) < START_TIME_TOLERANCE


def harness_alive(pid: int, start_time: float) -> bool:
    """True if that harness can still tear its run down: the same process and
    not a zombie. A SIGKILLed harness its parent has not reaped yet is a zombie:
    it runs no code again, and waiting for its parent would leave the run's
    namespaces up (and the run `running`) for as long as the parent likes."""
    if not same_process(pid, start_time):
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class ResourceLog:
    """The append-only journal of one run's resources.

    Writes go straight to the OS (O_APPEND, no buffering): a SIGKILLed
    harness loses nothing it wrote. No fsync: what it records (processes,
    namespaces, tmpfs mounts) does not survive a machine crash either.
    """

    def __init__(self, path: Path, run_id: str, index_dir: Path | None = None) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.index_dir = index_dir or state_dir()
        self._lock = threading.Lock()
        self._next_id = 0
        self._live: dict[int, dict[str, Any]] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                           0o644)
        me = os.getpid()
        self._write({"op": "owner", "run_id": run_id, "pid": me,
                     "start_time": process_start_time(me)})
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.index_entry = self.index_dir / f"{run_id}.jsonl"
        if not self.index_entry.is_symlink():
            self.index_entry.symlink_to(self.path.resolve())

    def _write(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, sort_keys=True) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data):]

    def add(self, kind: str, **fields: Any) -> int:
        """Record a resource about to be (or just) created; returns its id for `release`."""
        if kind not in SWEEP_ORDER:
            raise ValueError(f"unknown resource kind {kind!r}")
        with self._lock:
            rid = self._next_id
            self._next_id += 1
            record = {"op": "add", "id": rid, "kind": kind, **fields}
            self._live[rid] = record
            self._write(record)
            return rid

    def add_process(self, pid: int) -> int:
        return self.add("process", pid=pid, pgid=_pgid(pid), start_time=process_start_time(pid))

    def release(self, rid: int) -> None:
        with self._lock:
            if self._live.pop(rid, None) is not None:
                self._write({"op": "release", "id": rid})

    def live(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._live.values())

    def close(self) -> None:
        """Stop journalling; the index entry goes only when nothing is left to sweep."""
        with self._lock:
            if self._fd < 0:
                return
            os.close(self._fd)
            self._fd = -1
            if not self._live:
                self.index_entry.unlink(missing_ok=True)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


@dataclass
class Journal:
    """A journal read back: who owned it and what it still holds."""
    run_id: str | None
    owner_pid: int | None
    owner_start_time: float | None
    live: list[dict[str, Any]] = field(default_factory=list)

    def owner_alive(self) -> bool:
        return (self.owner_pid is not None and self.owner_start_time is not None
                and harness_alive(self.owner_pid, self.owner_start_time))


def read_journal(path: Path) -> Journal:
    """Parse a journal; a torn last line (harness killed mid-write) is skipped."""
    journal = Journal(None, None, None)
    live: dict[int, dict[str, Any]] = {}
    with open(path, "rb") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            op = rec.get("op")
            if op == "owner":
                journal.run_id = rec.get("run_id")
                journal.owner_pid = rec.get("pid")
                journal.owner_start_time = rec.get("start_time")
            elif op == "add" and isinstance(rec.get("id"), int):
                live[rec["id"]] = rec
            elif op == "release" and isinstance(rec.get("id"), int):
                live.pop(rec["id"], None)
    journal.live = list(live.values())
    return journal


# --- sweeping ----------------------------------------------------------------


@dataclass
class SweepReport:
    removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # runs still alive


def kill_process(pid: int, pgid: int | None, start_time: float | None) -> bool:
    """SIGKILL a recorded process (and its group) if the pid still names it."""
    if start_time is None or not same_process(pid, start_time):
        return False
    if pgid == pid:
        # A session leader we started: its group holds the helpers it forked.
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc = psutil.Process(pid)
        for child in proc.children(recursive=True):
            child.kill()
        proc.kill()
    except psutil.NoSuchProcess:
        pass
    return True


def mounted_paths() -> set[str]:
    paths = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 4:
                paths.add(parts[4].encode().decode("unicode_escape"))
    return paths


def unmount(path: str) -> bool:
    """Lazily unmount `path` (FUSE or kernel); False if it was not mounted."""
    if path not in mounted_paths():
        return False
    for argv in (["fusermount3", "-u", "-z", path], ["umount", "-l", path]):
        try:
            if subprocess.run(argv, capture_output=True, timeout=10).returncode == 0:
                return True
        except (OSError, subprocess.TimeoutExpired):
            continue
    raise OSError(f"could not unmount {path}")


def sweep_record(rec: dict[str, Any]) -> str | None:
    """Remove one journalled resource; returns what was done, None if already gone."""
    kind = rec["kind"]
    if kind == "process":
        if kill_process(rec["pid"], rec.get("pgid"), rec.get("start_time")):
            return f"killed process {rec['pid']}"
    elif kind == "cgroup":
        # A node's cgroup (nemesis.host): what still runs in it is killed first.
        from nemesis.cgroups import remove
        done = remove(Path(p) for p in rec["paths"])
        return "; ".join(done) or None
    elif kind == "mount":
        if unmount(rec["path"]):
            return f"unmounted {rec['path']}"
    elif kind == "veth":
        # A veth dies with its namespace; nothing to do unless the namespace survives.
        return None
    elif kind == "netns":
        for pid in pids_in_netns(rec["name"]):
            kill_process(pid, None, process_start_time(pid))
        if remove_netns(rec["name"]):
            return f"deleted namespace {rec['name']}"
    elif kind == "tempdir":
        path = Path(rec["path"])
        if path.is_dir() and len(path.parts) > 2:
            shutil.rmtree(path, ignore_errors=True)
            return f"removed {path}"
    return None


def sweep_journal(path: Path, force: bool = False) -> SweepReport:
    """Remove everything a journal still holds, then its index entry.

    Refuses a journal whose harness is still alive (unless `force`): that run
    is not crashed, it is running.
    """
    report = SweepReport()
    journal = read_journal(path)
    if journal.owner_alive() and not force:
        report.skipped.append(f"run {journal.run_id} is still running (harness pid "
                             f"{journal.owner_pid}); not cleaned")
        return report
    for kind in SWEEP_ORDER:
        for rec in reversed([r for r in journal.live if r.get("kind") == kind]):
            try:
                done = sweep_record(rec)
            except (OSError, KeyError, psutil.Error) as e:
                report.errors.append(f"{kind} {rec}: {e}")
                continue
            if done:
                report.removed.append(done)
    # Belt and braces: namespaces named for this run that the journal missed
    # (e.g. killed between create and append) still carry the run id.
    if journal.run_id:
        for name in netns_of_run(journal.run_id):
            for pid in pids_in_netns(name):
                if kill_process(pid, None, process_start_time(pid)):
                    report.removed.append(f"killed process {pid} in {name}")
            if remove_netns(name):
                report.removed.append(f"deleted namespace {name}")
    return report


def live_journals(index_dir: Path | None = None) -> list[Path]:
    directory = index_dir or state_dir()
    try:
        return sorted(directory.glob("*.jsonl"))
    except FileNotFoundError:
        return []


def dead_runs_with_leftovers(index_dir: Path | None = None) -> list[str]:
    """Run ids whose harness is dead but whose journal still holds resources
    (their watchdog was killed too, or the sweep failed): `faultline clean` work."""
    out = []
    for entry in live_journals(index_dir):
        rid = entry.name.removesuffix(".jsonl")
        if not entry.exists():
            if netns_of_run(rid):
                out.append(rid)
            continue
        try:
            journal = read_journal(entry)
        except OSError:
            continue
        if journal.live and not journal.owner_alive():
            out.append(journal.run_id or rid)
    return out


def sweep_all(index_dir: Path | None = None, run_id: str | None = None,
              force: bool = False) -> SweepReport:
    """Sweep every indexed journal (or only `run_id`'s); drop index entries swept clean."""
    total = SweepReport()
    for entry in live_journals(index_dir):
        if run_id is not None and entry.name != f"{run_id}.jsonl":
            continue
        if not entry.exists():
            # The results dir was deleted: only the run id (in the name) is left.
            rid = entry.name.removesuffix(".jsonl")
            for name in netns_of_run(rid):
                for pid in pids_in_netns(name):
                    kill_process(pid, None, process_start_time(pid))
                if remove_netns(name):
                    total.removed.append(f"deleted namespace {name}")
            entry.unlink(missing_ok=True)
            continue
        report = sweep_journal(entry, force=force)
        total.removed += report.removed
        total.errors += report.errors
        total.skipped += report.skipped
        if not report.errors and not report.skipped:
            entry.unlink(missing_ok=True)
    return total


# --- harness process hygiene ---------------------------------------------------


def become_subreaper() -> None:
    """Orphans of our nodes (helpers they forked) re-parent to us, not to init,
    so they stay ours to kill and reap."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


class Terminated(SystemExit):
    """SIGTERM/SIGHUP turned into an exception so `finally` blocks tear down."""


# What a user sends to stop a run: each unwinds the stack so teardown runs.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(128 + signum)


def install_termination_handlers() -> None:
    """Make SIGTERM and SIGHUP unwind the stack like Ctrl-C does (main thread only).

    A signal this process inherited as ignored stays ignored: `nohup` (SIGHUP)
    and a shell's background jobs rely on that, as with Python's own SIGINT."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _raise_terminated)


_deferring = False  # main thread only: whether a signals_deferred block is open


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold off Ctrl-C/SIGTERM/SIGHUP while tearing down, so teardown is not itself
    torn: the first one is noted and acted on when the block ends; a second one
    acts at once (a teardown that hangs must not make the harness unstoppable;
    the watchdog sweeps what it leaves).

    Deferred by a Python handler, not pthread_sigmask: the kernel hands a
    process-directed signal to any thread that does not block it, and CPython
    then runs the handler in the main thread at its next bytecode, so a mask on
    the main thread alone defers nothing while other threads (the node
    spawner, the nemesis) live. A Python handler runs in the main thread
    whichever thread the kernel picked."""
    global _deferring
    # Nested (a run's teardown around the cluster's): the outer block already
    # holds the signals, and a second handler layer would swallow the second
    # Ctrl-C that must act at once.
    if threading.current_thread() is not threading.main_thread() or _deferring:
        yield
        return
    noted: list[int] = []
    saved: dict[int, Any] = {}

    def restore() -> None:
        while saved:
            sig, handler = saved.popitem()
            signal.signal(sig, handler)

    def note(signum: int, frame: object) -> None:
        noted.append(signum)
        if len(noted) > 1:
            restore()
            signal.raise_signal(signum)

    for sig in STOP_SIGNALS:
        handler = signal.getsignal(sig)
        if handler is signal.SIG_IGN or handler is None:
            continue  # ignored stays ignored; None: set outside Python, leave it
        saved[sig] = signal.signal(sig, note)
    _deferring = True
    try:
        yield
    finally:
        _deferring = False
        if saved:
            restore()
            if noted:
                signal.raise_signal(noted[0])
