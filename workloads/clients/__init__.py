"""Workload clients by system: each turns invoke ops into that system's requests
and its answers into ok / fail / info completions."""

from __future__ import annotations

from typing import Any, Protocol

from checkers.history import Op


class Client(Protocol):
    def invoke(self, op: Op) -> Op: ...

    def close(self) -> None: ...


def make_client(db: str, workload: str, nodes: dict[str, tuple[str, int]],
                options: dict[str, Any]) -> Client:
    if db == "raft":
        from workloads.clients.raft import RaftClient
        return RaftClient(workload, nodes, options)
    if db == "etcd":
        from workloads.clients.etcd import EtcdClient
        return EtcdClient(workload, nodes, options)
    raise ValueError(f"no client for db {db!r}")
