"""The DB adapter: what to run on a node and how to look at it (faultline.DB)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pymysql

from faultline import NodeSpec, python_module_argv, write_durably
from faultline_galera.config import (
    DATABASE,
    NODE_DEFAULTS,
    SETTINGS,
    USER,
    bootstrap_sql,
    check_settings,
    server_conf,
)

PROBE_TIMEOUT_S = 1.0
INSTALL_TIMEOUT_S = 120.0
SERVER = "/usr/sbin/mariadbd"
INSTALL_DB = "mariadb-install-db"
PROVIDER_HINT = "galera-4 is not installed: apt-get install mariadb-server galera-4 rsync"
# The rsync state transfer runs as the server's user; as root it fails.
RUN_AS = "mysql"
# The file beside each node's log that records what its server ran with.
SETTINGS_FILE = "settings.json"
# What a node reports once it is a full member that serves clients.
READY_STATE = {"wsrep_ready": "ON", "wsrep_cluster_status": "Primary",
               "wsrep_local_state_comment": "Synced"}


def datadir(node: NodeSpec) -> Path:
    """mariadbd's data dir, inside the node's: an rsync state transfer
    replaces it whole, so the option file sits beside it."""
    return node.data_dir / "mysql"


def conf_path(node: NodeSpec) -> Path:
    return node.data_dir / "my.cnf"




def connect(host: str, port: int, timeout: float) -> pymysql.connections.Connection:
    return pymysql.connect(host=host, port=port, user=USER, database=DATABASE,
                           connect_timeout=timeout, read_timeout=timeout,
                           write_timeout=timeout, autocommit=True)


def status(node: NodeSpec, *names: str, kind: str = "STATUS") -> dict[str, str] | None:
    """The node's global status (or variables) of these names; None if it
    does not answer."""
    try:
        conn = connect(node.host, node.port, PROBE_TIMEOUT_S)
    except pymysql.MySQLError:
        return None
    try:
        with conn.cursor() as cur:
            marks = ", ".join(["%s"] * len(names))
            cur.execute(f"SHOW GLOBAL {kind} WHERE Variable_name IN ({marks})", names)
            return {str(k).lower(): str(v) for k, v in cur.fetchall()}
    except pymysql.MySQLError:
        return None
    finally:
        conn.close()


def is_member(answer: dict[str, str] | None) -> bool:
    """A node's status says it is a synced member of a primary component (pure)."""
    return answer is not None and all(answer.get(k) == v for k, v in READY_STATE.items())


def pinned_variables() -> tuple[str, ...]:
    return (*(variable for _, _, variable in SETTINGS.values()), "version",
            "wsrep_provider_version", "transaction_isolation", "innodb_flush_method")


class GaleraDB:
    kind = "galera"
    # No log dump and no event lines: the history is all the checkers get.
    artifacts: frozenset[str] = frozenset()

    @staticmethod
    def check_options(options: dict[str, Any]) -> None:
        check_settings(options)

    def check_installed(self) -> str | None:
        if not (os.path.exists(SERVER) and shutil.which(INSTALL_DB)):
            return "mariadb-server is not installed: apt-get install mariadb-server galera-4 rsync"
        if not os.path.exists("/usr/lib/galera/libgalera_smm.so") or not shutil.which("rsync"):
            return PROVIDER_HINT
        return None

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None:
        """The first node gets a fresh data dir with the account and the
        tables; the others start empty and take a state transfer from it."""
        node.data_dir.mkdir(parents=True, exist_ok=True)
        shutil.chown(node.data_dir, RUN_AS, RUN_AS)
        # The server runs as RUN_AS: it must be able to pass through the
        # run's data root (a private temp dir) to its own data dir.
        root = node.data_dir.parent
        root.chmod(root.stat().st_mode | 0o111)
        if node.name != cluster[0].name:
            datadir(node).mkdir(exist_ok=True)
            shutil.chown(datadir(node), RUN_AS, RUN_AS)
            return
        sql = node.data_dir / "bootstrap.sql"
        sql.write_text(bootstrap_sql())
        done = subprocess.run(
            [INSTALL_DB, "--no-defaults", f"--datadir={datadir(node)}", f"--user={RUN_AS}",
             "--skip-test-db", "--auth-root-authentication-method=socket",
             f"--extra-file={sql}"],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{INSTALL_DB} failed on {node.name}: "
                               f"{(done.stdout + done.stderr)[-1500:]}")

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]:
        conf = conf_path(node)
        if fresh or not conf.exists():
            options = {**NODE_DEFAULTS, **node.options}
            write_durably(conf, server_conf(node, cluster, str(datadir(node)), options))
        # The starter (faultline_galera.node) execs the server: the run's
        # first start of the first node makes the cluster, other starts
        # join, and a restart of every node at once follows the documented
        # whole-cluster restart.
        argv = python_module_argv(
            "faultline_galera.node", "--server", SERVER, "--conf", str(conf),
            "--user", RUN_AS, "--name", node.name, "--datadir", str(datadir(node)),
            "--board", str(node.data_dir.parent / "galera-restart"),
            *(f"--peer={n.name}={n.host}:{n.port}" for n in cluster))
        if fresh and node.name == cluster[0].name:
            argv.append("--new-cluster")
        elif not fresh:
            argv.append("--restart")
        return argv

    def is_ready(self, node: NodeSpec) -> bool:
        """A synced member of a primary component: it serves clients. Once
        ready, what the server runs with is recorded beside its log."""
        if not is_member(status(node, *READY_STATE)):
            return False
        self._record_settings(node)
        return True

    def _record_settings(self, node: NodeSpec) -> None:
        variables = status(node, *pinned_variables(), kind="VARIABLES")
        if variables is None:
            return
        node.log_dir.mkdir(parents=True, exist_ok=True)
        (node.log_dir / SETTINGS_FILE).write_text(json.dumps(variables, indent=1,
                                                             sort_keys=True) + "\n")

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        """None: Galera has no leader; every synced node takes writes."""
        return None

    def data_files(self, node: NodeSpec) -> list[Path]:
        """The workload tables' files, InnoDB's redo log and system space, and
        Galera's write-set cache (what a disk fault truncates)."""
        d = datadir(node)
        return sorted([*d.glob(f"{DATABASE}/*.ibd"), *d.glob("ib_logfile*"),
                       *d.glob("ibdata*"), *d.glob("galera.cache")])

    def dump_log(self, node: NodeSpec, out: Path) -> None:
        """Writes nothing: Galera has no log in faultline's dump shape."""
