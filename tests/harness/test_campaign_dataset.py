"""Campaign results as one dataset partitioned by campaign and date, and
the example query of docs/campaigns.md over it, run by Spark SQL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pytest

from checkers.history import Op
from checkers.spark.ops_table import cached_parquet
from checkers.spark.session import java_missing
from harness.results.dataset import DATASET_DIR, publish_campaign
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter

CAMPAIGNS_DOC = Path(__file__).resolve().parents[2] / "docs" / "campaigns.md"


def saved_run(results: Path, reads: int) -> Path:
    run = create_run_dir(results)
    with HistoryWriter(run / "history.msgpack") as w:
        for i in range(reads):
            w.append(Op(2 * i, 2 * i, 0, "invoke", "read"))
            w.append(Op(2 * i + 1, 2 * i + 1, 0, "ok", "read", None))
    (run / "run.json").write_text(json.dumps({"run_id": run.name, "status": "complete"}))
    cached_parquet(run)
    return run


def campaign(results: Path, cid: str, created: str, runs: list[tuple[list[str], bool]]
             ) -> tuple[dict, list[dict], pd.DataFrame]:
    """A checked campaign: each run has bug switches and whether it was caught."""
    entries, rows = [], []
    for i, (bugs, caught) in enumerate(runs):
        d = saved_run(results, reads=i + 1)
        entries.append({"index": i, "label": f"run {i}", "run_id": d.name, "run_dir": str(d),
                        "status": "complete",
                        "config": {"db": "raft", "workload": "register", "seed": i + 1,
                                   "nemesis": ["partition:isolate-leader"], "bugs": bugs}})
        for checker, valid in (("stats", "true"), ("invariants", "false" if caught else "true")):
            rows.append({"run": d.name, "checker": checker, "key": None, "valid": valid,
                         "anomaly_count": int(valid == "false"), "seconds": 0.1,
                         "verdict_json": "{}"})
    return {"id": cid, "created": created}, entries, pd.DataFrame(rows)


def nights(results: Path) -> list[tuple[dict, list[dict], pd.DataFrame]]:
    # Two nights in one ISO week (Mon 2026-11-16, Tue 2026-11-17), one in the next.
    return [
        campaign(results, "c1", "2026-11-16T01:00:00+00:00",
                 [(["no-pre-vote"], True), (["no-pre-vote"], False), ([], False)]),
        campaign(results, "c2", "2026-11-17T01:00:00+00:00",
                 [(["no-pre-vote"], True), (["commit-dirty"], True)]),
        campaign(results, "c3", "2026-11-23T01:00:00+00:00",
                 [(["commit-dirty"], False), (["commit-dirty"], True)]),
    ]


def test_partitions_by_campaign_and_date_with_run_columns(tmp_path):
    results = tmp_path / "results"
    for doc, entries, rows in nights(results):
        root = publish_campaign(results, doc, entries, rows)
    assert root == results / DATASET_DIR
    verdicts = pads.dataset(root / "verdicts", format="parquet", partitioning="hive"
                            ).to_table().to_pandas()
    assert sorted(verdicts["campaign"].unique()) == ["c1", "c2", "c3"]
    assert set(verdicts.groupby("campaign")["date"].first().astype(str)) == {
        "2026-11-16", "2026-11-17", "2026-11-23"}
    assert len(verdicts) == 2 * 7
    switched = verdicts[verdicts["bugs"] != ""]
    assert set(switched["bugs"]) == {"no-pre-vote", "commit-dirty"}
    assert set(verdicts["nemesis"]) == {"partition:isolate-leader"}
    assert "verdict_json" not in verdicts.columns
    # Histories are the run dirs' tables, linked, not copied.
    linked = sorted((root / "histories").rglob("*.parquet"))
    assert len(linked) == 7
    for path in linked:
        run_dir = next(results.glob(path.stem))
        assert path.stat().st_ino == (run_dir / "history.parquet").stat().st_ino
    ops = pads.dataset(root / "histories", format="parquet", partitioning="hive"
                       ).to_table().to_pandas()
    assert ops.groupby("campaign").size().to_dict() == {"c1": 2 * (1 + 2 + 3),
                                                      "c2": 2 * (1 + 2), "c3": 2 * (1 + 2)}


def test_publishing_again_replaces_the_partition(tmp_path):
    results = tmp_path / "results"
    doc, entries, rows = nights(results)[0]
    publish_campaign(results, doc, entries, rows)
    rows.loc[rows["checker"] == "invariants", "valid"] = "true"
    root = publish_campaign(results, doc, entries, rows)
    verdicts = pads.dataset(root / "verdicts", partitioning="hive").to_table().to_pandas()
    assert len(verdicts) == len(rows)
    assert set(verdicts["valid"]) == {"true"}
    # Nothing half-made is left beside the partitions (a publisher's lock is not).
    assert not [p for p in root.rglob(".*") if p.suffix != ".lock"]


def test_concurrent_publishers_of_one_partition_leave_one_whole(tmp_path):
    """A campaign re-checked twice at once: each publisher swaps in a whole
    partition of its own, under its own scratch names; none is half-made."""
    import threading
    results = tmp_path / "results"
    doc, entries, rows = nights(results)[0]
    versions = [rows.assign(seconds=float(i)) for i in range(8)]
    errors: list[BaseException] = []

    def publish(table: pd.DataFrame) -> None:
        try:
            publish_campaign(results, doc, entries, table)
        except BaseException as e:   # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=publish, args=(v,)) for v in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    root = results / DATASET_DIR
    table = pads.dataset(root / "verdicts", format="parquet", partitioning="hive"
                         ).to_table().to_pandas()
    assert len(table) == len(rows) and table["seconds"].nunique() == 1
    assert not [p for p in root.rglob(".*") if p.suffix != ".lock"]


def readme_query() -> str:
    text = CAMPAIGNS_DOC.read_text()
    (block,) = re.findall(r"```sql\n(.*?)```", text, flags=re.S)
    assert "results/dataset/verdicts" in block
    return "\n".join(ln for ln in block.splitlines() if not ln.startswith("--"))


@pytest.mark.slow
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_the_readme_query_gives_detection_per_switch_per_week(tmp_path):
    from checkers.spark.session import spark_session
    results = tmp_path / "results"
    for doc, entries, rows in nights(results):
        root = publish_campaign(results, doc, entries, rows)
    spark = spark_session("local[1]")
    try:
        spark.read.parquet(str(root / "verdicts")).createOrReplaceTempView("verdicts")
        got = [tuple(r) for r in spark.sql(readme_query()).collect()]
    finally:
        spark.stop()
    assert [(s, w.isoformat(), n, c) for s, w, n, c in got] == [
        ("commit-dirty", "2026-11-16", 1, 1),
        ("commit-dirty", "2026-11-23", 2, 1),
        ("no-pre-vote", "2026-11-16", 3, 2),
    ]
