"""Workload clients by system: each turns invoke ops into that system's requests
and its answers into ok / fail / info completions."""

from __future__ import annotations

from typing import Any, Protocol

from checkers.history import Op


class Client(Protocol):
    def invoke(self, op: Op) -> Op: ...

    def close(self) -> None: ...


def client_class(db: str) -> Any:
    if db == "raft":
        from workloads.clients.raft import RaftClient
        return RaftClient
    if db == "etcd":
        from workloads.clients.etcd import EtcdClient
        return EtcdClient
    raise ValueError(f"no client for db {db!r}")


def make_client(db: str, workload: str, nodes: dict[str, tuple[str, int]],
                options: dict[str, Any]) -> Client:
    return client_class(db)(workload, nodes, options)
