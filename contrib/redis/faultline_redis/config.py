"""The config files a node's redis-server and sentinel start from (pure)."""

from __future__ import annotations

from faultline import NodeSpec

MASTER_NAME = "faultline"


def sentinel_port(node: NodeSpec) -> int:
    return node.port + 1


def server_conf(node: NodeSpec, cluster: list[NodeSpec]) -> str:
    """The first node starts as primary, the others replicate it. Every write is
    fsynced to the append-only file before it is acknowledged, so what the
    findings show is replication, not a node losing its own disk."""
    lines = [
        f"bind {node.host}", f"port {node.port}", "protected-mode no", "daemonize no",
        'logfile ""', f"dir {node.data_dir}", 'save ""',
        "appendonly yes", "appendfsync always",
    ]
    primary = cluster[0]
    if node.name != primary.name:
        lines.append(f"replicaof {primary.host} {primary.port}")
    return "\n".join(lines) + "\n"


def sentinel_conf(node: NodeSpec, cluster: list[NodeSpec], down_after_ms: int,
                  failover_timeout_ms: int) -> str:
    """Sentinel rewrites this file as it learns; a majority of sentinels must
    agree a primary is down before one of them fails it over."""
    primary = cluster[0]
    quorum = len(cluster) // 2 + 1
    return "\n".join([
        f"bind {node.host}", f"port {sentinel_port(node)}", "protected-mode no",
        "daemonize no", 'logfile ""', f"dir {node.data_dir}",
        f"sentinel monitor {MASTER_NAME} {primary.host} {primary.port} {quorum}",
        f"sentinel down-after-milliseconds {MASTER_NAME} {down_after_ms}",
        f"sentinel failover-timeout {MASTER_NAME} {failover_timeout_ms}",
        f"sentinel parallel-syncs {MASTER_NAME} 1",
    ]) + "\n"
