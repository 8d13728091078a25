"""An etcd cluster of real processes on one address, for tests.

Not used by the harness (which runs members in namespaces through
nodes.etcd.db); the command lines come from that adapter, so tests exercise
it. Every member runs in its own session so a kill takes its whole group, and
`close()` reaps everything even when a test fails halfway.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from nodes.db import NodeSpec
from nodes.etcd.db import EtcdDB


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port p with p and p+1 both free just now (client and peer port)."""
    for _ in range(100):
        with socket.socket() as a:
            a.bind((host, 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind((host, port + 1))
                except OSError:
                    continue
                return port
    raise OSError("no two adjacent free ports")


class LocalEtcdCluster:
    def __init__(self, root: Path, size: int = 3, host: str = "127.0.0.1",
                 options: dict | None = None) -> None:
        self.root = Path(root)
        self.host = host
        self.options = {"cluster_token": f"test-{os.getpid()}", **(options or {})}
        self.names = [f"n{i}" for i in range(1, size + 1)]
        self.db = EtcdDB()
        self.specs = [NodeSpec(name, host, free_port_pair(host), self.root / name / "data",
                               self.root / name, dict(self.options)) for name in self.names]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._started: set[str] = set()

    def spec(self, name: str) -> NodeSpec:
        return next(s for s in self.specs if s.name == name)

    @property
    def addresses(self) -> dict[str, tuple[str, int]]:
        return {s.name: (s.host, s.port) for s in self.specs}

    def start(self, name: str) -> None:
        node = self.spec(name)
        self.db.setup(node, self.specs)
        fresh = name not in self._started
        self._started.add(name)
        with open(node.log_dir / "stdout.log", "ab") as out, \
                open(node.log_dir / "stderr.log", "ab") as err:
            self.procs[name] = subprocess.Popen(
                self.db.argv(node, self.specs, fresh), stdout=out, stderr=err,
                start_new_session=True)

    def start_all(self) -> None:
        for name in self.names:
            self.start(name)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def close(self) -> None:
        for name in list(self.procs):
            self.kill(name)

    def wait_ready(self, names: list[str] | None = None, timeout: float = 30.0) -> None:
        names = names or list(self.procs)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.db.is_ready(self.spec(n)) for n in names):
                return
            time.sleep(0.1)
        raise TimeoutError(f"etcd members {names} not ready after {timeout}s")

    def wait_for_leader(self, among: list[str] | None = None, timeout: float = 20.0) -> str:
        among = among or list(self.procs)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leader = self.db.leader([self.spec(n) for n in among])
            if leader is not None:
                return leader
            time.sleep(0.1)
        raise TimeoutError(f"no etcd leader among {among} after {timeout}s")

    def __enter__(self) -> LocalEtcdCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
