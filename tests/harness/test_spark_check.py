"""`faultline check` through a real local Spark session."""

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from shared_corpus import MISSING_REASON, PORCUPINE

from checkers.history import Op
from checkers.registry import check_loaded
from checkers.registry import read_run_json as read_json
from checkers.rundir import load_run
from checkers.spark.session import JAVA_INSTALL, java_missing
from harness.cli import main
from harness.results.importing import import_history
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter
from workloads.judging import plan_for

CORPUS = PORCUPINE

MODELS = {"etcd-cas-register": ("porcupine-etcd", "cas-register"),
          "kv-append-by-key": ("porcupine-kv", "kv")}
# Two keys of kv/c50-bad.txt exhaust any search budget we can afford (at the
# default 2 GiB each costs over 30 s, both through Spark and in-process); the
# file is illegal by its other keys whatever the budget. A memory budget, unlike
# a deadline, ends the search at the same step every time, so Spark and
# in-process see the same thing.
LIN_OPTIONS = {"memory_limit_mb": 256, "time_limit": None}


def manifest():
    with open(CORPUS / "MANIFEST.tsv") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def import_corpus(results, rows):
    dirs = {}
    for row in rows:
        fmt, model = MODELS[row["model"].split("(")[0]]
        d = import_history(CORPUS / row["subdir"] / row["file"], results, fmt,
                           ["linearizability"], model)
        run = json.loads((d / "run.json").read_text())
        run["config"]["lin_options"] = LIN_OPTIONS
        (d / "run.json").write_text(json.dumps(run))
        dirs[d] = row["expected"]
    return dirs


def only_our_lines(err: str) -> list[str]:
    """stderr lines that are not faultline's own (`check: ...`)."""
    return [ln for ln in err.splitlines() if ln and not ln.startswith("check: ")]


@pytest.mark.slow
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
@pytest.mark.skipif(not CORPUS.exists(), reason=MISSING_REASON)
def test_spark_agrees_with_manifest_and_in_process(tmp_path, capfd):
    rows = manifest()
    results = tmp_path / "results"
    dirs = import_corpus(results, rows)
    assert len(dirs) == 108
    code = main(["check", "--results", str(results)])
    assert code == 1  # the corpus has illegal histories
    # Spark's console noise (JVM warnings, log lines) stays out of the terminal.
    assert only_our_lines(capfd.readouterr().err) == []
    spark_docs = {d: json.loads((d / "verdicts.json").read_text()) for d in dirs}
    for d, expected in dirs.items():
        assert spark_docs[d]["valid"] is (expected == "ok"), (d, expected)
    # The same runs checked in-process give the same verdicts, run by run and
    # checker by checker (in-process gets the same budget from run.json).
    for d in dirs:
        local = check_loaded(load_run(d), plan_for(read_json(d)))
        assert local["valid"] == spark_docs[d]["valid"], d
        assert ({n: v["valid"] for n, v in local["checkers"].items()}
                == {n: v["valid"] for n, v in spark_docs[d]["checkers"].items()}), d
    table = pq.read_table(results / "verdicts.parquet").to_pandas()
    assert set(table.columns) >= {"run", "checker", "key", "valid", "anomaly_count", "seconds"}
    assert table["run"].nunique() == 108
    # Re-checking some runs is idempotent: the table keeps every other run's rows,
    # the re-checked runs get the same rows, their parquet copies are reused.
    again_dirs = sorted(dirs)[:5]
    before = {d: (d / "history.parquet").stat().st_mtime_ns for d in again_dirs}
    all_ok = all(dirs[d] == "ok" for d in again_dirs)
    assert main(["check", *map(str, again_dirs)]) == (0 if all_ok else 1)
    again = pq.read_table(results / "verdicts.parquet").to_pandas()
    cols = ["run", "checker", "key", "valid", "anomaly_count"]
    assert (again[cols].sort_values(cols).reset_index(drop=True)
            .equals(table[cols].sort_values(cols).reset_index(drop=True)))
    assert before == {d: (d / "history.parquet").stat().st_mtime_ns for d in again_dirs}


def tiny_run(results: Path) -> Path:
    run = create_run_dir(results)
    with HistoryWriter(run / "history.msgpack") as w:
        w.append(Op(0, 0, 0, "invoke", "write", 1))
        w.append(Op(0, 1, 0, "ok", "write", 1))
    (run / "run.json").write_text(json.dumps(
        {"run_id": run.name, "config": {"checkers": ["linearizability"]}}))
    return run


@pytest.mark.parametrize("java_home", [None, "bogus"])
def test_check_without_java_says_so_in_one_sentence(tmp_path, monkeypatch, capfd, java_home):
    run = tiny_run(tmp_path / "results")
    # No java on PATH, and JAVA_HOME unset or naming a dir with no bin/java:
    # where Spark's launcher would look.
    monkeypatch.setenv("PATH", str(tmp_path / "no-java-here"))
    if java_home is None:
        monkeypatch.delenv("JAVA_HOME", raising=False)
    else:
        monkeypatch.setenv("JAVA_HOME", str(tmp_path / java_home))
    assert main(["check", str(run)]) == 254
    out, err = capfd.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("faultline: ") and lines[0].endswith(".")
    if java_home is None:
        assert JAVA_INSTALL in lines[0]
    else:
        assert "JAVA_HOME" in lines[0]
    assert not (run / "verdicts.json").exists()


@pytest.mark.slow
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_spark_skips_what_the_system_cannot_feed_like_in_process(tmp_path):
    # A run of a system with no log dumps or event lines (as etcd): both paths
    # must run the same checkers and say which were skipped and why.
    results = tmp_path / "results"
    run_dir = create_run_dir(results)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for i in range(20):
            w.append(Op(0, 4 * i, 0, "invoke", "write", i))
            w.append(Op(0, 4 * i + 1, 0, "ok", "write", i))
            w.append(Op(0, 4 * i + 2, 1, "invoke", "read"))
            w.append(Op(0, 4 * i + 3, 1, "ok", "read", i))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "config": {"db": "etcd", "workload": "register"}}))
    in_process = check_loaded(load_run(run_dir), plan_for(read_json(run_dir)))
    assert main(["check", str(run_dir)]) == 0
    spark = json.loads((run_dir / "verdicts.json").read_text())
    assert spark["coverage"] == in_process["coverage"]
    assert spark["coverage"]["line"].startswith("coverage: 0 faults acted")
    # (artifacts [] as an old run.json: the node-file checkers have nothing either)
    assert set(spark["skipped"]) == {"divergence", "elections", "durability", "invariants",
                                     "durable-epochs",
                                     "node-state", "node-logs", "node-exits",
                                     "read-commit-point"}
    assert spark["skipped"] == in_process["skipped"]
    assert set(spark["checkers"]) == set(in_process["checkers"]) == {
        "stats", "linearizability", "availability"}
    assert spark["valid"] is True and in_process["valid"] is True
    # The pages are made from the verdicts that now stand (finding 4).
    assert "class='word valid'>VALID" in (run_dir / "report.html").read_text()
    assert (run_dir / "linearizability.html").is_file()
