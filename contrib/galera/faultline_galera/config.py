"""The option file a node's mariadbd starts from, the settings that decide a
run's outcome, and the SQL that makes a fresh data dir (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faultline import NodeSpec

CLUSTER_NAME = "faultline"
DATABASE = "faultline"
# The account the clients and the probes use: no password, from the run's
# namespaces only (the server listens nowhere else).
USER = "faultline"
# Every bit of global_priv's access mask (what mariadb-install-db gives root).
ALL_PRIVILEGES = 2**64 - 1
PROVIDER = "/usr/lib/galera/libgalera_smm.so"

# --node-option key -> (kind, default, the server variable it pins). The
# defaults are the ones a user following MariaDB's Galera guide gets:
# innodb_flush_log_at_trx_commit=0 is its recommended setting for Galera
# (and Debian's 60-galera.cnf's), the rest are 10.11's own defaults.
SETTINGS: dict[str, tuple[str, Any, str]] = {
    "innodb_flush_log_at_trx_commit": ("non-negative-int", 0, "innodb_flush_log_at_trx_commit"),
    "innodb_snapshot_isolation": ("bool", False, "innodb_snapshot_isolation"),
    "wsrep_sync_wait": ("non-negative-int", 0, "wsrep_sync_wait"),
}
NODE_OPTIONS = {name: kind for name, (kind, _, _) in SETTINGS.items()}
NODE_DEFAULTS = {name: default for name, (_, default, _) in SETTINGS.items()}

# The isolation levels Galera offers a session (a client option), and the
# consistency model each claims, which Elle judges a run against.
ISOLATION_LEVELS = {
    "read-committed": "READ COMMITTED",
    "repeatable-read": "REPEATABLE READ",
    "serializable": "SERIALIZABLE",
}
DEFAULT_ISOLATION = "repeatable-read"
CLAIMED_MODEL = {
    "read-committed": "read-committed",
    "repeatable-read": "repeatable-read",
    "serializable": "serializable",
}

# One table per workload, a row per key: list-append keeps a list as the
# comma-separated text its appends CONCAT onto (as Jepsen's Galera test does),
# rw-register one integer.
TABLES = {
    "list-append": ("list_append", "TEXT NOT NULL"),
    "rw-register": ("rw_register", "BIGINT NOT NULL"),
}


def check_settings(options: Mapping[str, Any]) -> None:
    """What mariadbd would refuse at start (raises ValueError)."""
    flush = options.get("innodb_flush_log_at_trx_commit", 0)
    if flush not in (0, 1, 2, 3):
        raise ValueError(f"innodb_flush_log_at_trx_commit must be 0, 1, 2 or 3, not {flush!r}")
    sync_wait = options.get("wsrep_sync_wait", 0)
    if not 0 <= sync_wait <= 15:
        raise ValueError(f"wsrep_sync_wait must be 0 to 15 (a bit mask), not {sync_wait!r}")


def isolation_level(name: str) -> str:
    """The SQL level a client option names; ValueError naming the choices."""
    try:
        return ISOLATION_LEVELS[name]
    except KeyError:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_LEVELS)}, "
                         f"not {name!r}") from None


def gcomm_port(node: NodeSpec) -> int:
    return node.port + 1


def ist_port(node: NodeSpec) -> int:
    return node.port + 2


def sst_port(node: NodeSpec) -> int:
    return node.port + 3


def _value(raw: Any) -> str:
    if isinstance(raw, bool):
        return "ON" if raw else "OFF"
    return str(raw)


def server_conf(node: NodeSpec, cluster: list[NodeSpec], datadir: str,
                options: Mapping[str, Any]) -> str:
    """Every listener (SQL, group communication, IST, SST) on the node's own
    namespace address; the outcome-deciding settings pinned from the node
    options (their defaults when not given)."""
    peers = ",".join(f"{n.host}:{gcomm_port(n)}" for n in cluster)
    pinned = [f"{variable} = {_value(options.get(name, NODE_DEFAULTS[name]))}"
              for name, (_, _, variable) in SETTINGS.items()]
    return "\n".join([
        "[mysqld]",
        f"datadir = {datadir}",
        f"socket = {datadir}/mysqld.sock",
        f"pid-file = {datadir}/mysqld.pid",
        f"bind-address = {node.host}",
        f"port = {node.port}",
        "skip-name-resolve",
        "skip-log-bin",
        "default_storage_engine = InnoDB",
        "binlog_format = ROW",
        "innodb_autoinc_lock_mode = 2",
        "innodb_buffer_pool_size = 64M",
        # Small preallocated files: on LazyFS (a Python FUSE file system) a
        # 64 MB write-set cache took 35 s to create on a loaded machine,
        # past the harness's 60 s start bound.
        "innodb_log_file_size = 8M",
        # LazyFS (the power-cut fault) is a FUSE file system: no O_DIRECT.
        "innodb_flush_method = fsync",
        "performance_schema = OFF",
        "max_connections = 200",
        *pinned,
        "wsrep_on = ON",
        f"wsrep_provider = {PROVIDER}",
        f"wsrep_cluster_name = {CLUSTER_NAME}",
        f"wsrep_cluster_address = gcomm://{peers}",
        f"wsrep_node_name = {node.name}",
        f"wsrep_node_address = {node.host}:{gcomm_port(node)}",
        f"wsrep_node_incoming_address = {node.host}:{node.port}",
        f"wsrep_sst_receive_address = {node.host}:{sst_port(node)}",
        "wsrep_sst_method = rsync",
        f'wsrep_provider_options = "gmcast.listen_addr=tcp://{node.host}:{gcomm_port(node)}; '
        f'ist.recv_addr={node.host}:{ist_port(node)}; gcache.size=8M"',
    ]) + "\n"


def bootstrap_sql(tables: Mapping[str, tuple[str, str]] = TABLES) -> str:
    """Fed to `mariadbd --bootstrap` on a fresh data dir: the account, the
    database and every workload's table, so no DDL runs while faults do."""
    # The bootstrap runs without the grant tables loaded, so the account is
    # a row of mysql.global_priv (every privilege bit set), not CREATE USER.
    lines = [
        "INSERT IGNORE INTO mysql.global_priv (Host, User, Priv) "
        f"VALUES ('%', '{USER}', '{{\"access\":{ALL_PRIVILEGES}}}');",
        f"CREATE DATABASE IF NOT EXISTS {DATABASE};",
    ]
    lines += [f"CREATE TABLE IF NOT EXISTS {DATABASE}.{table} "
              f"(id BIGINT NOT NULL PRIMARY KEY, val {column}) ENGINE=InnoDB;"
              for table, column in tables.values()]
    return "\n".join(lines) + "\n"
