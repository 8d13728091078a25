"""The transaction client, as a MariaDB user writes one with PyMySQL: each
txn op is one SQL transaction on the node the harness routed it to, at the
session isolation level the `isolation` client option names.

List-append keeps a key's list as comma-separated text in one row, an append
an upsert that CONCATs onto it (Jepsen's Galera test does the same); a
rw-register key is a row holding one integer."""

from __future__ import annotations

from typing import Any

import pymysql

from faultline import CLIENT_OPTIONS, LISTS, REGISTER_TXNS, Op, fail, info, ok, workload_data
from faultline_galera.config import (
    DATABASE,
    DEFAULT_ISOLATION,
    ISOLATION_LEVELS,
    TABLES,
    USER,
    isolation_level,
)

# A client error (CR_*): no answer came back, so what the server did is unknown.
CONNECTION_ERRORS = range(2000, 3000)
# Tables by data type: a workload of either type uses its own table.
TABLE_OF = {LISTS: TABLES["list-append"][0], REGISTER_TXNS: TABLES["rw-register"][0]}


class Unsent(Exception):
    """The connection could not be made: nothing reached a server."""


def parse_list(raw: Any) -> list[int]:
    """A list-append row's text as the list it holds (pure); no row is []."""
    if raw is None:
        return []
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return [int(x) for x in text.split(",") if x != ""]


def parse_register(raw: Any) -> int | None:
    return None if raw is None else int(raw)


def statements(data: str, table: str, micro: list[Any]) -> tuple[str, tuple[Any, ...]]:
    """The SQL of one micro-op and its parameters (pure)."""
    f, key, value = micro
    if f == "r":
        return f"SELECT val FROM {DATABASE}.{table} WHERE id = %s", (key,)
    if f == "append" and data == LISTS:
        return (f"INSERT INTO {DATABASE}.{table} (id, val) VALUES (%s, %s) "
                "ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', %s)", (key, str(value), str(value)))
    if f == "w" and data == REGISTER_TXNS:
        return (f"INSERT INTO {DATABASE}.{table} (id, val) VALUES (%s, %s) "
                "ON DUPLICATE KEY UPDATE val = %s", (key, value, value))
    raise ValueError(f"the galera client cannot do micro-op {f!r} on {data}")


def is_connection_error(e: pymysql.MySQLError) -> bool:
    """True when no answer came back (the server may have acted); False when
    the server answered with an error (pure)."""
    code = e.args[0] if e.args and isinstance(e.args[0], int) else None
    return code is None or code in CONNECTION_ERRORS


class GaleraClient:
    # txns of appends and reads, and of writes and reads: list-append and rw-register.
    DATA = (LISTS, REGISTER_TXNS)
    # A typo in the level is refused before the run starts (254), not by the client.
    OPTIONS = {**CLIENT_OPTIONS, "isolation": "one-of:" + "|".join(ISOLATION_LEVELS)}

    def __init__(self, workload: str, nodes: dict[str, tuple[str, int]],
                 options: dict[str, Any]) -> None:
        self.workload = workload
        self.nodes = nodes
        self.data = workload_data(workload)
        self.table = TABLE_OF[self.data]
        self.isolation = isolation_level(str(options.get("isolation", DEFAULT_ISOLATION)))
        self.timeout = float(options.get("op_timeout", 1.0))
        self.connect_timeout = float(options.get("connect_timeout", 0.5))
        self._conns: dict[str, pymysql.connections.Connection] = {}

    def _conn(self, node: str) -> pymysql.connections.Connection:
        conn = self._conns.get(node)
        if conn is not None:
            return conn
        host, port = self.nodes[node]
        try:
            conn = pymysql.connect(host=host, port=port, user=USER, database=DATABASE,
                                   connect_timeout=self.connect_timeout,
                                   read_timeout=self.timeout, write_timeout=self.timeout,
                                   autocommit=True)
        except pymysql.MySQLError as e:
            raise Unsent(f"connect: {e}") from None
        self._conns[node] = conn
        try:
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {self.isolation}")
        except pymysql.MySQLError as e:
            # No txn of the op was begun: the session never got its level.
            self._drop(node)
            raise Unsent(f"set isolation: {e}") from None
        return conn

    def _drop(self, node: str) -> None:
        conn = self._conns.pop(node, None)
        if conn is not None:
            try:
                conn.close()
            except pymysql.MySQLError:
                pass

    def invoke(self, op: Op) -> Op:
        node = op.node if op.node in self.nodes else next(iter(self.nodes))
        if op.f != "txn":
            raise ValueError(f"the galera client cannot do f={op.f!r}")
        try:
            conn = self._conn(node)
        except Unsent as e:
            return fail(op, str(e), node)
        committing = False
        try:
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION")
                done = []
                for micro in op.value:
                    sql, args = statements(self.data, self.table, micro)
                    cur.execute(sql, args)
                    if micro[0] == "r":
                        row = cur.fetchone()
                        raw = None if row is None else row[0]
                        read = parse_list(raw) if self.data == LISTS else parse_register(raw)
                        done.append([micro[0], micro[1], read])
                    else:
                        done.append(list(micro))
                committing = True
                cur.execute("COMMIT")
            return ok(op, done, node)
        except pymysql.MySQLError as e:
            lost = is_connection_error(e)
            if lost:
                self._drop(node)
            else:
                self._rollback(node)
            error = f"{type(e).__name__}: {e}"
            # Only a COMMIT that got no answer may have taken effect: an
            # error the server answered with (a certification failure is a
            # deadlock error) aborted the txn, and a connection lost before
            # COMMIT leaves an open txn the server rolls back.
            if committing and lost:
                return info(op, error, node)
            return fail(op, error, node)

    def _rollback(self, node: str) -> None:
        conn = self._conns.get(node)
        if conn is None:
            return
        try:
            with conn.cursor() as cur:
                cur.execute("ROLLBACK")
        except pymysql.MySQLError:
            self._drop(node)

    def close(self) -> None:
        for node in list(self._conns):
            self._drop(node)
