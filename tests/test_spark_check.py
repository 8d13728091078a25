"""`faultline check` through a real local Spark session."""

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checking import check_run_dir
from harness.cli import main
from harness.importing import import_history
from harness.spark.session import java_missing

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "porcupine"
if not CORPUS.exists():
    CORPUS = Path("/work/shared/corpus/porcupine")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(java_missing() is not None, reason="Java is not installed"),
              pytest.mark.skipif(not CORPUS.exists(), reason="shared corpus not found")]

MODELS = {"etcd-cas-register": ("porcupine-etcd", "cas-register"),
          "kv-append-by-key": ("porcupine-kv", "kv")}


def manifest():
    with open(CORPUS / "MANIFEST.tsv") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def import_corpus(results, rows):
    dirs = {}
    for row in rows:
        fmt, model = MODELS[row["model"].split("(")[0]]
        d = import_history(CORPUS / row["subdir"] / row["file"], results, fmt,
                           ["linearizability"], model)
        dirs[d] = row["expected"]
    return dirs


def test_spark_agrees_with_manifest_and_in_process(tmp_path):
    rows = manifest()
    results = tmp_path / "results"
    dirs = import_corpus(results, rows)
    assert len(dirs) == 108
    code = main(["check", "--results", str(results)])
    assert code == 1  # the corpus has illegal histories
    spark_verdicts = {}
    for d, expected in dirs.items():
        doc = json.loads((d / "verdicts.json").read_text())
        spark_verdicts[d] = doc["valid"]
        assert doc["valid"] is (expected == "ok"), (d, expected)
    # The same runs checked in-process give the same verdicts.
    for d in dirs:
        assert check_run_dir(d)["valid"] == spark_verdicts[d]
    table = pq.read_table(results / "verdicts.parquet").to_pandas()
    assert set(table.columns) >= {"run", "checker", "key", "valid", "anomaly_count", "seconds"}
    assert table["run"].nunique() == 108
    # Re-running is idempotent: same rows, parquet caches reused.
    before = {d: (d / "history.parquet").stat().st_mtime_ns for d in dirs}
    assert main(["check", "--results", str(results)]) == 1
    again = pq.read_table(results / "verdicts.parquet").to_pandas()
    assert len(again) == len(table)
    assert before == {d: (d / "history.parquet").stat().st_mtime_ns for d in dirs}
