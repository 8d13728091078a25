"""`faultline run --workload rw-register` end to end on our raft store and on
etcd, under partitions and kills: the correct builds must come out valid, and
the checker must have had something to judge (issue 16)."""

import json
import os

import pytest

from checkers.history import read_history, validate
from harness.cli import main
from nodes.etcd.db import INSTALL_HINT, EtcdDB

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


def run(tmp_path, *args):
    results = tmp_path / "results"
    code = main(["run", "--workload", "rw-register", "--nodes", "3",
                 "--results", str(results), *args])
    (run_dir,) = list(results.iterdir())
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "complete"
    history = read_history(run_dir / "history.msgpack")
    assert history.warnings == [] and validate(history.ops) == []
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    return code, history.ops, verdicts


def faults(ops):
    return {op.f for op in ops if op.process == "nemesis" and op.error is None}


def judged_something(rw):
    stats = rw["stats"]
    assert stats["txn_status"].get("ok", 0) > 100
    # reads named writes, and versions were ordered: the graph is not empty
    assert stats["edges"].get("wr", 0) > 50 and stats["edges"].get("rw", 0) > 50
    assert "linearizable-keys" in stats["version_sources"]


def test_raft_rw_register_under_partitions_and_kills(tmp_path):
    code, ops, verdicts = run(tmp_path, "--db", "raft", "--concurrency", "5", "--rate", "100",
                              "--recovery-time", "3", "--nemesis", "partition,kill",
                              "--time-limit", "20", "--nemesis-interval", "2", "--seed", "3")
    assert {"partition", "kill"} <= faults(ops)
    rw = verdicts["checkers"]["rw-register"]
    judged_something(rw)
    assert rw["valid"] is True, rw["anomalies"][:3]
    assert verdicts["valid"] is True and code == 0


@pytest.mark.skipif(EtcdDB().check_installed() is not None, reason=INSTALL_HINT)
def test_etcd_rw_register_under_partitions_and_kills(tmp_path):
    code, ops, verdicts = run(tmp_path, "--db", "etcd", "--nemesis", "partition,kill,pause",
                              "--time-limit", "30", "--seed", "4")
    assert {"partition", "kill"} <= faults(ops)
    rw = verdicts["checkers"]["rw-register"]
    judged_something(rw)
    assert rw["valid"] is True, rw["anomalies"][:3]
    assert verdicts["valid"] is True and code == 0
