"""The DB adapter: what to run on a node and how to look at it (faultline.DB)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import redis

from faultline import (
    PYTHON_BENIGN_LINES,
    PYTHON_FAILURE_LINES,
    NodeSpec,
    NodeState,
    python_module_argv,
    write_durably,
)
from faultline_redis.config import MASTER_NAME, sentinel_conf, sentinel_port, server_conf
from faultline_redis.connect import connect

PROBE_TIMEOUT_S = 1.0
# --node-option keys the adapter reads, with their kind.
OPTIONS = {"down_after_ms": "positive-int", "failover_timeout_ms": "positive-int"}
INSTALL_HINT = "redis-server is not installed: apt-get install redis-server"


def _number(raw: object) -> object:
    """A value as the client reads it back: an integer, else its text."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        return int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return text


class RedisDB:
    kind = "redis"
    # No log dump and no event lines: the history is all the checkers get.
    artifacts: frozenset[str] = frozenset()
    # A Python parent (its tracebacks) and redis-server's own crash report
    # and failed assertions.
    failure_log_lines = (*PYTHON_FAILURE_LINES, r"=== REDIS BUG REPORT START",
                         r"crashed by signal", r"ASSERTION FAILED")
    benign_log_lines = PYTHON_BENIGN_LINES
    # redis-server reads the clock through libc, but under libfaketime 0.9.10
    # it does not start (tried 2026-11-26: "Unexpected recursive calls to
    # clock_gettime() without proper initialization", and the node exited).
    clock_preload = False
    clock_note = ("redis-server does not start under libfaketime 0.9.10 (recursive "
                  "clock_gettime() calls while the library initialises)")

    def check_installed(self) -> str | None:
        return None if shutil.which("redis-server") else INSTALL_HINT

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]:
        # Both daemons rewrite their config as roles change (a sentinel-led
        # failover, a demoted primary); a restart keeps what they wrote.
        # Written durably: a config the node's disk never synced is lost by
        # `lose-unsynced`, and redis-server restarts on its defaults (port
        # 6379, no replication), out of the cluster for good (seen: the hunt,
        # seed 1, 2026-11-27, on the primary, whose config nothing rewrites).
        server, sentinel = node.data_dir / "redis.conf", node.data_dir / "sentinel.conf"
        if fresh or not server.exists():
            write_durably(server, server_conf(node, cluster))
            write_durably(sentinel, sentinel_conf(
                node, cluster, int(node.options.get("down_after_ms", 1000)),
                int(node.options.get("failover_timeout_ms", 3000))))
        return python_module_argv(
            "faultline_redis.node",
            "--redis-server", shutil.which("redis-server") or "redis-server",
            "--server-conf", str(server), "--sentinel-conf", str(sentinel))

    def _ask(self, host: str, port: int, *command: str) -> object:
        conn = connect(host, port, PROBE_TIMEOUT_S, PROBE_TIMEOUT_S)
        try:
            return conn.execute_command(*command)
        except redis.RedisError:
            return None
        finally:
            conn.close()

    def is_ready(self, node: NodeSpec) -> bool:
        """The server answers and its sentinel knows a primary."""
        return (self._ask(node.host, node.port, "PING") is True
                and bool(self._ask(node.host, sentinel_port(node), "SENTINEL",
                                   "get-master-addr-by-name", MASTER_NAME)))

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        """The primary a majority of the sentinels name, if they agree."""
        by_address = {(n.host, n.port): n.name for n in cluster}
        votes: Counter[str] = Counter()
        for node in cluster:
            answer = self._ask(node.host, sentinel_port(node), "SENTINEL",
                               "get-master-addr-by-name", MASTER_NAME)
            if answer:
                host, port = (x.decode() if isinstance(x, bytes) else str(x) for x in answer)
                name = by_address.get((host, int(port)))
                if name is not None:
                    votes[name] += 1
        if not votes:
            return None
        name, count = votes.most_common(1)[0]
        return name if count > len(cluster) // 2 else None

    def applied_state(self, node: NodeSpec, workload: str) -> NodeState | None:
        """The workload's keys as this server holds them (a read of its own
        data, primary or replica), at its replication offset."""
        prefix = f"{workload}/"
        conn = connect(node.host, node.port, PROBE_TIMEOUT_S, PROBE_TIMEOUT_S)
        try:
            position = int(conn.info("replication")["master_repl_offset"])
            keys = []
            for raw in conn.scan_iter(match=prefix + "*", count=1000):
                name = raw.decode() if isinstance(raw, bytes) else str(raw)
                value = conn.get(raw)
                key = name[len(prefix):]
                # The client names the keyless register after its workload.
                keys.append([None if key == workload else key, _number(value)])
        except (redis.RedisError, KeyError, ValueError):
            return None
        finally:
            conn.close()
        return {"position": position, "keys": keys}

    def data_files(self, node: NodeSpec) -> list[Path]:
        """The append-only files, oldest first (what a disk fault truncates)."""
        return sorted((node.data_dir / "appendonlydir").glob("*.aof"))

    def dump_log(self, node: NodeSpec, out: Path) -> None:
        """Writes nothing: Redis has no replicated log in faultline's dump shape."""
