"""What the harness prepares around the nodes for the host faults, before
they start: a clock control file per node (nemesis.clock) and a cgroup per
node (nemesis.cgroups), and how a node (or a stress-ng beside it) is started
inside them. Everything made is journalled, so `faultline clean` removes it
if the harness dies; `teardown` removes it otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from nemesis import cgroups
from nemesis.cgroups import NodeCgroup, join_cgroups
from nemesis.fault import CGROUP, CLOCK_FILES


class Journal(Protocol):
    """`harness.run.resources.ResourceLog`'s shape."""

    def add(self, kind: str, **fields: Any) -> int: ...

    def add_process(self, pid: int) -> int: ...

    def release(self, rid: int) -> None: ...


@dataclass
class NodeHost:
    """What was made for one run: node -> clock control file, node -> cgroup,
    node -> what its environment gains; the journal it is recorded in."""

    clocks: dict[str, Path] = field(default_factory=dict)
    cgroups: dict[str, NodeCgroup] = field(default_factory=dict)
    env: dict[str, dict[str, str]] = field(default_factory=dict)
    journal: Journal | None = None
    _records: dict[str, int] = field(default_factory=dict)
    _beside: dict[int, tuple[subprocess.Popen[bytes], int | None]] = field(default_factory=dict)

    def launch_env(self, node: str) -> dict[str, str]:
        return dict(self.env.get(node, {}))

    def launch_cgroups(self, node: str) -> list[Path]:
        cg = self.cgroups.get(node)
        return cg.paths if cg is not None else []

    def spawn_beside(self, node: str, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start `argv` in `node`'s cgroup (its own session, journalled)."""
        paths = self.launch_cgroups(node)
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True,
                                 close_fds=True, preexec_fn=lambda: join_cgroups(paths))
        rid = self.journal.add_process(popen.pid) if self.journal is not None else None
        self._beside[popen.pid] = (popen, rid)
        return popen

    def stop_beside(self, popen: subprocess.Popen[bytes]) -> None:
        """SIGKILL it and every process it forked, and wait until they are
        gone (stress-ng's workers are its children: they would otherwise
        linger, re-parented to the harness, its subreaper)."""
        try:
            tree = psutil.Process(popen.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for p in tree:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        popen.wait()
        _wait_gone([p.pid for p in tree])
        _, rid = self._beside.pop(popen.pid, (None, None))
        if rid is not None and self.journal is not None:
            self.journal.release(rid)

    def teardown(self) -> list[str]:
        """Stop what runs beside the nodes, remove the cgroups (killing anything
        left in them) and the clock files. The nodes must be stopped first."""
        for popen, _ in list(self._beside.values()):
            self.stop_beside(popen)
        done = []
        for node, cg in self.cgroups.items():
            done += cgroups.remove(cg.paths)
            rid = self._records.pop(f"cgroup:{node}", None)
            if rid is not None and self.journal is not None:
                self.journal.release(rid)
        for path in self.clocks.values():
            path.unlink(missing_ok=True)
        for folder in {p.parent for p in self.clocks.values()}:
            try:
                folder.rmdir()
            except OSError:
                pass   # not empty: something else of the run's is there
        return done


def _wait_gone(pids: list[int], timeout: float = 5.0) -> None:
    """Reap those re-parented to us; wait (bounded) for the others to exit."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    left.discard(pid)
            except ChildProcessError:
                if not psutil.pid_exists(pid):
                    left.discard(pid)
        if left:
            time.sleep(0.01)


def check_host(needs: set[str]) -> str | None:
    """None if this host can prepare what `needs` asks for, else one sentence."""
    from nemesis import clock
    if CLOCK_FILES in needs:
        problem = clock.check_installed()
        if problem:
            return problem
    if CGROUP in needs:
        problem = cgroups.check_available()
        if problem:
            return f"resource faults need a cgroup per node: {problem}"
    return None


def prepare(needs: set[str], run_id: str, nodes: Sequence[str], control_dir: Path,
            journal: Journal | None) -> NodeHost:
    """Make what `needs` (CLOCK_FILES, CGROUP) asks for, for each node; raises with
    one sentence when this host cannot (after removing what it made)."""
    from nemesis import clock
    host = NodeHost(journal=journal)
    try:
        if CLOCK_FILES in needs:
            problem = clock.check_installed()
            if problem:
                raise RuntimeError(problem)
            control_dir.mkdir(parents=True, exist_ok=True)
            for node in nodes:
                path = control_dir / f"{node}.faketime"
                clock.write_offset(path, 0.0)
                host.clocks[node] = path
                host.env.setdefault(node, {}).update(clock.faketime_env(path))
        if CGROUP in needs:
            problem = cgroups.check_available()
            if problem:
                raise RuntimeError(f"resource faults need a cgroup per node: {problem}")
            found = cgroups.hierarchies()
            for node in nodes:
                cg = cgroups.node_cgroup(run_id, node, found)
                if journal is not None:
                    host._records[f"cgroup:{node}"] = journal.add(
                        "cgroup", paths=[str(p) for p in cg.paths])
                host.cgroups[node] = cg
                cg.create()
    except BaseException:
        host.teardown()
        raise
    return host
