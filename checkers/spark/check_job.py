"""`faultline check` as a Spark job.

Histories become one DataFrame of ops. P-compositional checkers
(linearizability) run per (run, key) group, the others per run, both through
`applyInPandas`, calling the same registry `faultline run` uses in-process.
The driver folds the rows into each run's `verdicts.json` and into one
verdict table, `verdicts.parquet`, under the results dir.
"""

from __future__ import annotations

import copy
import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.coverage import coverage_of_run_dir
from checkers.durable import locked, replacing
from checkers.registry import (
    CHECKS,
    Options,
    Plan,
    config_of,
    judges_key,
    load_node_files,
    merge_key_verdicts,
    read_run_json,
    run_check,
    run_from_ops,
    runnable,
    with_skipped,
)
from checkers.spark import SPLIT_FROM
from checkers.spark.ops_table import (
    CHECK_COLUMNS,
    NEMESIS_PROCESS,
    SPARK_DDL,
    cached_parquet,
    ops_from_rows,
)
from checkers.spark.session import SHUFFLE_LIMIT_KEY
from checkers.spark.split_job import SPLIT_CHECKERS, check_split
from checkers.verdict import Verdict, merge
from checkers.verdict_store import history_digest, write_verdicts

VERDICT_COLUMNS = "run string, checker string, key string, valid string, " \
                  "anomaly_count long, seconds double, verdict_json string"
VERDICT_NAMES = [c.split()[0] for c in VERDICT_COLUMNS.split(", ")]
TABLE_NAME = "verdicts.parquet"


def _validity(v: Any) -> str:
    return {True: "true", False: "false"}.get(v, "unknown")


def _row(run: str, checker: str, key: str | None, v: Verdict, seconds: float) -> dict[str, Any]:
    return {"run": run, "checker": checker, "key": key, "valid": _validity(v["valid"]),
            "anomaly_count": len(v.get("anomalies", [])), "seconds": seconds,
            "verdict_json": json.dumps(v, default=str)}


PandasFn = Callable[[pd.DataFrame], pd.DataFrame]


def key_check_fn(checker: str, runs: dict[str, dict[str, Any]],
                 plans: dict[str, Plan]) -> PandasFn:
    """A pandas function for one (run, key) group of client ops."""

    def check_group(rows: pd.DataFrame) -> pd.DataFrame:
        run_id = rows["run"].iloc[0]
        key = rows["key"].iloc[0]
        r = run_from_ops(Path(run_id), runs[run_id], ops_from_rows(rows))
        options = plans[run_id][checker]
        if not judges_key(r.history.ops, options, str(config_of(r).get("workload", ""))):
            # Another workload's key (a companion's): not this checker's, so no row.
            return pd.DataFrame([], columns=VERDICT_NAMES)
        v, seconds = run_check(checker, r, options)
        return pd.DataFrame([_row(run_id, checker, key if isinstance(key, str) else None,
                                  v, seconds)])

    return check_group


def run_check_fn(plans: dict[str, Plan], runs: dict[str, dict[str, Any]],
                 run_dirs: dict[str, str]) -> PandasFn:
    """A pandas function for one run's whole history: its run-scoped checkers."""

    def check_run(rows: pd.DataFrame) -> pd.DataFrame:
        run_id = rows["run"].iloc[0]
        names = [n for n in plans[run_id] if CHECKS[n].scope == "run"]
        r = run_from_ops(Path(run_dirs[run_id]), runs[run_id], ops_from_rows(rows))
        if any(CHECKS[n].needs_node_files for n in names):
            r.dumps, r.events = load_node_files(r.path)
        out = []
        for name in names:
            v, seconds = run_check(name, r, plans[run_id][name])
            out.append(_row(run_id, name, None, v, seconds))
        return pd.DataFrame(out, columns=VERDICT_NAMES)

    return check_run


def size_shuffle(spark: Any, runs: int) -> None:
    """A few shuffle partitions per run, up to the session's setting: each
    partition is a task with its own Python round trip, and for one or ten
    runs most of a fixed 16 would be empty."""
    # The session's starting width, not its current one, which an earlier
    # call in this session may have lowered (a Spark Connect session has no
    # SparkContext to ask for the launch setting).
    limit = int(spark.conf.get(SHUFFLE_LIMIT_KEY,
                               spark.conf.get("spark.sql.shuffle.partitions", "200")))
    spark.conf.set("spark.sql.shuffle.partitions", str(min(limit, max(2, 2 * runs))))


def check_runs(spark: Any, run_dirs: list[Path], plan_for: Callable[[dict[str, Any]], Plan],
               progress: Callable[[str], None] = lambda s: None,
               split_from: int | None = SPLIT_FROM) -> pd.DataFrame:
    """Check every run through Spark, each with the checkers `plan_for(run.json)`
    names; returns the verdict rows (also written out). A run of `split_from`
    events or more (None: none) has its split checkers run by the driver,
    their expensive parts spread over the executors (`split_job`)."""
    runs = {d.name: read_run_json(d) for d in run_dirs}
    # Taken before the histories are read: the verdicts are of these bytes.
    digests = {d.name: history_digest(d) for d in run_dirs}
    by_id = {d.name: str(d.resolve()) for d in run_dirs}
    requested = {r: plan_for(run) for r, run in runs.items()}
    full_plans = {r: runnable(runs[r], plan) for r, plan in requested.items()}
    checkers_by_run = {r: list(plan) for r, plan in full_plans.items()}
    started = time.perf_counter()
    paths = []
    big: list[Path] = []
    for i, d in enumerate(run_dirs, 1):
        paths.append(str(cached_parquet(d)))
        if split_from is not None and pq.ParquetFile(paths[-1]).metadata.num_rows >= split_from:
            big.append(d)
        if i % 10 == 0 or i == len(run_dirs):
            progress(f"history tables ready: {i}/{len(run_dirs)}")
    # What the per-run tasks check: a big run's split checkers are the driver's.
    plans = {r: {n: o for n, o in plan.items()
                 if not (n in SPLIT_CHECKERS and any(d.name == r for d in big))}
             for r, plan in full_plans.items()}
    ops = spark.read.schema(SPARK_DDL).parquet(*paths).select(*CHECK_COLUMNS)
    size_shuffle(spark, len(runs))
    frames = []
    for name, spec in CHECKS.items():
        if spec.scope != "key":
            continue
        wanted = [r for r, names in checkers_by_run.items() if name in names]
        if wanted:
            groups = ops.filter(ops.run.isin(wanted) & (ops.process != NEMESIS_PROCESS))
            frames.append(groups.groupBy("run", "key")
                          .applyInPandas(key_check_fn(name, runs, plans), VERDICT_COLUMNS))
    run_scoped = [r for r, plan in plans.items() if any(CHECKS[n].scope == "run" for n in plan)]
    if run_scoped:
        frames.append(ops.filter(ops.run.isin(run_scoped)).groupBy("run")
                      .applyInPandas(run_check_fn(plans, runs, by_id), VERDICT_COLUMNS))
    progress(f"checking {len(runs)} run(s) with Spark")
    # The other runs' job runs while the driver splits the big runs' checks.
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(_collect, frames)
        split_rows = []
        for d in big:
            progress(f"{d.name}: {', '.join(n for n in full_plans[d.name] if n in SPLIT_CHECKERS)}"
                     " split across executors")
            split_rows += [_row(d.name, n, None, v, seconds)
                           for n, v, seconds in check_split(spark, d, full_plans[d.name])]
        rows = job.result()
    if split_rows:
        split_frame = pd.DataFrame(split_rows, columns=VERDICT_NAMES)
        rows = (pd.concat([rows, split_frame], ignore_index=True) if len(rows)
                else split_frame)
    # A key checker with no group of its own (a run with no ops, a companion
    # that issued none) saw nothing to judge: its verdict is the one
    # in-process gives a run with none of its ops, not a merge of no keys.
    judged = set(zip(rows["run"], rows["checker"], strict=True))
    unjudged: dict[str, dict[str, Verdict]] = defaultdict(dict)
    for r, names in checkers_by_run.items():
        for n in names:
            if (r, n) not in judged:
                unjudged[r][n] = nothing_judged(n, Path(by_id[r]), runs[r], full_plans[r][n])
    if unjudged:
        empty = [_row(r, n, None, v, 0.0) for r, vs in unjudged.items() for n, v in vs.items()]
        rows = pd.concat([rows, pd.DataFrame(empty, columns=VERDICT_NAMES)], ignore_index=True)
    progress(f"checked {len(runs)} run(s) in {time.perf_counter() - started:.1f}s")
    by_run = dict(iter(rows.groupby("run", sort=False)))
    for run_id, d in zip(runs, run_dirs, strict=True):
        document = run_document(by_run.get(run_id, rows.iloc[:0]), checkers_by_run[run_id],
                                unjudged.get(run_id, {}))
        document["coverage"] = coverage_of_run_dir(d, runs[run_id])
        write_verdicts(d, with_skipped(document, runs[run_id], requested[run_id]),
                       digests[run_id])
    return rows


def _collect(frames: list[Any]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame(columns=VERDICT_NAMES)
    result = frames[0]
    for f in frames[1:]:
        result = result.unionByName(f)
    rows = result.toPandas()
    # Spark Connect hangs its query metrics on the frame, which Arrow cannot store.
    rows.attrs.clear()
    return rows


def nothing_judged(name: str, run_dir: Path, run: dict[str, Any], options: Options) -> Verdict:
    """The verdict of checker `name` on a run none of whose ops are its: what
    `run_check` says in-process of such a run (no client operations, naming
    the workload it would have judged)."""
    v, _ = run_check(name, run_from_ops(run_dir, run, []), options)
    return v


def run_document(rows: pd.DataFrame, names: list[str],
                 unjudged: Mapping[str, Verdict] | None = None) -> dict[str, Any]:
    """One run's verdicts.json from its verdict rows; `unjudged`: the
    checkers that had no rows to merge, with their verdict."""
    verdicts: dict[str, Verdict] = {}
    unjudged = unjudged or {}
    for name in names:
        mine = rows[rows["checker"] == name]
        parsed = {k: json.loads(j) for k, j in zip(mine["key"], mine["verdict_json"],
                                                    strict=True)}
        v: Verdict
        if name in unjudged:
            v = copy.deepcopy(unjudged[name])
        elif CHECKS[name].scope == "key":
            v = merge_key_verdicts(parsed)
            # The workload its keys' ops came from (run_check names it per key).
            judged = {(p.get("stats") or {}).get("workload") for p in parsed.values()}
            if len(judged) == 1 and None not in judged:
                v["stats"]["workload"] = judged.pop()
        else:
            v = next(iter(parsed.values()))
        v["stats"] = {**v.get("stats", {}), "seconds": round(float(mine["seconds"].sum()), 3)}
        verdicts[name] = v
    return merge(verdicts)


def update_table(results_dir: Path, rows: pd.DataFrame) -> Path:
    """Replace the checked runs' rows in verdicts.parquet, keeping every other run's:
    re-checking is idempotent."""
    out = results_dir / TABLE_NAME
    table = rows.drop(columns=["verdict_json"]).assign(
        checked_at=pd.Timestamp.now(tz="UTC").isoformat())
    # Locked from read to replace: two checks updating one table at once
    # would each drop the other's rows.
    with locked(out):
        if out.exists():
            try:
                old = pq.read_table(out).to_pandas()
                table = pd.concat([old[~old["run"].isin(set(rows["run"]))], table],
                                  ignore_index=True)
            except (OSError, pa.ArrowException):
                pass  # a broken table is replaced
        table = table.sort_values(["run", "checker", "key"], na_position="first")
        with replacing(out) as tmp:
            pq.write_table(pa.Table.from_pandas(table, preserve_index=False), tmp)
    return out
