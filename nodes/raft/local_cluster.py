"""A raft cluster of real node processes on one address, for tests and benchmarks
(process lifecycle in nodes.local_processes)."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

from nodes.db import NodeSpec
from nodes.local_processes import LocalProcesses
from nodes.raft.client import ClusterClient, NodeClient
from nodes.raft.db import RaftDB


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalCluster(LocalProcesses):
    def __init__(self, root: Path, size: int = 3, host: str = "127.0.0.1",
                 tick_ms: int = 50, extra_args: list[str] | None = None,
                 voters: list[str] | None = None) -> None:
        super().__init__()
        self.root = Path(root)
        self.host = host
        self.tick_ms = tick_ms
        self.extra_args = extra_args or []
        self.names = [f"n{i}" for i in range(1, size + 1)]
        # Bootstrap voters (KIP-853); the other names start as observers.
        self.voters = voters
        self.ports = {name: free_port(host) for name in self.names}

    def address(self, name: str) -> str:
        return f"{self.host}:{self.ports[name]}"

    @property
    def addresses(self) -> dict[str, str]:
        return {name: self.address(name) for name in self.names}

    def data_dir(self, name: str) -> Path:
        return self.root / name / "data"

    def spec(self, name: str) -> NodeSpec:
        return NodeSpec(
            name=name, host=self.host, port=self.ports[name], data_dir=self.data_dir(name),
            log_dir=self.root / name,
            options={"cluster_id": "test", "tick_ms": self.tick_ms, "voters": self.voters},
        )

    def specs(self) -> list[NodeSpec]:
        return [self.spec(n) for n in self.names]

    def argv(self, name: str) -> list[str]:
        # The harness's own adapter builds the command line, so tests exercise it.
        return RaftDB().argv(self.spec(name), self.specs(), fresh=False) + self.extra_args

    def start(self, name: str) -> None:
        self.spawn(name, self.argv(name), self.root / name)

    def start_all(self) -> None:
        for name in self.names:
            self.start(name)

    def stop(self, name: str) -> None:
        """Graceful stop (SIGTERM): the node syncs its log and HW checkpoint."""
        self.kill(name, signal.SIGTERM)

    def status(self, name: str) -> dict | None:
        try:
            with NodeClient(self.address(name), timeout=1.0) as client:
                response = client.status()
        except OSError:
            return None
        return response.value if response.ok else None

    def wait_for_leader(self, among: list[str] | None = None, timeout: float = 20.0) -> str:
        """A node that leads and whose leadership the others among `among` accept."""
        among = among or list(self.procs)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            statuses = {n: self.status(n) for n in among}
            up = {n: s for n, s in statuses.items() if s}
            leaders = [n for n, s in up.items() if s["role"] == "Leader"]
            for leader in leaders:
                epoch = up[leader]["epoch"]
                followers = sum(
                    1 for s in statuses.values()
                    if s and s["leader"] == leader and s["epoch"] == epoch
                )
                if followers > len(self.names) // 2:
                    return leader
            time.sleep(0.05)
        raise TimeoutError(f"no leader among {among} after {timeout}s")

    def client(self, timeout: float = 5.0) -> ClusterClient:
        return ClusterClient(self.addresses, timeout=timeout)

    def __enter__(self) -> LocalCluster:
        return self
