"""The smoke campaign end to end: 3 real raft runs, two at a time, one Spark
check over all of them, the gate on the campaign, and a resume that re-runs
only the run that did not complete."""

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from checkers.spark.session import java_missing
from harness.campaign.runner import exit_code_of
from harness.cli import main
from harness.results.store import RUN_ID

SMOKE = Path(__file__).resolve().parents[2] / "campaigns" / "smoke.toml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
    pytest.mark.skipif(java_missing() is not None, reason="Spark needs Java"),
]


def read(path):
    return json.loads(Path(path).read_text())


def run_dirs(results):
    # Beside the runs: campaigns/ and the campaigns' dataset/.
    return sorted(p.name for p in results.iterdir() if RUN_ID.fullmatch(p.name) and p.is_dir())


def test_smoke_campaign_checked_gated_and_resumed(tmp_path, capsys):
    results = tmp_path / "results"
    code = main(["campaign", str(SMOKE), "--parallel", "2", "--results", str(results)])
    err = capsys.readouterr().err
    (cdir,) = list((results / "campaigns").iterdir())

    # every run ran, completed, and knows its campaign
    entries = read(cdir / "runs.json")
    assert [e["index"] for e in entries] == [0, 1, 2]
    for e in entries:
        assert e["status"] == "complete", e
        assert e["verdict"] in ("valid", "invalid", "unknown")
        assert read(Path(e["run_dir"]) / "run.json")["campaign"] == {
            "id": cdir.name, "index": e["index"], "label": e["label"]}
    assert len(run_dirs(results)) == 3
    assert "run 1 of 3 started" in err and "(3/3 done)" in err

    # one Spark check: the verdict table covers all three runs
    table = pq.read_table(cdir / "verdicts.parquet").to_pandas()
    assert set(table["run"]) == {e["run_id"] for e in entries}
    # ...and is published into the dataset, partitioned by campaign and date.
    (part,) = (results / "dataset" / "verdicts").glob(f"campaign={cdir.name}/date=*")
    published = pq.read_table(part / "verdicts.parquet").to_pandas()
    assert set(published["run"]) == set(table["run"]) and len(published) == len(table)
    assert set(published["label"]) == {e["label"] for e in entries}
    histories = results / "dataset" / "histories" / f"campaign={cdir.name}" / part.name
    assert sorted(p.stem for p in histories.glob("*.parquet")) == sorted(table["run"].unique())
    summary = read(cdir / "summary.json")
    assert sum(summary["counts"].values()) == 3 and summary["counts"]["error"] == 0
    assert len(summary["invalid_runs"]) == summary["counts"]["invalid"]
    assert all(r["anomaly"] for r in summary["invalid_runs"])
    assert code == exit_code_of(summary["counts"])
    assert "campaign smoke" in (cdir / "summary.txt").read_text()

    # the gate agrees with the verdicts and writes one testcase per run x checker
    junit = tmp_path / "gate.xml"
    gate_code = main(["gate", cdir.name, "--results", str(results), "--junit", str(junit)])
    documents = [read(Path(e["run_dir"]) / "verdicts.json") for e in entries]
    checks = [v["valid"] for d in documents for v in d["checkers"].values()]
    expected = 1 if False in checks else 2 if "unknown" in checks else 0
    assert gate_code == expected
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("tests")) == len(checks)
    assert int(suite.get("failures")) == checks.count(False)
    assert {t.get("classname") for t in suite.findall("testcase")} == \
        {e["run_id"] for e in entries}

    # a run the campaign lost mid-way (as if killed): resume re-runs only it
    before = run_dirs(results)
    lost = Path(entries[1]["run_dir"])
    doc = read(lost / "run.json")
    doc["status"] = "running"
    (lost / "run.json").write_text(json.dumps(doc))
    main(["campaign", "--resume", cdir.name, "--results", str(results)])
    err = capsys.readouterr().err
    assert "2 of 3 runs complete, 1 to run" in err
    after = read(cdir / "runs.json")
    assert after[0]["run_dir"] == entries[0]["run_dir"]
    assert after[2]["run_dir"] == entries[2]["run_dir"]
    assert after[1]["run_dir"] != entries[1]["run_dir"] and after[1]["status"] == "complete"
    assert after[1]["previous_attempts"][0]["run_dir"] == str(lost)
    assert len(set(run_dirs(results)) - set(before)) == 1
    table = pq.read_table(cdir / "verdicts.parquet").to_pandas()
    assert after[1]["run_id"] in set(table["run"])
