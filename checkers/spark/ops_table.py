"""Histories as a table: a Parquet copy of each run's history beside its msgpack.

The copy is what Spark reads, and what a person queries with Spark SQL or
pandas. Values keep their exact msgpack bytes (for the checkers) and a JSON
rendering (for people and SQL).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.durable import replacing
from checkers.history import NEMESIS, Op, iter_history

PARQUET_NAME = "history.parquet"
BATCH = 100_000
NEMESIS_PROCESS = -1

SCHEMA = pa.schema([
    ("run", pa.string()),
    ("index", pa.int64()),
    ("time", pa.int64()),
    ("process", pa.int64()),       # nemesis ops: -1
    ("type", pa.string()),
    ("f", pa.string()),
    ("key", pa.string()),          # JSON of the key, for grouping and SQL; null when none
    ("key_msgpack", pa.binary()),
    ("value_json", pa.string()),
    ("value_msgpack", pa.binary()),
    ("node", pa.string()),
    ("error", pa.string()),
    ("level", pa.string()),        # a completion's consistency level; null: quorum
    ("workload", pa.string()),     # the companion workload that issued it; null: the main
])


_SPARK_TYPES = {pa.string(): "string", pa.int64(): "long", pa.binary(): "binary"}
# Given to Spark's reader, so it need not open a file to infer it.
SPARK_DDL = ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in SCHEMA)
# What the checkers read back (value_json is for people and SQL).
CHECK_COLUMNS = [n for n in SCHEMA.names if n != "value_json"]


def _json(v: Any) -> str:
    return json.dumps(v, default=repr, separators=(",", ":"))


def _source_stamp(history: Path) -> dict[bytes, bytes]:
    st = history.stat()
    return {b"faultline.source_size": str(st.st_size).encode(),
            b"faultline.source_mtime_ns": str(st.st_mtime_ns).encode()}


def _rows(run_id: str, ops: Iterable[Op]) -> Iterable[dict[str, list[Any]]]:
    cols: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for op in ops:
        cols["run"].append(run_id)
        cols["index"].append(op.index)
        cols["time"].append(op.time)
        cols["process"].append(NEMESIS_PROCESS if op.process == NEMESIS else op.process)
        cols["type"].append(op.type)
        cols["f"].append(op.f)
        if op.key is None:
            cols["key"].append(None)
            cols["key_msgpack"].append(None)
        else:
            cols["key"].append(_json(op.key))
            cols["key_msgpack"].append(msgpack.packb(op.key, use_bin_type=True))
        cols["value_json"].append(_json(op.value))
        cols["value_msgpack"].append(msgpack.packb(op.value, use_bin_type=True))
        cols["node"].append(op.node)
        cols["error"].append(op.error)
        cols["level"].append(op.level)
        cols["workload"].append(op.workload)
        if len(cols["run"]) >= BATCH:
            yield cols
            cols = {name: [] for name in SCHEMA.names}
    if cols["run"]:
        yield cols


def cached_parquet(run_dir: Path) -> Path:
    """The run's Parquet copy, (re)made only when the msgpack history changed."""
    history = run_dir / "history.msgpack"
    out = run_dir / PARQUET_NAME
    stamp = _source_stamp(history)
    if out.exists():
        try:
            cached = pq.read_schema(out)
            meta = cached.metadata or {}
            # A copy made before a column was added is remade, not read short of it.
            if cached.names == SCHEMA.names and all(meta.get(k) == v for k, v in stamp.items()):
                return out
        except (OSError, pa.ArrowException):
            pass  # a broken cache is rebuilt
    schema = SCHEMA.with_metadata(stamp)
    with replacing(out) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        wrote = False
        for cols in _rows(run_dir.name, iter_history(history)):
            writer.write_table(pa.table(cols, schema=schema))
            wrote = True
        if not wrote:
            writer.write_table(pa.table({n: [] for n in SCHEMA.names}, schema=schema))
    return out


def ops_from_rows(rows: Any) -> list[Op]:
    """Ops back from a pandas frame of this table (inside a Spark task)."""
    ops = []
    for r in rows.sort_values("index").itertuples(index=False):
        key = None if r.key_msgpack is None else msgpack.unpackb(r.key_msgpack, raw=False,
                                                                   strict_map_key=False)
        value = msgpack.unpackb(r.value_msgpack, raw=False, strict_map_key=False)
        process: int | str = NEMESIS if r.process == NEMESIS_PROCESS else int(r.process)
        ops.append(Op(int(r.index), int(r.time), process, r.type, r.f, value, key,
                      r.node if isinstance(r.node, str) else None,
                      r.error if isinstance(r.error, str) else None,
                      r.level if isinstance(r.level, str) else None,
                      r.workload if isinstance(r.workload, str) else None))
    return ops
