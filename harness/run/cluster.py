"""A running cluster: a Topology plus one node process per namespace.

The harness owns processes; a DB adapter only says what to run
(docs/contracts.md). Every process is journalled (pid + start time) so
`faultline clean` can finish the job if this harness dies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import psutil

from harness.run.errors import UserError
from harness.run.resources import (
    ResourceLog,
    become_subreaper,
    install_termination_handlers,
    signals_deferred,
    unmount,
)
from harness.run.watchdog import Watchdog, start_watchdog
from nemesis.netns import Topology, popen_in_netns
from nodes.abilities import Leadership
from nodes.db import DB, NodeSpec

DEFAULT_PORT = 7000
# How often a node process that exited by itself is looked for; its exit time
# is known to within this.
EXIT_POLL_S = 0.5
# One JSON line per node process that exited without the harness killing it
# (`checkers.rundir.EXITS`).
EXITS_FILE = "exits.jsonl"
CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21
READY_POLL = 0.05


class ClusterError(Exception):
    """A node did not come up, or an operation on one failed."""


class NeedsRootError(UserError):
    """Raised when namespaces cannot be made here; its message is one sentence."""


def effective_caps() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def check_privileges() -> None:
    caps = effective_caps()
    if not (caps >> CAP_NET_ADMIN) & 1 or not (caps >> CAP_SYS_ADMIN) & 1:
        raise NeedsRootError(
            "running a cluster needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network "
            "namespaces, so run it as root (for example with sudo).")


@dataclass
class NodeProcess:
    popen: Any  # subprocess.Popen[bytes]
    proc: psutil.Process
    record: int | None
    stdout: IO[bytes]
    stderr: IO[bytes]


class Cluster:
    """Nodes of one run. Methods take node names; all are safe to call from
    the nemesis thread while clients run."""

    def __init__(self, run_dir: Path, db: DB, names: Sequence[str], run_id: str, *,
                 port: int = DEFAULT_PORT, node_options: dict[str, Any] | None = None,
                 per_node_options: Mapping[str, Mapping[str, Any]] | None = None,
                 data_root: Path | None = None, state_dir: Path | None = None,
                 watchdog: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.db = db
        self.run_id = run_id
        self.topology = Topology(run_id, list(names))
        self._data_root = data_root
        self._state_dir = state_dir
        self._node_options = dict(node_options or {})
        # Options one node gets over the shared ones (its own seed).
        self._per_node_options = dict(per_node_options or {})
        self._port = port
        self.nodes: list[NodeSpec] = []
        self.resources: ResourceLog | None = None
        self._procs: dict[str, NodeProcess] = {}
        self.paused: set[str] = set()
        self._lock = threading.RLock()
        self._tempdir_record: int | None = None
        self._torn_down = False
        # Helpers of killed nodes re-parented to us (we are a subreaper): reap them.
        self._orphans: set[int] = set()
        # A process outside us that sweeps the run if we die without teardown.
        self._watchdog = watchdog
        self._watchdog_handle: Watchdog | None = None
        # Node processes die with the thread that forked them (PR_SET_PDEATHSIG
        # is per thread): fork them all from one thread that lives as long as
        # the cluster, never from a nemesis thread that ends mid-run.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="node-spawner")
        # Exits no kill of ours caused, as they were noticed (also in nodes/<n>/exits.jsonl).
        self.exits: list[dict[str, Any]] = []
        self._exit_watch_stop = threading.Event()
        self._exit_watch: threading.Thread | None = None
        # What each node's processes start with besides the argv: environment
        # additions and cgroups to join (nemesis.host, for the host faults).
        self.node_env: dict[str, dict[str, str]] = {}
        self.node_cgroups: dict[str, list[Path]] = {}

    # --- names and addresses (the nemesis contract) ---------------------------

    @property
    def names(self) -> list[str]:
        return list(self.topology.node_names)

    @property
    def hub_netns(self) -> str:
        return self.topology.hub

    def netns_of(self, name: str) -> str:
        return self.topology.netns[name]

    def ip_of(self, name: str) -> str:
        return self.topology.ips[name]

    def spec(self, name: str) -> NodeSpec:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node named {name!r}")

    @contextmanager
    def in_hub(self) -> Iterator[None]:
        """Run the body (this thread, and threads it starts) in the client namespace."""
        with self.topology.in_hub():
            yield

    # --- lifecycle --------------------------------------------------------------

    def setup(self) -> None:
        """Namespaces, data dirs and node specs; nothing is started yet."""
        check_privileges()
        problem = self.db.check_installed()
        if problem:
            raise UserError(problem)
        become_subreaper()
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
            install_termination_handlers()
        self.resources = ResourceLog(self.run_dir / "resources.jsonl", self.run_id,
                                     self._state_dir)
        if self._watchdog:
            self._watchdog_handle = start_watchdog(self.resources.path, self._state_dir)
        self.topology.resources = self.resources
        try:
            data_root = self._data_root
            if data_root is None:
                data_root = Path(tempfile.mkdtemp(prefix=f"faultline-{self.run_id}-"))
                self._tempdir_record = self.resources.add("tempdir", path=str(data_root))
                self._data_root = data_root
            self.topology.build()
            for name in self.names:
                log_dir = self.run_dir / "nodes" / name
                log_dir.mkdir(parents=True, exist_ok=True)
                self.nodes.append(NodeSpec(name, self.ip_of(name), self._port,
                                           data_root / name, log_dir,
                                           {**self._node_options,
                                            **self._per_node_options.get(name, {})}))
            for node in self.nodes:
                self.db.setup(node, self.nodes)
        except BaseException:
            self.teardown()
            raise

    def start_all(self, timeout: float = 30.0) -> None:
        self.start(self.names, fresh=True)
        self.wait_ready(self.names, timeout)
        self.watch_exits()

    def watch_exits(self) -> None:
        """Look for node processes that exit by themselves until the nodes are
        stopped (a thread; the kills and starts also look, so none is missed)."""
        if self._exit_watch is not None:
            return

        def watch() -> None:
            while not self._exit_watch_stop.wait(EXIT_POLL_S):
                self.note_exits()

        self._exit_watch = threading.Thread(target=watch, name="exit-watch", daemon=True)
        self._exit_watch.start()

    def note_exits(self) -> list[dict[str, Any]]:
        """Record every node process that has exited though no kill of ours hit
        it (a crash, an exit of its own); returns those newly recorded. A
        process is recorded once: it is reaped here."""
        found = []
        with self._lock:
            for name, np in list(self._procs.items()):
                status = np.popen.poll()
                if status is None:
                    continue
                found.append(self._record_exit(name, status))
                self._reap(name)
        return found

    def _record_exit(self, name: str, status: int) -> dict[str, Any]:
        # Popen's status: -N for a signal N, else the exit code.
        try:
            by_signal = signal.Signals(-status).name if status < 0 else None
        except ValueError:
            by_signal = f"signal {-status}"
        record = {"node": name, "monotonic_ns": time.monotonic_ns(), "wall": time.time(),
                  "status": status, "signal": by_signal}
        self.exits.append(record)
        try:
            with open(self.spec(name).log_dir / EXITS_FILE, "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError:
            pass  # the record in memory is still reported
        return record

    def __enter__(self) -> Cluster:
        self.setup()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.teardown()

    # --- processes ----------------------------------------------------------

    def is_running(self, name: str) -> bool:
        with self._lock:
            np = self._procs.get(name)
            return np is not None and np.popen.poll() is None

    def running(self) -> list[str]:
        return [n for n in self.names if self.is_running(n)]

    def start(self, names: Sequence[str], fresh: bool = False) -> list[str]:
        """Start the named nodes that are not running; returns those started."""
        started = []
        with self._lock:
            self.note_exits()
            for name in names:
                if self.is_running(name):
                    continue
                self._reap(name)
                self._spawn(name, fresh)
                started.append(name)
        return started

    def _spawn(self, name: str, fresh: bool) -> None:
        assert self.resources is not None, "setup() first"
        node = self.spec(name)
        argv = self.db.argv(node, self.nodes, fresh)
        stdout = open(node.log_dir / "stdout.log", "ab")
        stderr = open(node.log_dir / "stderr.log", "ab")
        env = {**os.environ, **self.node_env[name]} if self.node_env.get(name) else None
        try:
            popen = self._spawner.submit(
                popen_in_netns, self.netns_of(name), argv, stdin=subprocess.DEVNULL,
                stdout=stdout, stderr=stderr, start_new_session=True, close_fds=True,
                die_with_parent=True, cgroups=self.node_cgroups.get(name, ()),
                env=env).result()
        except BaseException:
            stdout.close()
            stderr.close()
            raise
        # Journalled straight after fork: a window of microseconds, covered
        # by `clean` also killing whatever lives in the run's namespaces.
        record = self.resources.add_process(popen.pid)
        self._procs[name] = NodeProcess(popen, psutil.Process(popen.pid), record,
                                        stdout, stderr)
        self.paused.discard(name)

    def _reap(self, name: str) -> None:
        np = self._procs.pop(name, None)
        if np is None:
            return
        np.popen.wait()
        np.stdout.close()
        np.stderr.close()
        if np.record is not None and self.resources is not None:
            self.resources.release(np.record)

    def kill(self, names: Sequence[str],
             on_signalled: Callable[[], None] | None = None) -> list[str]:
        """SIGKILL each named node's process group; returns the nodes that were running.

        `on_signalled` runs once every SIGKILL is sent and before any process
        is waited for: from then on none of them runs another instruction of
        its own, while one stuck in a call (a FUSE request its frozen mount
        holds) cannot exit until that call is answered, which is what
        `on_signalled` may do (`nemesis.lazyfs.kill_powered_off`)."""
        killed = []
        with self._lock:
            # Exits before this kill are the nodes' own, not ours.
            self.note_exits()
            targets = [name for name in names if name in self._procs]
            for name in targets:
                np = self._procs[name]
                if np.popen.poll() is None:
                    killed.append(name)
                    tree = _descendants(np.proc)
                    try:
                        os.killpg(np.popen.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    # Helpers that left the group (setsid) are still in the tree.
                    for p in tree:
                        _signal(p, signal.SIGKILL)
                    self._orphans.update(p.pid for p in tree)
            try:
                if on_signalled is not None:
                    on_signalled()
            finally:
                # Reaped even if it failed: a process it left held ends at
                # its call's own bound, and none stays unrecorded.
                for name in targets:
                    self._reap(name)
                    self.paused.discard(name)
                self._reap_orphans()
        return killed

    def _reap_orphans(self) -> None:
        for pid in list(self._orphans):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            except ChildProcessError:
                if psutil.pid_exists(pid):
                    continue  # not re-parented to us yet; try again later
            self._orphans.discard(pid)

    def pause(self, names: Sequence[str]) -> list[str]:
        """SIGSTOP each named node's whole process tree."""
        paused = []
        with self._lock:
            for name in names:
                np = self._procs.get(name)
                if np is None or np.popen.poll() is not None:
                    continue
                for p in [np.proc, *_descendants(np.proc)]:
                    _signal(p, signal.SIGSTOP)
                self.paused.add(name)
                paused.append(name)
        return paused

    def resume(self, names: Sequence[str]) -> list[str]:
        resumed = []
        with self._lock:
            for name in names:
                np = self._procs.get(name)
                if np is not None and np.popen.poll() is None:
                    for p in [np.proc, *_descendants(np.proc)]:
                        _signal(p, signal.SIGCONT)
                    resumed.append(name)
                self.paused.discard(name)
        return resumed

    def wait_ready(self, names: Sequence[str] | None = None, timeout: float = 30.0) -> None:
        """Poll db.is_ready from the hub until every named node answers."""
        waiting = list(self.names if names is None else names)
        deadline = time.monotonic() + timeout
        with self.in_hub():
            while waiting:
                for name in list(waiting):
                    if not self.is_running(name):
                        raise ClusterError(f"node {name} exited before it was ready; "
                                           f"see {self.spec(name).log_dir / 'stderr.log'}")
                    if self.db.is_ready(self.spec(name)):
                        waiting.remove(name)
                if waiting and time.monotonic() > deadline:
                    raise ClusterError(f"nodes {', '.join(waiting)} not ready after "
                                       f"{timeout:g} s")
                if waiting:
                    time.sleep(READY_POLL)

    def leader(self) -> str | None:
        """Who the adapter says leads; None when it cannot say (no `Leadership`)."""
        if not isinstance(self.db, Leadership):
            return None
        with self.in_hub():
            return self.db.leader(self.nodes)

    def dump_logs(self) -> None:
        """Each node's replicated-log dump into its log dir (nodes must be stopped)."""
        for node in self.nodes:
            self.db.dump_log(node, node.log_dir / "log.msgpack")

    def stop_nodes(self) -> None:
        """Kill every node process, paused ones included, and reap what they left.

        Separate from `teardown` for whoever must act between the two: a FUSE
        mount under a node's data dir does not go away while the node holds
        files open on it, so its process is stopped after this and before
        `teardown` removes the data dirs. Idempotent."""
        with signals_deferred():
            self._exit_watch_stop.set()
            self.resume(list(self._procs))
            self.kill(list(self._procs))
            self._reap_orphans()

    def teardown(self) -> None:
        """Kill every node, delete the namespaces and temp dirs. Idempotent, and
        not interruptible by Ctrl-C/SIGTERM halfway (they wait until it is done)."""
        with signals_deferred():
            if self._torn_down:
                return
            self._torn_down = True
            self.stop_nodes()
            self._unmount_leftovers()
            self.topology.teardown()
            if self._tempdir_record is not None and self._data_root is not None:
                shutil.rmtree(self._data_root, ignore_errors=True)
                if self.resources is not None:
                    self.resources.release(self._tempdir_record)
                self._tempdir_record = None
            if self.resources is not None:
                self.resources.close()
            self._spawner.shutdown(wait=True)
            if self._watchdog_handle is not None:
                # Everything is gone: the watchdog reads EOF, finds the journal empty, exits.
                self._watchdog_handle.release()
                self._watchdog_handle = None

    def _unmount_leftovers(self) -> None:
        # Mounts are made by disk faults, which unmount in their own teardown;
        # any still journalled here would pin the data dir we are about to remove.
        if self.resources is None:
            return
        for rec in self.resources.live():
            if rec["kind"] == "mount":
                try:
                    unmount(rec["path"])
                except OSError:
                    continue
                self.resources.release(rec["id"])


def _descendants(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _signal(proc: psutil.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except psutil.NoSuchProcess:
        pass
