"""Start, drive and stop a LazyFS mount: a FUSE layer that can lose un-fsynced writes.

The filesystem itself runs in its own process (`nemesis.lazyfs_main`, also
reachable as `python -m nemesis.lazyfs_main BACKING MOUNTPOINT --control SOCK`);
this module is what the harness imports. It does not import fusepy, so the
harness loads on machines without libfuse and asks `check_installed()`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from nodes.child_python import module_argv

_MNT_DETACH = 2
# sun_path holds 108 bytes; longer paths go through /proc/self/fd/<dirfd>/<name>.
_SUN_PATH_MAX = 100
# How long `stop` waits for the process to unmount and exit before it kills it.
STOP_TIMEOUT_S = 10.0


class LazyFSError(RuntimeError):
    pass


def check_installed() -> str | None:
    """None when LazyFS can run here, else one sentence saying what is missing."""
    if not os.path.exists("/dev/fuse"):
        return "LazyFS needs /dev/fuse (a kernel with FUSE, and a container given the device)."
    if ctypes.util.find_library("fuse") is None:
        return "LazyFS needs libfuse 2 for fusepy: apt-get install libfuse2."
    if os.geteuid() != 0:
        return "LazyFS mounts need root."
    return None


def _with_short_path(path: Path, use: Any) -> Any:
    """Call use(path_str) with a socket path short enough for sun_path."""
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return use(str(path))
    dir_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        return use(f"/proc/self/fd/{dir_fd}/{path.name}")
    finally:
        os.close(dir_fd)


def bind_unix_socket(path: Path) -> socket.socket:
    with suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _with_short_path(path, sock.bind)
    os.chmod(path, 0o600)
    return sock


def send_command(control: Path, command: str, timeout: float = 30.0) -> dict[str, Any]:
    """One request, one JSON reply, over the control socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        _with_short_path(control, sock.connect)
        sock.sendall(command.encode() + b"\n")
        reply = sock.makefile("rb").readline()
    if not reply:
        raise LazyFSError(f"no reply to {command!r} on {control}")
    answer = json.loads(reply)
    if not answer.get("ok"):
        raise LazyFSError(f"{command!r} failed: {answer.get('error')}")
    return answer


def unmount(mountpoint: Path) -> None:
    """Unmount a FUSE mount, lazily if it is busy; no-op when nothing is mounted there."""
    libc = ctypes.CDLL(None, use_errno=True)
    target = os.fsencode(mountpoint)
    if libc.umount2(target, 0) == 0:
        return
    if libc.umount2(target, _MNT_DETACH) == 0:
        return
    err = ctypes.get_errno()
    if err not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
        raise OSError(err, os.strerror(err), str(mountpoint))


def force_cleanup(pid: int | None, mountpoint: Path) -> None:
    """What a crashed harness left: kill the LazyFS process, drop its mount.

    For `faultline clean`, which knows only the recorded pid and mountpoint.
    """
    if pid is not None:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    unmount(mountpoint)


class LazyFS:
    """One LazyFS process serving `mountpoint` from `backing`, driven through `control`."""

    def __init__(
        self, backing: Path, mountpoint: Path, control: Path, log_path: Path | None = None
    ) -> None:
        self.backing = Path(backing)
        self.mountpoint = Path(mountpoint)
        self.control = Path(control)
        self.log_path = Path(log_path) if log_path else self.control.with_suffix(".log")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 10.0, on_spawn: Callable[[int], None] | None = None) -> None:
        """Spawn the filesystem process and return once the mount serves requests.

        `on_spawn(pid)` runs straight after the fork, before the wait for the
        mount, so a crash-safety journal can record the process in time.
        """
        if self._process is not None:
            raise LazyFSError(f"LazyFS on {self.mountpoint} already started")
        problem = check_installed()
        if problem:
            raise LazyFSError(problem)
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        argv = module_argv("nemesis.lazyfs_main", str(self.backing), str(self.mountpoint),
                           "--control", str(self.control))
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        if on_spawn is not None:
            on_spawn(self._process.pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._process = None
                raise LazyFSError(f"LazyFS exited while mounting; see {self.log_path}")
            if os.path.ismount(self.mountpoint) and self._answers_mounted():
                return
            time.sleep(0.02)
        self.stop()
        raise LazyFSError(f"LazyFS did not mount {self.mountpoint} within {timeout}s")

    def _answers_mounted(self) -> bool:
        try:
            return bool(send_command(self.control, "status", timeout=1.0)["mounted"])
        except (OSError, LazyFSError):
            return False

    def status(self) -> dict[str, Any]:
        return send_command(self.control, "status")

    def lose_unsynced(self) -> list[dict[str, Any]]:
        """Roll every file back to its last fsync; returns what was undone per file.

        Kill the processes writing to the mount first: a write racing the
        rollback lands after it, as if made after the power came back.
        """
        return send_command(self.control, "roll-back")["files"]

    def freeze(self) -> None:
        """Power off: from now until `lose_unsynced`, no fsync makes anything durable,
        and an fsync called meanwhile does not return (as with the power gone)
        until `release` or `lose_unsynced`."""
        send_command(self.control, "freeze")

    def release(self) -> None:
        """Fail the fsyncs the power cut holds (the mount stays frozen): after the
        node's SIGKILL, so it dies as the call returns, without running on."""
        send_command(self.control, "release")

    def set_fsync_delay(self, ms: int) -> None:
        """The slow-disk knob: delay every fsync on this mount by `ms` (0: off)."""
        send_command(self.control, f"fsync-delay {int(ms)}")

    def add_disk_fault(self, rule: dict[str, Any]) -> dict[str, Any]:
        """Put a disk fault in force (a `nemesis.disk_rules.DiskRule` as a map);
        returns the rule as the mount applies it."""
        return send_command(self.control, "disk-fault " + json.dumps(rule))["rule"]

    def heal_disk(self, seed: int | None = None) -> list[dict[str, Any]]:
        """Remove every disk fault (or those seeded `seed`); returns each one's
        mode and what it did."""
        command = "disk-heal" if seed is None else f"disk-heal {int(seed)}"
        return send_command(self.control, command)["healed"]

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Unmount and end the process; escalates to SIGKILL + lazy unmount if it hangs."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            with suppress(OSError, LazyFSError):
                send_command(self.control, "stop", timeout=timeout)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        unmount(self.mountpoint)
        with suppress(FileNotFoundError):
            self.control.unlink()

    def __enter__(self) -> LazyFS:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def mount_data_dir(
    data_dir: Path, timeout: float = 10.0, on_spawn: Callable[[int], None] | None = None
) -> LazyFS:
    """Put a node's data dir on a LazyFS mount, before the node (or DB.setup) writes to it.

    The real files live in `<data_dir>.backing`; `<data_dir>.lazyfs.sock` is
    the control socket and `<data_dir>.lazyfs.log` the process's output.
    Anything already in data_dir moves into the backing dir first, so calling
    this after DB.setup also works. Record `.pid` and `.mountpoint` for crash
    cleanup; call `.stop()` after the node is stopped.
    """
    data_dir = Path(data_dir)
    backing = data_dir.with_name(data_dir.name + ".backing")
    backing.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    for entry in data_dir.iterdir():
        shutil.move(str(entry), str(backing / entry.name))
    lazyfs = LazyFS(
        backing,
        data_dir,
        control=data_dir.with_name(data_dir.name + ".lazyfs.sock"),
        log_path=data_dir.with_name(data_dir.name + ".lazyfs.log"),
    )
    lazyfs.start(timeout, on_spawn)
    return lazyfs


def kill_powered_off(cluster: Any, names: list[str], mounts: Mapping[str, LazyFS]) -> list[str]:
    """Freeze the nodes' mounts and SIGKILL the nodes: a power cut.

    A node inside an fsync cannot die until the call returns (FUSE waits for
    the answer), so the held fsyncs are failed (`release`) once every SIGKILL
    is out and before the processes are waited for: the node dies as the call
    returns and never sees the error. Released before the signals (a timer,
    as this did, lost to a busy harness), a node ran on, stopped over the
    failed fsync and issued another, which the frozen mount held for its 60 s
    bound, the node unkillable in it (docs/hunt.md, "The power cut that took
    a minute")."""
    for name in names:
        mounts[name].freeze()

    def release() -> None:
        for name in names:
            mounts[name].release()

    return list(cluster.kill(list(names), on_signalled=release) or [])
