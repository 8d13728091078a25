"""What the Elle checkers report, field by field, through their public entry
points (`checkers.elle.check`, `checkers.elle.rw_register.check`): the
anomalies named with their keys, elements and txns; the cycles proven when the
search runs out of time, with the families and models they rule out; keys and
elements that are not scalars. Written for mutants that survived the suite."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from checkers import elle
from checkers.elle import rw_register

sys.path.insert(0, str(Path(__file__).parent))
from test_elle_anomalies import History  # noqa: E402
from test_elle_rw_register import History as RegisterHistory  # noqa: E402


def ref(process: int, invoke: int, completion: int | None, status: str = "ok") -> dict:
    return {"process": process, "invoke": invoke, "completion": completion, "status": status}


def cycle_proofs(v: dict) -> list[dict]:
    return [a for a in v["anomalies"] if a["type"] == "cycle-exists"]


def test_a_wr_cycle_of_six_proven_without_a_search_names_five_of_its_txns():
    h = History()
    keys = "abcdef"
    h.concurrent(*[(i, [["append", keys[i], 1], ["r", keys[(i + 1) % 6], [1]]])
                   for i in range(6)])
    v = elle.check(h.ops, cycle_search_budget_s=0)
    assert v["valid"] is False
    assert cycle_proofs(v) == [{
        "type": "cycle-exists",
        "models": ["read-committed", "snapshot-isolation", "repeatable-read", "serializable",
                   "strict-serializable"],
        "component_size": 6, "families": ["G1c"],
        "txns": [ref(i, i, 6 + i) for i in range(5)],
        "explanation": (
            "The cycle search ran out of time, but 6 txns (among them those invoked at ops "
            "0, 1, 2, 3, 4) are strongly connected by ww/wr/rw/process/realtime edges, so a "
            "cycle of them exists (G1c), which read-committed, snapshot-isolation, "
            "repeatable-read, serializable, strict-serializable prohibit.")}]
    # The same txns without the cycle: nothing to prove.
    h = History()
    h.concurrent(*[(i, [["append", keys[i], 1], ["r", keys[(i + 1) % 6], [1] if i < 5 else []]])
                   for i in range(6)])
    assert cycle_proofs(elle.check(h.ops, cycle_search_budget_s=0)) == []


def test_a_cycle_only_realtime_and_process_edges_close_is_proven_for_strict_serializable():
    # T3 reads x before T1's append and appends y after T2 read it empty; T1
    # then T2 run in order on process 1: T1 -process-> T2 -rw-> T3 -rw-> T1.
    h = History()
    h.invoke(3, [["r", "x", None], ["append", "y", 1]])   # op 0
    h.txn(1, [["append", "x", 1]])                         # ops 1, 2
    h.txn(1, [["r", "y", []]])                             # ops 3, 4
    h.ok(3)                                                # op 5
    v = elle.check(h.ops, cycle_search_budget_s=0)
    assert cycle_proofs(v) == [{
        "type": "cycle-exists", "models": ["strict-serializable"], "component_size": 3,
        "families": ["G-single", "G2-item", "G-single-process", "G2-item-process",
                     "G-single-realtime", "G2-item-realtime"],
        "txns": [ref(3, 0, 5), ref(1, 1, 2), ref(1, 3, 4)],
        "explanation": (
            "The cycle search ran out of time, but 3 txns (among them those invoked at ops "
            "0, 1, 3) are strongly connected by ww/wr/rw/process/realtime edges, so a cycle "
            "of them exists (G-single or G2-item or G-single-process or G2-item-process or "
            "G-single-realtime or G2-item-realtime), which strict-serializable prohibits.")}]
    # On two processes with T2 overlapping T1, no process or realtime edge closes it.
    h = History()
    h.invoke(3, [["r", "x", None], ["append", "y", 1]])
    h.invoke(1, [["append", "x", 1]])
    h.invoke(2, [["r", "y", []]])
    h.ok(1)
    h.ok(2)
    h.ok(3)
    assert cycle_proofs(elle.check(h.ops, cycle_search_budget_s=0)) == []


def test_a_read_skew_component_has_both_wr_and_rw_families():
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "z", 1]]),
                 (2, [["r", "x", [1]], ["r", "z", []]]))
    [proof] = cycle_proofs(elle.check(h.ops, cycle_search_budget_s=0))
    assert proof["families"] == ["G1c", "G-single", "G2-item"]
    # Snapshot isolation forbids only G-single, which a component over rw edges
    # does not prove (it may be a G2-item cycle): the proof leaves SI out.
    assert proof["models"] == ["repeatable-read", "serializable", "strict-serializable"]


def test_aborted_read_names_key_element_reader_and_failed_writer():
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.fail(1)
    h.txn(2, [["r", "x", [1]]])
    v = elle.check(h.ops)
    assert v["anomalies"] == [{
        "type": "G1a", "key": "x", "element": 1, "reader": ref(2, 2, 3),
        "writer": ref(1, 0, 1, "fail"),
        "explanation": (
            "The txn by process 2, invoked at op 2, ok at op 3: [r 'x' [1]] read key 'x' as "
            "[1], including 1, which was appended by the failed txn by process 1, invoked at "
            "op 0, fail at op 1: [append 'x' 1].")}]


def test_aborted_reads_each_failed_element_once_in_order():
    h = History()
    h.invoke(1, [["append", "x", 10], ["append", "x", 9]])
    h.fail(1)
    h.txn(2, [["r", "x", [10, 9]]])
    v = elle.check(h.ops)
    assert [(a["type"], a["element"]) for a in v["anomalies"]] == [("G1a", 10), ("G1a", 9)]


def test_list_append_internal_anomaly_in_full():
    h = History()
    h.txn(1, [["append", "x", 1], ["r", "x", [2]]])
    assert elle.check(h.ops)["anomalies"] == [{
        "type": "internal", "key": "x", "read": [2], "txn": ref(1, 0, 1),
        "explanation": (
            "The txn by process 1, invoked at op 0, ok at op 1: [append 'x' 1, r 'x' [2]] "
            "read key 'x' as [2], but given its own earlier reads and appends it should have "
            "read a list ending in [1].")}]


def test_register_internal_and_duplicate_write_in_full():
    h = RegisterHistory()
    h.txn(1, [["w", "x", 1], ["r", "x", 2]])
    assert rw_register.check(h.ops)["anomalies"] == [{
        "type": "internal", "key": "x", "read": 2, "expected": 1, "txn": ref(1, 0, 1),
        "explanation": (
            "The txn by process 1, invoked at op 0, ok at op 1: [w 'x' 1, r 'x' 2] read key "
            "'x' = 2, but its own earlier read or write left it 1.")}]
    h = RegisterHistory()
    h.txn(1, [["w", "x", 1]])
    h.txn(2, [["w", "x", 1]])
    v = rw_register.check(h.ops)
    assert v["valid"] == "unknown"
    assert v["anomalies"] == [{
        "type": "duplicate-write", "key": "x", "value": 1, "txns": [ref(1, 0, 1), ref(2, 2, 3)],
        "explanation": (
            "Key 'x' was set to 1 by the txn by process 1, invoked at op 0, ok at op 1: "
            "[w 'x' 1] and by the txn by process 2, invoked at op 2, ok at op 3: [w 'x' 1]; "
            "values must be unique per key to tell which write a read saw, so this history "
            "cannot be judged.")}]


def test_list_keys_and_elements_are_compared_by_content():
    h = History()
    h.txn(1, [["append", ["k", 1], [1, 2]]])
    h.txn(2, [["r", ["k", 1], [[1, 2]]]])
    h.txn(2, [["r", ["k", 1], ([1, 2],)]])
    assert elle.check(h.ops)["valid"] is True
    # A nested element appended by a failed txn and read: G1a, naming it.
    h = History()
    h.invoke(1, [["append", ["k", 1], [1, 2]]])
    h.fail(1)
    h.txn(2, [["r", ["k", 1], [[1, 2]]]])
    [a] = json.loads(json.dumps(elle.check(h.ops)["anomalies"]))  # as verdicts.json has it
    assert (a["type"], a["key"], a["element"]) == ("G1a", ["k", 1], [1, 2])


def test_elements_that_cannot_be_compared_leave_their_txn_out_by_name():
    h = History()
    h.txn(1, [["append", "x", {"a": 1}]])
    h.txn(2, [["append", "x", 1]])
    h.txn(3, [["r", "x", [{"a": 1}]]])
    v = elle.check(h.ops)
    assert v["valid"] == "unknown"
    assert v["anomalies"] == [
        {"type": "malformed-txn", "op": 0, "explanation": (
            "The txn invoked at op 0 was left out: appended element {'a': 1} cannot be "
            "compared.")},
        {"type": "malformed-txn", "op": 4, "explanation": (
            "The txn invoked at op 4 was left out: element read {'a': 1} cannot be "
            "compared.")}]
