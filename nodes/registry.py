"""Systems under test by name."""

from __future__ import annotations

from nodes.db import DB


def make_db(kind: str) -> DB:
    if kind == "raft":
        from nodes.raft.db import RaftDB
        return RaftDB()
    if kind == "etcd":
        from nodes.etcd.db import EtcdDB
        return EtcdDB()
    raise ValueError(f"unknown db {kind!r}")
