"""The LazyFS process: a FUSE passthrough filesystem that can forget un-fsynced writes.

Run as `python -m nemesis.lazyfs_main BACKING MOUNTPOINT --control SOCK` (see
`nemesis.lazyfs` for the API that starts it). Every operation goes straight
through to BACKING, so reads are always simply correct; what is kept apart is
an undo log: for each file written since its last fsync, its size at that
fsync and the pre-images of the 4 KiB pages overwritten since. `lose-unsynced`
on the control socket replays the undo log, which leaves every file exactly as
its last fsync (or fdatasync, or the mount) left it - what a power loss would.

Namespace operations (create, rename, unlink, mkdir, link, chmod...) are durable
at once, as on a journaling filesystem that commits metadata in order; only
file data and sizes are rolled back. A file created and written but never
fsynced therefore survives a lose-unsynced, empty.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuse import FUSE, FuseOSError, Operations, fuse_get_context

from nemesis.disk_rules import FULL, DiskRule, RuleState, flip_bit
from nemesis.lazyfs import bind_unix_socket, unmount

PAGE = 4096

# Flags the backing fd must not carry: the kernel has already resolved
# O_CREAT/O_TRUNC/O_APPEND into explicit create/truncate/offsets, pwrite on an
# O_APPEND fd would ignore its offset, and O_DIRECT fails on tmpfs backings.
_STRIPPED_FLAGS = os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_APPEND | os.O_NOCTTY | os.O_DIRECT

InodeKey = tuple[int, int]


# How long an fsync waits while the power is off before it fails anyway.
FROZEN_FSYNC_WAIT_S = 60.0


@dataclass
class UnsyncedFile:
    """What one file looked like at its last fsync, as far as writes since then changed it."""

    fd: int  # our own dup: rollback works after rename, unlink or close
    path: str  # where it was when first dirtied, for reports only
    synced_size: int
    pages: dict[int, bytes] = field(default_factory=dict)  # page index -> pre-image

    def saved_bytes(self) -> int:
        return sum(len(p) for p in self.pages.values())

    def save(self, start: int, end: int | None) -> None:
        """Keep the pre-images of the pages [start, end) (None: to EOF) overlaps
        below `synced_size`, unless already kept."""
        stop = self.synced_size if end is None else min(end, self.synced_size)
        for page in range(start // PAGE, -(-stop // PAGE)):
            if page not in self.pages:
                offset = page * PAGE
                length = min(PAGE, self.synced_size - offset)
                # Unsaved pages below synced_size are untouched since the fsync:
                # a shrinking truncate saves every page it cuts before it cuts.
                self.pages[page] = os.pread(self.fd, length, offset)


@dataclass
class SyncInFlight:
    """An fsync in flight: the file as it was when the fsync was called. A
    flush covers what was written before it was issued; writes that land while
    it runs are not its to make durable (the adversarial reading of fsync)."""

    key: InodeKey
    image: UnsyncedFile     # pre-images of what changed since the call
    done: bool = False      # finished, abandoned, or overtaken by a later one


class UndoLog:
    """Pre-images of everything written since each file's last fsync.

    Callers hold `mutex` around `before_change` + the change itself, so a
    concurrent `roll_back` never sees half of a write.
    """

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        # Signalled by roll_back: fsyncs held while the power is off wait on it.
        self.thawed = threading.Condition(self.mutex)
        self._files: dict[InodeKey, UnsyncedFile] = {}
        # Bumped by every roll_back: an fsync that began before it is void.
        self.generation = 0
        # Set by `release`, until the roll-back: the fsyncs the power cut holds
        # fail now, and any later one at once (every process on the mount has
        # been sent SIGKILL; one still issuing an fsync is dying, and a held
        # call would keep it, unkillable, for FROZEN_FSYNC_WAIT_S).
        self.released = False
        # The power is off (`freeze`): nothing becomes durable until roll_back.
        self.frozen = False
        # Held fsyncs that ran out FROZEN_FSYNC_WAIT_S: a power cut whose
        # processes were not killed (or a release that never came).
        self.held_timed_out = 0
        # fsyncs in flight per file, oldest call first.
        self._in_flight: dict[InodeKey, list[SyncInFlight]] = {}

    def before_change(self, fd: int, path: str, start: int, end: int | None) -> None:
        """Save what bytes [start, end) (end None = to EOF) hold now, if not saved since fsync."""
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        record = self._files.get(key)
        if record is None:
            record = UnsyncedFile(fd=os.dup(fd), path=path, synced_size=st.st_size)
            self._files[key] = record
        record.save(start, end)
        for sync in self._in_flight.get(key, ()):
            sync.image.save(start, end)

    def begin_sync(self, fd: int) -> SyncInFlight:
        """An fsync is called: note the file as it is now."""
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        sync = SyncInFlight(key, UnsyncedFile(fd=os.dup(fd), path="", synced_size=st.st_size))
        self._in_flight.setdefault(key, []).append(sync)
        return sync

    def end_sync(self, sync: SyncInFlight) -> None:
        """The fsync returns: the file is durable as it was at the call, and what
        changed since stays undoable. An older call still in flight is
        overtaken: durability never goes back."""
        if sync.done:
            return
        pending = self._in_flight.get(sync.key, [])
        for older in pending[:pending.index(sync)]:
            self.abandon_sync(older)
        self._sync_done(sync)
        original = self._files.get(sync.key)
        self._forget(sync.key)
        if sync.image.pages or sync.image.synced_size != os.fstat(sync.image.fd).st_size:
            sync.image.path = original.path if original is not None else "(unknown)"
            self._files[sync.key] = sync.image
        else:
            os.close(sync.image.fd)

    def abandon_sync(self, sync: SyncInFlight) -> None:
        if not sync.done:
            self._sync_done(sync)
            os.close(sync.image.fd)

    def _sync_done(self, sync: SyncInFlight) -> None:
        sync.done = True
        pending = self._in_flight.get(sync.key, [])
        if sync in pending:
            pending.remove(sync)
        if not pending:
            self._in_flight.pop(sync.key, None)

    def forget_if_gone(self, key: InodeKey) -> None:
        """Drop a file whose last name went away: nothing can see it after a crash."""
        record = self._files.get(key)
        if record is not None and os.fstat(record.fd).st_nlink == 0:
            self._forget(key)
            for sync in list(self._in_flight.get(key, ())):
                self.abandon_sync(sync)

    def _forget(self, key: InodeKey) -> None:
        record = self._files.pop(key, None)
        if record is not None:
            os.close(record.fd)

    def roll_back(self) -> list[dict[str, Any]]:
        """Put every file back as its last fsync left it; report what was undone."""
        self.generation += 1
        self.frozen = False
        self.released = False
        for pending in list(self._in_flight.values()):
            for sync in list(pending):
                self.abandon_sync(sync)
        undone = []
        for key in list(self._files):
            record = self._files[key]
            size_before = os.fstat(record.fd).st_size
            os.ftruncate(record.fd, record.synced_size)
            for page, pre_image in sorted(record.pages.items()):
                os.pwrite(record.fd, pre_image, page * PAGE)
            undone.append(
                {
                    "path": record.path,
                    "inode": key[1],
                    "size_before": size_before,
                    "synced_size": record.synced_size,
                    "pages_restored": len(record.pages),
                }
            )
            self._forget(key)
        return undone

    def status(self) -> dict[str, Any]:
        return {
            "unsynced_files": len(self._files),
            "saved_bytes": sum(r.saved_bytes() for r in self._files.values()),
            "frozen": self.frozen,
            "released": self.released,
            "held_fsyncs_timed_out": self.held_timed_out,
        }


def _inode_key(path: str) -> InodeKey | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


class LazyFSOperations(Operations):
    """Passthrough to `backing`, recording pre-images into an UndoLog before each change."""

    use_ns = True

    def __init__(self, backing: Path, undo: UndoLog) -> None:
        self.backing = str(backing)
        self.undo = undo
        self.mounted = threading.Event()
        self.fsync_delay_s = 0.0
        # The disk faults in force (nemesis.disk_rules), applied to every
        # operation by __call__; replaced whole, never mutated, under the lock.
        self.rules: tuple[RuleState, ...] = ()
        self.rules_lock = threading.Lock()

    def __call__(self, op: str, *args: Any) -> Any:
        rules = self.rules
        if not rules:
            return super().__call__(op, *args)
        path = args[0] if args and isinstance(args[0], str) else ""
        size, offset = (args[1], args[2]) if op == "read" and len(args) > 2 else (0, None)
        delay, error, flip = 0.0, None, None
        with self.rules_lock:
            for state in rules:
                verdict = state.decide(op, path, size, offset)
                delay += verdict.delay_s
                error = error or verdict.errno
                flip = flip if flip is not None else verdict.flip
        if delay:
            time.sleep(delay)
        if error is not None:
            raise FuseOSError(error)
        result = super().__call__(op, *args)
        return flip_bit(result, flip) if op == "read" else result

    def disk_full(self) -> bool:
        return any(state.rule.mode == FULL for state in self.rules)

    def _real(self, path: str) -> str:
        return self.backing + path

    def init(self, path: str) -> None:
        self.mounted.set()

    # -- files -----------------------------------------------------------------

    def _owned_by_caller(self, real: str) -> None:
        """A new file or dir belongs to whoever made it, as on a disk: this
        process runs as root, and a server running as its own user (a database
        that drops root) may not open a root-owned file with O_NOATIME (EPERM)."""
        uid, gid, _pid = fuse_get_context()
        if uid != os.geteuid() or gid != os.getegid():
            os.lchown(real, uid, gid)

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        fd = os.open(self._real(path), os.O_RDWR | os.O_CREAT, mode)
        self._owned_by_caller(self._real(path))
        return fd

    def open(self, path: str, flags: int) -> int:
        flags &= ~_STRIPPED_FLAGS
        if flags & os.O_ACCMODE == os.O_WRONLY:
            # Pre-images are read through the same fd.
            flags = (flags & ~os.O_ACCMODE) | os.O_RDWR
        return os.open(self._real(path), flags)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self.undo.mutex:
            self.undo.before_change(fh, path, offset, offset + len(data))
            return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        fd = fh if fh is not None else os.open(self._real(path), os.O_RDWR)
        try:
            with self.undo.mutex:
                self.undo.before_change(fd, path, length, None)
                os.ftruncate(fd, length)
        finally:
            if fh is None:
                os.close(fd)

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        # An fsync makes durable what was written before it was called (the
        # kernel's FUSE inode lock holds back writes to this file meanwhile
        # anyway). Neither the slow-disk delay nor the backing disk's own
        # flush runs under the mutex: only this caller waits, and a power cut
        # (`freeze`) lands at once. A cut before the end voids this fsync.
        with self.undo.mutex:
            if self.undo.frozen:
                self._wait_out_the_power_cut()
            generation = self.undo.generation
            in_flight = self.undo.begin_sync(fh)
        try:
            if self.fsync_delay_s > 0:
                # The slow-disk knob: every write stays undoable for at least
                # this long, a window for faults aimed at unflushed data.
                time.sleep(self.fsync_delay_s)
            # Metadata is durable at once here, so fdatasync promises what fsync does.
            (os.fdatasync if datasync else os.fsync)(fh)
        except BaseException:
            with self.undo.mutex:
                self.undo.abandon_sync(in_flight)
            raise
        with self.undo.mutex:
            if self.undo.frozen:
                self.undo.abandon_sync(in_flight)
                self._wait_out_the_power_cut()
            if self.undo.generation != generation:
                self.undo.abandon_sync(in_flight)
                raise FuseOSError(errno.EIO)
            self.undo.end_sync(in_flight)

    def _wait_out_the_power_cut(self) -> None:
        """With the power off, an fsync never returns: the process is killed
        first. So it waits (the caller holds the mutex) until the roll-back,
        bounded so a harness that died cannot wedge the mount, then fails. An
        EIO at once would show a still-running node a disk error no power cut
        gives, and a node that stops on storage errors would exit by itself.
        After `release` it fails at once: whoever calls is already dying."""
        generation = self.undo.generation
        if not self.undo.thawed.wait_for(
                lambda: self.undo.generation != generation or self.undo.released,
                timeout=FROZEN_FSYNC_WAIT_S):
            self.undo.held_timed_out += 1
        raise FuseOSError(errno.EIO)

    def flush(self, path: str, fh: int) -> None:
        # close() promises nothing about durability.
        return None

    def release(self, path: str, fh: int) -> None:
        os.close(fh)

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        st = os.fstat(fh) if fh is not None else os.lstat(self._real(path))
        return {
            "st_mode": st.st_mode,
            "st_ino": st.st_ino,
            "st_nlink": st.st_nlink,
            "st_uid": st.st_uid,
            "st_gid": st.st_gid,
            "st_size": st.st_size,
            "st_blocks": st.st_blocks,
            "st_rdev": st.st_rdev,
            "st_atime": st.st_atime_ns,
            "st_mtime": st.st_mtime_ns,
            "st_ctime": st.st_ctime_ns,
        }

    def access(self, path: str, amode: int) -> None:
        if not os.access(self._real(path), amode):
            raise FuseOSError(errno.EACCES)

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
        if times is None:   # utimensat(2) with no times: now
            os.utime(self._real(path), follow_symlinks=False)
        else:
            os.utime(self._real(path), ns=times, follow_symlinks=False)

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._real(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        os.lchown(self._real(path), uid, gid)

    # -- names -----------------------------------------------------------------

    def unlink(self, path: str) -> None:
        key = _inode_key(self._real(path))
        with self.undo.mutex:
            os.unlink(self._real(path))
            if key is not None:
                self.undo.forget_if_gone(key)

    def rename(self, old: str, new: str) -> None:
        replaced = _inode_key(self._real(new))
        with self.undo.mutex:
            os.rename(self._real(old), self._real(new))
            if replaced is not None:
                self.undo.forget_if_gone(replaced)

    def link(self, target: str, source: str) -> None:
        os.link(self._real(source), self._real(target))

    def symlink(self, target: str, source: str) -> None:
        os.symlink(source, self._real(target))
        self._owned_by_caller(self._real(target))

    def readlink(self, path: str) -> str:
        return os.readlink(self._real(path))

    def mknod(self, path: str, mode: int, dev: int) -> None:
        os.mknod(self._real(path), mode, dev)
        self._owned_by_caller(self._real(path))

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(self._real(path), mode)
        self._owned_by_caller(self._real(path))

    def rmdir(self, path: str) -> None:
        os.rmdir(self._real(path))

    def readdir(self, path: str, fh: int) -> Iterator[str]:
        yield "."
        yield ".."
        yield from os.listdir(self._real(path))

    def fsyncdir(self, path: str, datasync: int, fh: int) -> None:
        # Names are durable already; pass the fsync on so its cost stays real.
        fd = os.open(self._real(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._real(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")
        stats = {k: getattr(sv, k) for k in keys}
        if self.disk_full():
            stats.update(f_bavail=0, f_bfree=0)
        return stats


class ControlServer:
    """Line commands on a unix socket: `roll-back` (the lose-unsynced fault),
    `freeze`, `fsync-delay MS`, `disk-fault RULE-JSON` (add a disk fault,
    nemesis.disk_rules), `disk-heal [SEED]` (remove them all, or those with
    that seed; says what each did),
    `status`, `stop`; one JSON line back.

    A socket, not signals: Python signal handlers never run while the main
    thread sits inside fuse_main.
    """

    def __init__(self, path: Path, ops: LazyFSOperations, mountpoint: Path) -> None:
        self.ops = ops
        self.mountpoint = mountpoint
        self.sock = bind_unix_socket(path)
        self.sock.listen(8)

    def serve_forever(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            with conn:
                request = conn.makefile("r").readline().strip()
                stop = request == "stop"
                conn.sendall(json.dumps(self.answer(request)).encode() + b"\n")
            if stop:
                # fuse_main returns once the kernel drops the mount.
                unmount(self.mountpoint)
                return

    def answer(self, request: str) -> dict[str, Any]:
        undo = self.ops.undo
        if request == "roll-back":
            with undo.mutex:
                files = undo.roll_back()
                undo.thawed.notify_all()   # the fsyncs held while the power was off fail now
            return {"ok": True, "files": files}
        if request == "release":
            with undo.mutex:
                undo.released = undo.frozen
                undo.thawed.notify_all()
            return {"ok": True}
        if request == "freeze":
            # The instant of a power cut: the processes are killed after this,
            # and nothing they (or a delayed fsync) do from now on is durable.
            with undo.mutex:
                undo.frozen = True
            return {"ok": True}
        if request.startswith("fsync-delay "):
            try:
                ms = int(request.split()[1])
            except ValueError:
                ms = -1
            if ms < 0:
                return {"ok": False, "error": "fsync-delay takes a whole number of ms >= 0"}
            self.ops.fsync_delay_s = ms / 1000
            return {"ok": True, "fsync_delay_ms": ms}
        if request.startswith("disk-fault "):
            try:
                rule = DiskRule.from_map(json.loads(request.split(" ", 1)[1]))
            except (ValueError, TypeError, AttributeError) as e:
                return {"ok": False, "error": f"bad disk fault: {e}"}
            with self.ops.rules_lock:
                self.ops.rules = (*self.ops.rules, RuleState(rule))
            return {"ok": True, "rule": rule.to_map()}
        if request == "disk-heal" or request.startswith("disk-heal "):
            # With a seed, only the rules it seeded: another fault's stay.
            seed = request.split()[1] if " " in request else None
            with self.ops.rules_lock:
                healed = tuple(s for s in self.ops.rules
                               if seed is None or str(s.rule.seed) == seed)
                self.ops.rules = tuple(s for s in self.ops.rules if s not in healed)
            return {"ok": True, "healed": [{"mode": s.rule.mode, "did": dict(s.counts)}
                                           for s in healed]}
        if request == "status":
            with undo.mutex:
                state = undo.status()
            with self.ops.rules_lock:
                rules = [{**s.rule.to_map(), "did": dict(s.counts)} for s in self.ops.rules]
            return {"ok": True, "pid": os.getpid(), "mounted": self.ops.mounted.is_set(),
                    "disk_faults": rules, **state}
        if request == "stop":
            return {"ok": True}
        return {"ok": False, "error": f"unknown command {request!r}"}


def _raise_fd_limit() -> None:
    # Every dirty file holds one fd of ours until its fsync.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nemesis.lazyfs_main", description=__doc__)
    parser.add_argument("backing", type=Path)
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("--control", type=Path, required=True, help="unix socket to create")
    args = parser.parse_args(argv)

    backing, mountpoint = args.backing.resolve(), args.mountpoint.resolve()
    if not backing.is_dir() or not mountpoint.is_dir():
        parser.error("backing and mountpoint must be existing directories")
    _raise_fd_limit()
    ops = LazyFSOperations(backing, UndoLog())
    server = ControlServer(args.control, ops, mountpoint)
    threading.Thread(target=server.serve_forever, name="lazyfs-control", daemon=True).start()
    try:
        FUSE(
            ops,
            str(mountpoint),
            foreground=True,
            fsname="lazyfs",
            allow_other=True,
            use_ino=True,
            big_writes=True,
            # The undo log changes files behind the kernel's back: cache nothing.
            attr_timeout=0,
            entry_timeout=0,
            negative_timeout=0,
        )
    finally:
        with suppress(OSError):
            args.control.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
