"""A campaign's trend over nights, from the Parquet dataset every checked
campaign publishes (`harness/results/dataset.py`): per night, the runs, the
invalid ones, the detection rate of each bug switch, invalid runs per system,
and the p99 latency of successful client ops."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from harness.results.dataset import DATASET_DIR, HISTORIES, VERDICTS

NEMESIS_PROCESS = -1


@dataclass(frozen=True)
class Night:
    campaign: str
    date: str
    runs: int
    invalid: int
    # switch (or system) -> (runs judged invalid, runs)
    detection: dict[str, tuple[int, int]] = field(default_factory=dict)
    invalid_by_system: dict[str, tuple[int, int]] = field(default_factory=dict)
    p99_ms: float | None = None


def run_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its system, switches and whether any checker said
    invalid (a run is invalid when one of its checkers is)."""
    if rows.empty:
        return pd.DataFrame(columns=["run", "db", "bugs", "invalid"])
    rows = rows.assign(is_false=rows["valid"].astype(str) == "false")
    return (rows.groupby("run", as_index=False)
            .agg(db=("db", "first"), bugs=("bugs", "first"), invalid=("is_false", "any")))


def _rate(runs: pd.DataFrame, column: str) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for value, group in runs.groupby(column):
        if value:
            out[str(value)] = (int(group["invalid"].sum()), len(group))
    return out


def night_figures(campaign: str, date: str, verdict_rows: pd.DataFrame,
                  latencies_ns: Iterable[int]) -> Night:
    """A night's figures from its verdict rows and its ok ops' latencies."""
    runs = run_verdicts(verdict_rows)
    switches = runs.assign(bugs=runs["bugs"].fillna("").map(
        lambda b: [x for x in str(b).split(",") if x])).explode("bugs")
    switches = switches[switches["bugs"].notna()]
    return Night(campaign, date, runs=len(runs), invalid=int(runs["invalid"].sum()),
                 detection=_rate(switches, "bugs"),
                 invalid_by_system=_rate(runs.assign(db=runs["db"].fillna("")), "db"),
                 p99_ms=percentile_ms(list(latencies_ns), 99))


def ok_latencies_ns(ops: pd.DataFrame) -> list[int]:
    """Latency of each client op that completed ok: its completion's time less
    its invoke's (a process runs one op at a time, so an ok follows its own
    invoke among that process's ops)."""
    client = ops[ops["process"] != NEMESIS_PROCESS].sort_values(["process", "index"])
    before_type = client.groupby("process")["type"].shift()
    before_time = client.groupby("process")["time"].shift()
    done = (client["type"] == "ok") & (before_type == "invoke")
    return (client["time"][done] - before_time[done]).astype("int64").tolist()


def percentile_ms(values_ns: list[int], pct: float) -> float | None:
    if not values_ns:
        return None
    # Nearest rank: the smallest value at least pct% of the values are at or below.
    ordered = sorted(values_ns)
    rank = min(len(ordered), max(1, math.ceil(pct / 100 * len(ordered))))
    return ordered[rank - 1] / 1e6


def _partitions(results: Path, table: str, campaign: str) -> list[Path]:
    root = results / DATASET_DIR / table / f"campaign={campaign}"
    return sorted(root.glob("date=*")) if root.is_dir() else []


def read_night(results: Path, campaign: str) -> Night | None:
    """One campaign's night from the dataset, or None if it was never published
    (a campaign is published when its Spark check ends)."""
    parts = _partitions(results, VERDICTS, campaign)
    if not parts:
        return None
    date = parts[-1].name.split("=", 1)[1]
    rows = pd.concat([pq.read_table(f).to_pandas() for p in parts
                      for f in sorted(p.glob("*.parquet"))] or [pd.DataFrame()])
    latencies: list[int] = []
    for p in _partitions(results, HISTORIES, campaign):
        for f in sorted(p.glob("*.parquet")):
            ops = pq.read_table(f, columns=["index", "time", "process", "type"]).to_pandas()
            latencies += ok_latencies_ns(ops)
    return night_figures(campaign, date, rows, latencies)
