"""A real register run on our raft store with its companion workload
(workloads/companion.py): the history holds both kinds of ops, each tagged,
the companion's keys get final reads from every node, each checker judged its
own workload's ops, and the correct build comes out valid."""

import json
import os
from collections import Counter

import pytest

from checkers.checker import is_companion_key
from checkers.history import read_history, validate
from harness.cli import main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


def test_a_register_run_also_issues_and_judges_list_append_txns(tmp_path):
    results = tmp_path / "results"
    code = main(["run", "--db", "raft", "--workload", "register", "--nodes", "3",
                 "--nemesis", "partition,kill", "--time-limit", "15", "--nemesis-interval", "4",
                 "--rate", "100", "--recovery-time", "3", "--seed", "3",
                 "--companion-ops", "0.2", "--results", str(results)])
    (run_dir,) = list(results.iterdir())
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "complete"
    assert doc["config"]["companion"] == "list-append"
    history = read_history(run_dir / "history.msgpack")
    assert history.warnings == [] and validate(history.ops) == []
    client = [op for op in history.ops if op.process != "nemesis"]
    kinds = Counter((op.workload, op.f) for op in client if op.type == "invoke")
    assert {(None, "read"), (None, "write"), ("list-append", "txn")} <= set(kinds)
    assert {f for w, f in kinds if w is None} <= {"read", "write", "cas"}
    assert {f for w, f in kinds if w == "list-append"} == {"txn"}
    # Keys never meet: the companion's all in its namespace, the main's none.
    assert all(is_companion_key("list-append", k) for op in client if op.workload
               for _, k, _ in op.value)
    assert not any(is_companion_key("list-append", op.key) for op in client if not op.workload)
    # The companion's keys were read at the end, from every node: the final
    # reads are the run's last invokes.
    asked = doc["final_reads"]["asked"]
    final = [op for op in client if op.type == "invoke"][-asked:]
    assert {op.node for op in final if op.workload == "list-append"} == {"n1", "n2", "n3"}
    assert all(mf == "r" for op in final if op.workload for mf, _, _ in op.value)
    read = {k for op in final if op.workload for _, k, _ in op.value}
    assert read == {k for op in client if op.workload for _, k, _ in op.value}
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    elle, lin = verdicts["checkers"]["elle"], verdicts["checkers"]["linearizability"]
    assert elle["stats"]["workload"] == "list-append" and lin["stats"]["workload"] == "register"
    assert elle["valid"] is True, elle["anomalies"][:3]
    assert lin["valid"] is True, lin["anomalies"][:3]
    assert verdicts["valid"] is True and code == 0
