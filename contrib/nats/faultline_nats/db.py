"""The DB adapter: what to run on a node and how to look at it (faultline.DB)."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from faultline import NodeSpec, write_durably
from faultline_nats.config import monitor_port, server_conf, store_dir

PROBE_TIMEOUT_S = 1.0
INSTALL_HINT = "nats-server is not installed: apt-get install nats-server"




def monitor(node: NodeSpec, path: str) -> dict | None:
    """One GET of the node's monitoring endpoint; None if it does not answer."""
    url = f"http://{node.host}:{monitor_port(node)}{path}"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as resp:  # noqa: S310
            return json.loads(resp.read())
    except (OSError, urllib.error.URLError, ValueError):
        return None


def meta_leader(jsz: dict | None) -> str | None:
    """The JetStream meta leader a node's /jsz names (pure)."""
    if not isinstance(jsz, dict):
        return None
    meta = jsz.get("meta_cluster")
    leader = meta.get("leader") if isinstance(meta, dict) else None
    return leader if isinstance(leader, str) and leader else None


def agreed_leader(named: list[str | None], names: list[str]) -> str | None:
    """The node a majority of the nodes name as leader, if they agree (pure)."""
    votes = Counter(n for n in named if n in names)
    if not votes:
        return None
    name, count = votes.most_common(1)[0]
    return name if count > len(names) // 2 else None


class NatsDB:
    kind = "nats"
    # No log dump and no event lines: the history is all the checkers get.
    artifacts: frozenset[str] = frozenset()

    def check_installed(self) -> str | None:
        return None if shutil.which("nats-server") else INSTALL_HINT

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]:
        conf = node.data_dir / "nats.conf"
        if fresh or not conf.exists():
            write_durably(conf, server_conf(node, cluster))
        # One process per node: kill, pause and resume reach the server itself.
        return [shutil.which("nats-server") or "nats-server", "-c", str(conf)]

    def is_ready(self, node: NodeSpec) -> bool:
        """The server is healthy (JetStream on) and knows a meta leader."""
        health = monitor(node, "/healthz")
        return (isinstance(health, dict) and health.get("status") == "ok"
                and meta_leader(monitor(node, "/jsz")) is not None)

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        """The JetStream meta leader (it places streams and answers the stream
        API), if a majority of the nodes name the same one. Each stream has its
        own Raft group and leader besides, which this does not name."""
        return agreed_leader([meta_leader(monitor(n, "/jsz")) for n in cluster],
                             [n.name for n in cluster])

    def data_files(self, node: NodeSpec) -> list[Path]:
        """The streams' message blocks, oldest first per stream (what a disk
        fault truncates)."""
        return sorted(Path(store_dir(node)).glob("jetstream/*/streams/*/msgs/*.blk"))

    def dump_log(self, node: NodeSpec, out: Path) -> None:
        """Writes nothing: JetStream has no log in faultline's dump shape; the
        log workload's final reads are the evidence."""
