"""A campaign's trend over nights, from the Parquet dataset every checked
campaign publishes (`harness/results/dataset.py`): per night, the runs, the
invalid ones, the detection rate of each bug switch, invalid runs per system,
and the p99 latency of successful client ops."""

from __future__ import annotations

import math
import threading
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


# The verdict rows' columns a night's figures use (run_verdicts).
VERDICT_COLUMNS = ["run", "db", "bugs", "valid"]
HISTORY_COLUMNS = ["index", "time", "process", "type"]
# A file as last read: a partition is replaced by a swap (dataset._replace_dir)
# and a history re-linked, so a changed file has another inode, mtime or size.
Stamp = tuple[str, int, int, int]


def _stamp(f: Path) -> Stamp:
    st = f.stat()
    return (str(f), st.st_ino, st.st_mtime_ns, st.st_size)


def _files(results: Path, table: str, campaign: str) -> list[Path]:
    return [f for p in _partitions(results, table, campaign) for f in sorted(p.glob("*.parquet"))]


def read_night(results: Path, campaign: str, cache: NightCache | None = None) -> Night | None:
    """One campaign's night from the dataset, or None if it was never published
    (a campaign is published when its Spark check ends). With `cache`, a history
    file already read (the same inode, mtime and size) is not read again."""
    parts = _partitions(results, VERDICTS, campaign)
    if not parts:
        return None
    date = parts[-1].name.split("=", 1)[1]
    frames = [pq.read_table(f, columns=_present(f, VERDICT_COLUMNS)).to_pandas()
              for f in _files(results, VERDICTS, campaign)]
    rows = pd.concat(frames) if frames else pd.DataFrame(columns=VERDICT_COLUMNS)
    latencies: list[int] = []
    for f in _files(results, HISTORIES, campaign):
        latencies += cache.latencies(f) if cache is not None else _latencies(f)
    return night_figures(campaign, date, rows, latencies)


def _present(f: Path, columns: list[str]) -> list[str]:
    names = set(pq.read_schema(f).names)
    return [c for c in columns if c in names]


def _latencies(f: Path) -> list[int]:
    return ok_latencies_ns(pq.read_table(f, columns=HISTORY_COLUMNS).to_pandas())


class NightCache:
    """The browser's memory of what it read: each campaign's night figures,
    kept while none of its dataset files changed, and each history file's ok
    latencies, kept while that file is unchanged (a history is linked into
    every night that names its run). Views run on the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nights: dict[str, tuple[tuple[Stamp, ...], Night | None]] = {}
        self._latencies: dict[Stamp, list[int]] = {}
        self.files_read = 0     # history files parsed, for the tests

    def night(self, results: Path, campaign: str) -> Night | None:
        try:
            stamps = tuple(_stamp(f) for t in (VERDICTS, HISTORIES)
                           for f in _files(results, t, campaign))
        except OSError:    # a partition swapped under us: read it afresh
            stamps = None
        with self._lock:
            known = self._nights.get(campaign)
        if stamps is not None and known is not None and known[0] == stamps:
            return known[1]
        night = read_night(results, campaign, self)
        if stamps is not None:
            with self._lock:
                self._nights[campaign] = (stamps, night)
        return night

    def latencies(self, f: Path) -> list[int]:
        stamp = _stamp(f)
        with self._lock:
            known = self._latencies.get(stamp)
        if known is None:
            known = _latencies(f)
            with self._lock:
                self._latencies[stamp] = known
                self.files_read += 1
        return known
