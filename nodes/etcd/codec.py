"""The bits of etcd's v3 JSON gateway that both the adapter and the workload
client speak: URLs, base64 keys and values, JSON int64s that arrive as strings.

The gateway is grpc-gateway over the client port: POST a JSON body, get JSON
back; `bytes` fields are base64 and `int64` fields are decimal strings, and
fields equal to their default (0, false, empty) are left out.
"""

from __future__ import annotations

import base64
from typing import Any


def b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def as_int(value: Any) -> int:
    """An int64 field, absent meaning 0."""
    return int(value) if value not in (None, "") else 0


def workload_key(workload: str, key: Any) -> str:
    """etcd's key for a workload's key, under the workload's name (None: the one register)."""
    return workload if key is None else f"{workload}/{key}"


def key_in_workload(workload: str, etcd_key: str) -> tuple[bool, str | None]:
    """(whether `etcd_key` is one of the workload's keys, the workload's key
    as a string, None for the one register)."""
    if etcd_key == workload:
        return True, None
    prefix = f"{workload}/"
    return (True, etcd_key[len(prefix):]) if etcd_key.startswith(prefix) else (False, None)


def prefix_end(prefix: str) -> str:
    """The range end that makes a range cover every key starting with `prefix`
    (its last byte plus one; ASCII names)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def client_url(host: str, port: int) -> str:
    return f"http://{host}:{port}"


def peer_port(client_port: int) -> int:
    """Each member's peer (raft) port is the one after its client port."""
    return client_port + 1



def parse_status(body: dict[str, Any]) -> tuple[int, int, int]:
    """(this member's id, the leader it knows of (0: none), raft term) from
    /v3/maintenance/status."""
    header = body.get("header") or {}
    return (as_int(header.get("member_id")), as_int(body.get("leader")),
            as_int(body.get("raftTerm") or header.get("raft_term")))
