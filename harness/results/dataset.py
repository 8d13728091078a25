"""Campaign results as one dataset: every campaign's verdict rows and its runs'
history tables under `<results>/dataset/`, partitioned Hive-style by campaign
and date, so a year of nightly campaigns is one Spark SQL query:

    dataset/verdicts/campaign=<id>/date=<YYYY-MM-DD>/verdicts.parquet
    dataset/histories/campaign=<id>/date=<YYYY-MM-DD>/<run id>.parquet

`date` is the day (UTC) the campaign was created, so a resumed campaign stays
in its night. Verdict rows carry what a query groups by: the run's label,
system, workload, nemesis, bug switches and seed. A history table is a hard
link to the run dir's `history.parquet` (a copy where a link cannot be made),
so the dataset costs no second copy of the ops. Publishing a campaign again
replaces its partition: re-checking is idempotent here too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.durable import fsync_dir, fsync_file, locked

DATASET_DIR = "dataset"
VERDICTS = "verdicts"
HISTORIES = "histories"
HISTORY_NAME = "history.parquet"

# Columns from each run's campaign entry, in the order a reader sees them.
RUN_COLUMNS = ["label", "db", "workload", "nemesis", "bugs", "seed", "run_status"]


def partition(root: Path, table: str, campaign: str, date: str) -> Path:
    return root / DATASET_DIR / table / f"campaign={campaign}" / f"date={date}"


def campaign_date(created_iso: str) -> str:
    return datetime.fromisoformat(created_iso).date().isoformat()


def run_columns(entry: dict[str, Any]) -> dict[str, Any]:
    """One campaign entry's columns; lists become comma-joined strings (SQL groups them)."""
    config = entry.get("config") or {}

    def joined(v: Any) -> str:
        return ",".join(map(str, v)) if isinstance(v, list | tuple) else str(v or "")

    return {"label": entry.get("label"), "db": config.get("db"),
            "workload": config.get("workload"), "nemesis": joined(config.get("nemesis")),
            "bugs": joined(sorted(config.get("bugs") or [])), "seed": config.get("seed"),
            "run_status": entry.get("status")}


def verdict_rows(rows: pd.DataFrame, entries: list[dict[str, Any]]) -> pd.DataFrame:
    """The campaign's verdict rows joined with its runs' columns (a run's rows
    are found by its run id)."""
    by_run = {e["run_id"]: run_columns(e) for e in entries if e.get("run_id")}
    extra = pd.DataFrame([by_run.get(r, dict.fromkeys(RUN_COLUMNS)) for r in rows["run"]],
                         columns=RUN_COLUMNS, index=rows.index)
    out = pd.concat([rows.drop(columns=["verdict_json"], errors="ignore"), extra], axis=1)
    out["seed"] = out["seed"].astype("Int64")
    return out


def _replace_dir(final: Path, fill: Any) -> None:
    """Build a partition beside its place, then swap it in: a reader never sees
    half, and two publishers of one partition (a campaign re-checked twice at
    once) take turns, each with its own scratch names."""
    final.parent.mkdir(parents=True, exist_ok=True)
    # Dot names: Spark's partition discovery skips them, should a crash leave one.
    with locked(final.with_name(f".{final.name}")):
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp"))
        try:
            fill(tmp)
            # Durable before it is swapped in: a crash leaves the old partition or
            # a whole new one.
            for p in sorted(tmp.rglob("*"), reverse=True):
                (fsync_dir if p.is_dir() else fsync_file)(p)
            fsync_dir(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".old"))
        if final.exists():
            os.replace(final, old)   # onto the empty dir mkdtemp made
        os.replace(tmp, final)
        fsync_dir(final.parent)
        shutil.rmtree(old, ignore_errors=True)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem, or one without hard links
        shutil.copy2(src, dst)


def publish_campaign(results: Path, campaign: dict[str, Any], entries: list[dict[str, Any]],
                     rows: pd.DataFrame) -> Path:
    """Write one campaign's partition of both tables; returns the dataset root."""
    cid, date = campaign["id"], campaign_date(campaign["created"])
    table = verdict_rows(rows, entries)

    def write_verdicts(d: Path) -> None:
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), d / "verdicts.parquet")

    def link_histories(d: Path) -> None:
        for e in entries:
            src = Path(e["run_dir"]) / HISTORY_NAME if e.get("run_dir") else None
            if src is not None and src.is_file():
                _link_or_copy(src, d / f"{e['run_id']}.parquet")

    _replace_dir(partition(results, VERDICTS, cid, date), write_verdicts)
    _replace_dir(partition(results, HISTORIES, cid, date), link_histories)
    return results / DATASET_DIR
