"""A results dir for the browser's tests: two nights of one campaign (20 runs
and 6), each run a small register history judged by the real checkers (their
report and counterexample pages), and both nights published to the dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from checkers.history import NEMESIS, Op
from checkers.spark.ops_table import cached_parquet
from harness.campaign.store import CAMPAIGN_JSON, RUNS_JSON, campaign_dir
from harness.report.views import judge
from harness.results.dataset import publish_campaign
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter

S = 1_000_000_000


def register_run(results: Path, seed: int, stale: bool, bugs: list[str], campaign: dict
                 ) -> Path:
    """n1 cut off at 4 s; a write through n3 at 4.5 s; at 5 s a read through n1
    returns the value before it if `stale` (not linearizable), the new one if not."""
    ops = [(int(0.1 * S), 0, "invoke", "write", 1, "n1"), (int(0.2 * S), 0, "ok", "write", 1, "n1"),
           (int(4.0 * S), NEMESIS, "invoke", "partition", {"shape": "isolate-one",
                                                           "nodes": ["n1"]}, None),
           (int(4.01 * S), NEMESIS, "info", "partition", {
               "shape": "isolate-one", "nodes": ["n1"],
               "cut": [["n1", "n2"], ["n1", "n3"], ["n2", "n1"], ["n3", "n1"]]}, None),
           (int(4.5 * S), 1, "invoke", "write", 2, "n3"), (int(4.6 * S), 1, "ok", "write", 2, "n3"),
           (int(5.0 * S), 2, "invoke", "read", None, "n1"),
           (int((5.1 + seed / 100) * S), 2, "ok", "read", 1 if stale else 2, "n1"),
           (int(6.0 * S), NEMESIS, "invoke", "heal", None, None),
           (int(6.01 * S), NEMESIS, "info", "heal", {"healed": []}, None)]
    run_dir = create_run_dir(results)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for i, (t, p, typ, f, v, node) in enumerate(ops):
            w.append(Op(i, t, p, typ, f, v, None, node))
    schedule = [{"time": int(4.0 * S), "f": "partition",
                 "label": "partition: cut n1 (isolate-one)"},
                {"time": int(6.0 * S), "f": "heal", "label": "heal"}]
    if seed % 2:
        schedule.insert(1, {"time": int(5.0 * S), "f": "kill", "label": "kill n2"})
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "nodes": {n: {} for n in ("n1", "n2", "n3")}, "campaign": campaign,
        "schedule": schedule,
        "config": {"db": "raft", "workload": "register", "nodes": 3, "seed": seed,
                   "nemesis": ["partition", "kill"], "bugs": bugs, "time_limit": 6.0}}))
    judge(run_dir)
    cached_parquet(run_dir)
    return run_dir


def night(results: Path, cid: str, created: str, runs: int, stale_every: int) -> list[Path]:
    """A checked campaign named "nightly": every `stale_every`-th run has the
    switch on and reads stale."""
    cdir = campaign_dir(results, cid)
    cdir.mkdir(parents=True)
    entries, rows, dirs = [], [], []
    for i in range(runs):
        bad = i % stale_every == 0
        bugs = ["no-pre-vote"] if bad else []
        d = register_run(results, i + 1, bad, bugs, {"id": cid, "index": i})
        verdicts = json.loads((d / "verdicts.json").read_text())
        entries.append({"index": i, "label": f"raft register seed {i + 1}", "run_id": d.name,
                        "run_dir": str(d), "status": "complete",
                        "verdict": verdicts["valid"], "exit_code": 1 if bad else 0,
                        "config": {"db": "raft", "workload": "register", "seed": i + 1,
                                   "nemesis": ["partition", "kill"], "bugs": bugs}})
        for checker, v in verdicts["checkers"].items():
            valid = {True: "true", False: "false"}.get(v["valid"], "unknown")
            rows.append({"run": d.name, "checker": checker, "key": None, "valid": valid,
                         "anomaly_count": len(v.get("anomalies") or []), "seconds": 0.1,
                         "verdict_json": "{}"})
        dirs.append(d)
    doc = {"id": cid, "name": "nightly", "created": created}
    (cdir / CAMPAIGN_JSON).write_text(json.dumps(doc))
    (cdir / RUNS_JSON).write_text(json.dumps(entries))
    publish_campaign(results, doc, entries, pd.DataFrame(rows))
    return dirs


def two_nights(results: Path) -> tuple[list[Path], list[Path]]:
    first = night(results, "20261124T010000.000000Z-aaaaaa", "2026-11-24T01:00:00+00:00",
                  runs=6, stale_every=3)
    second = night(results, "20261125T010000.000000Z-bbbbbb", "2026-11-25T01:00:00+00:00",
                   runs=20, stale_every=4)
    return first, second
