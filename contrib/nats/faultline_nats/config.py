"""The config file a node's nats-server starts from, and the names of the
streams the log workload writes to (pure)."""

from __future__ import annotations

from faultline import NodeSpec

CLUSTER_NAME = "faultline"
# The one stream every log of the workload is a subject of.
STREAM = "faultline"
SUBJECT_PREFIX = STREAM + "."
# The most replicas a JetStream stream may have.
MAX_REPLICAS = 5


def route_port(node: NodeSpec) -> int:
    return node.port + 1


def monitor_port(node: NodeSpec) -> int:
    return node.port + 2


def store_dir(node: NodeSpec) -> str:
    return str(node.data_dir / "jetstream")


def server_conf(node: NodeSpec, cluster: list[NodeSpec]) -> str:
    """Every listener (clients, routes, monitoring) on the node's own namespace
    address. Nothing about syncing is set: 2.9's file store has no per-message
    sync option (it refuses `sync_interval`) and flushes on its own timer, which
    is the default a user gets and what the findings are about."""
    routes = ", ".join(f'"nats-route://{n.host}:{route_port(n)}"'
                       for n in cluster if n.name != node.name)
    return "\n".join([
        f'server_name: "{node.name}"',
        f'listen: "{node.host}:{node.port}"',
        f'http: "{node.host}:{monitor_port(node)}"',
        "jetstream {",
        f'  store_dir: "{store_dir(node)}"',
        "  max_memory_store: 64MB",
        "  max_file_store: 1GB",
        "}",
        "cluster {",
        f'  name: "{CLUSTER_NAME}"',
        f'  listen: "{node.host}:{route_port(node)}"',
        f"  routes: [{routes}]",
        "}",
    ]) + "\n"


def subject(log: str) -> str:
    """A log is one subject of the stream (one token: no '.', '*', '>' or space)."""
    return SUBJECT_PREFIX + "".join(c if c.isalnum() or c in "-_" else "_" for c in log)


def replicas(cluster_size: int) -> int:
    """A stream on every node, as far as JetStream allows."""
    return max(1, min(cluster_size, MAX_REPLICAS))


def offset(seq: int) -> int:
    """A log's offsets are its messages' stream sequences, from 0 (they start at 1):
    increasing along each log, with gaps where another log's messages sit."""
    return seq - 1


def first_seq(start_offset: int) -> int:
    return max(start_offset, 0) + 1
