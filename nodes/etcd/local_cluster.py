"""An etcd cluster of real processes on one address, for tests.

Not used by the harness (which runs members in namespaces through
nodes.etcd.db); the command lines come from that adapter, so tests exercise
it. Process lifecycle in nodes.local_processes.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nodes.db import NodeSpec
from nodes.etcd.db import EtcdDB
from nodes.local_processes import LocalProcesses


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


class LocalEtcdCluster(LocalProcesses):
    def __init__(self, root: Path, size: int = 3, host: str = "127.0.0.1",
                 options: dict | None = None) -> None:
        super().__init__()
        self.root = Path(root)
        self.host = host
        self.options = {"cluster_token": f"test-{os.getpid()}", **(options or {})}
        self.names = [f"n{i}" for i in range(1, size + 1)]
        self.db = EtcdDB()
        self.specs = [NodeSpec(name, host, free_port_pair(host), self.root / name / "data",
                               self.root / name, dict(self.options)) for name in self.names]
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
        self.spawn(name, self.db.argv(node, self.specs, fresh), node.log_dir)

    def start_all(self) -> None:
        for name in self.names:
            self.start(name)

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


@contextmanager
def running(root: Path) -> Iterator[LocalEtcdCluster]:
    """A cluster under `root`, every member started and a leader elected;
    every member killed on the way out, however it is left."""
    with LocalEtcdCluster(root) as cluster:
        cluster.start_all()
        cluster.wait_ready()
        yield cluster
