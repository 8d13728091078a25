"""read-behind-commit-point: an ok linearizable read answered by a node whose
commit point (its `hw` lines) was below the highest one any node had
announced before the read began. Pure fixtures; each failing history has a
passing twin that differs in one line or one op."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkers import read_commit_point as rcp
from checkers.anomaly_text import sentence
from checkers.datatypes import LISTS, REGISTERS
from checkers.history import History, Op
from checkers.registry import CHECKS, CLUSTER_CHECKERS, run_check, skipped_checks
from checkers.rundir import Run
from workloads.judging import plan_for

START_NS = 1_000_000  # run.json start_monotonic_ns: history time 0
MS = 1_000_000


def line(t_ms: int, node: str, event: str, **fields: Any) -> dict[str, Any]:
    return {"t": START_NS + t_ms * MS, "node": node, "event": event, **fields}


def start(t_ms: int, node: str, cluster: str = "c1", declared: bool = True) -> dict[str, Any]:
    return line(t_ms, node, "start", epoch=1, log_end=0, cluster_id=cluster,
                **({"hw_before_answers": True} if declared else {}))


def hw(t_ms: int, node: str, value: int) -> dict[str, Any]:
    return line(t_ms, node, "hw", hw=value, epoch=1)


def events(extra: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Three nodes started at -100 ms; n1 announces hw 10 at 100 ms."""
    out = {n: [start(-100, n)] for n in ("n1", "n2", "n3")}
    out["n1"].append(hw(100, "n1", 10))
    out["n2"].append(hw(50, "n2", 5))
    for node, lines in extra.items():
        out[node] = out[node] + lines
    return out


def read(invoke_ms: int, ok_ms: int, node: str | None = "n2", process: int = 0,
         f: str = "read", value: Any = None, key: Any = "k", typ: str = "ok",
         workload: str | None = None) -> list[Op]:
    return [Op(0, invoke_ms * MS, process, "invoke", f, value, key, None, workload=workload),
            Op(1, ok_ms * MS, process, typ, f, value, key, node, workload=workload)]


def check(ops: list[Op], evs: dict[str, list[dict[str, Any]]], **kw: Any) -> dict[str, Any]:
    return rcp.check(ops, evs, START_NS, kw.pop("data", REGISTERS), **kw)


def test_a_read_answered_below_the_announced_commit_point_fails():
    v = check(read(200, 300), events({}))
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert a == {"type": rcp.READ_BEHIND, "process": 0, "key": "k", "f": "read", "index": 0,
                 "invoke_s": 0.2, "complete_s": 0.3, "node": "n2", "node_hw": 5,
                 "announced_hw": 10, "announced_by": "n1", "announced_s": 0.1}
    assert v["stats"]["reads_behind"] == 1
    assert sentence(a) == ("Process 0's read of key k (invoked at 0.2 s, ok at 0.3 s) was "
                           "answered by node n2 at commit point 5, below the 10 node n1 had "
                           "announced before it began.")


def test_a_node_that_caught_up_before_answering_passes():
    v = check(read(200, 300), events({"n2": [hw(250, "n2", 10)]}))
    assert v["valid"] is True and v["stats"]["reads_judged"] == 1


def test_catching_up_only_after_the_completion_does_not_count():
    v = check(read(200, 300), events({"n2": [hw(301, "n2", 10)]}))
    assert v["valid"] is False


def test_a_read_invoked_before_the_higher_commit_point_was_announced_passes():
    assert check(read(90, 300), events({}))["valid"] is True
    # announced at the very invoke time: not before it
    assert check(read(100, 300), events({}))["valid"] is True
    assert check(read(101, 300), events({}))["valid"] is False


def test_the_leader_itself_answering_passes():
    assert check(read(200, 300, node="n1"), events({}))["valid"] is True


def test_a_node_restarted_lower_that_answers_before_learning_fails():
    """n2 knew 10 before it restarted; its new process answers knowing nothing."""
    before = {"n2": [hw(60, "n2", 10), start(150, "n2")]}
    v = check(read(200, 300), events(before))
    assert v["valid"] is False
    assert v["anomalies"][0]["node_hw"] == 0
    # Twin: the same node relearns the commit point before it answers.
    relearned = {"n2": [hw(60, "n2", 10), start(150, "n2"), hw(280, "n2", 10)]}
    assert check(read(200, 300), events(relearned))["valid"] is True


def test_a_restart_inside_the_read_may_have_been_the_old_process_answering():
    """The process that knew 10 was alive when the read began: it may have answered."""
    inside = {"n2": [hw(60, "n2", 10), start(250, "n2")]}
    assert check(read(200, 300), events(inside))["valid"] is True


def test_a_commit_point_that_went_down_does_not_lower_the_announced_one():
    """n1 restarts and announces 3 afterwards: 10 stays announced."""
    v = check(read(200, 300, node="n3"),
              events({"n1": [start(120, "n1"), hw(130, "n1", 3)], "n3": [hw(150, "n3", 4)]}))
    assert v["valid"] is False
    assert (v["anomalies"][0]["announced_hw"], v["anomalies"][0]["node_hw"]) == (10, 4)


def test_a_foreign_clusters_commit_point_is_not_announced():
    """n3 reformatted into another cluster writes hw 50: not this cluster's."""
    foreign = {"n3": [start(110, "n3", cluster="other"), hw(120, "n3", 50)]}
    assert check(read(200, 300, node="n1"), events(foreign))["valid"] is True
    same = {"n3": [start(110, "n3"), hw(120, "n3", 50)]}
    assert check(read(200, 300, node="n1"), events(same))["valid"] is False


def test_reads_of_unknown_nodes_and_unfinished_reads_are_not_judged():
    ops = (read(200, 300, node=None) + read(200, 300, process=1, typ="info")
           + read(200, 300, process=2, typ="fail"))
    v = check(ops, events({}))
    assert v["valid"] is True
    assert v["stats"]["reads_judged"] == 0
    assert v["stats"]["reads_not_judged"] == {"answering node unknown": 1}


def test_a_node_that_wrote_no_line_is_not_judged():
    evs = events({})
    evs["n4"] = []
    v = check(read(200, 300, node="n4"), evs)
    assert v["valid"] is True
    assert v["stats"]["reads_not_judged"] == {"answering node wrote no event line": 1}


def test_writes_are_not_reads():
    assert check(read(200, 300, f="write", value=3), events({}))["valid"] is True


def test_single_key_list_reads_are_judged_and_other_txns_are_not():
    one = [["r", 7, [1, 2]]]
    v = check(read(200, 300, f="txn", value=one, key=None), events({}), data=LISTS)
    assert v["valid"] is False and v["anomalies"][0]["key"] == 7
    two = [["r", 7, [1, 2]], ["r", 8, None]]
    assert check(read(200, 300, f="txn", value=two, key=None), events({}),
                 data=LISTS)["valid"] is True
    assert check(read(200, 300, f="read", value=["log0", 0, 5], key=None), events({}),
                 data="logs")["valid"] is True


def test_a_companion_workloads_reads_are_judged_by_its_own_data_type():
    ops = read(200, 300, workload="register", key="register:k")
    v = check(ops, events({}), data=LISTS, companions={"register": REGISTERS},
              main="list-append")
    assert v["valid"] is False and v["anomalies"][0]["workload"] == "register"
    assert check(ops, events({}), data=LISTS, main="list-append")["valid"] is True
    # A companion of the main workload's own data type, its type not told: not judged.
    assert check(ops, events({}), data=REGISTERS, main="kv")["valid"] is True


def test_a_model_without_real_time_order_judges_no_read():
    v = check(read(200, 300), events({}), realtime=False)
    assert v["valid"] is True
    assert v["stats"]["reads_not_judged"] == {"model binds no real-time order": 1}


def test_a_process_that_does_not_say_its_lines_precede_its_answers_is_not_judged():
    """Before the raft store wrote a ready's lines first (cbf6e05), a correct
    run's reads were answered 0.1-2.7 ms before the hw line they rested on."""
    late = {"n2": [start(150, "n2", declared=False), hw(303, "n2", 10)]}
    v = check(read(200, 300), events(late))
    assert v["valid"] is True and v["stats"]["reads_judged"] == 0
    assert v["stats"]["reads_not_judged"] == {
        "answering process does not say its hw lines precede its answers": 1}
    # Twin: the same process saying so is judged, and behind.
    said = {"n2": [start(150, "n2"), hw(303, "n2", 10)]}
    assert check(read(200, 300), events(said))["valid"] is False


def test_a_run_whose_nodes_never_say_so_is_unknown_unless_assumed():
    evs = {n: [start(-100, n, declared=False)] for n in ("n1", "n2")}
    evs["n1"].append(hw(100, "n1", 10))
    v = check(read(200, 300), evs)
    assert v["valid"] == "unknown" and v["stats"]["reason"] == rcp.UNDECLARED
    assert check(read(200, 300), evs, assume_hw_before_answers=True)["valid"] is False


def test_no_commit_point_lines_is_unknown():
    evs = {n: [start(0, n)] for n in ("n1", "n2")}
    v = check(read(200, 300), evs)
    assert v["valid"] == "unknown" and v["stats"]["reason"] == rcp.NO_HW_LINES
    v = rcp.check(read(200, 300), events({}), None, REGISTERS)
    assert v["valid"] == "unknown" and "start_monotonic_ns" in v["stats"]["reason"]


def test_anomalies_are_capped_with_a_count_of_the_rest():
    ops = [op for p in range(rcp.MAX_ANOMALIES + 5) for op in read(200, 300, process=p)]
    v = check(ops, events({}))
    assert v["valid"] is False and v["stats"]["reads_behind"] == rcp.MAX_ANOMALIES + 5
    assert len(v["anomalies"]) == rcp.MAX_ANOMALIES + 1
    assert v["anomalies"][-1] == {"type": "truncated-list", "rule": rcp.READ_BEHIND,
                                  "omitted": 5}


def run_json(db: str = "raft", workload: str = "register", **config: Any) -> dict[str, Any]:
    artifacts = ["log_dump", "events"] if db == "raft" else []
    return {"config": {"db": db, "workload": workload, **config},
            "start_monotonic_ns": START_NS, "artifacts": artifacts}


def test_every_run_is_judged_through_the_registry_as_directly():
    checker = CHECKS["read-commit-point"]
    assert checker in CLUSTER_CHECKERS and checker.every_workload
    doc = run_json()
    plan = plan_for(doc)
    assert plan["read-commit-point"] == {"data": REGISTERS, "realtime": True}
    ops, evs = read(200, 300), events({})
    v, _ = run_check("read-commit-point", Run(Path("."), doc, History(ops), events=evs),
                     plan["read-commit-point"])
    assert v == check(ops, evs)
    weak = plan_for(run_json(consistency_model="serializable"))["read-commit-point"]
    assert weak["realtime"] is False


@pytest.mark.parametrize("db", ["etcd", "redis"])
def test_a_system_that_writes_no_event_lines_is_skipped_with_the_reason(db):
    doc = run_json(db=db)
    assert skipped_checks(doc, plan_for(doc))["read-commit-point"] == f"{db} leaves no event lines"
