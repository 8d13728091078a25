"""Workloads that look where bugs leave marks: list-append and rw-register
runs read single keys alone (the raft client sends them down the node's
linearizable get, not through a transaction), and final reads ask every
node. Twins: a stale single-key read is an Elle anomaly, a fresh one is not."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from checkers import elle
from checkers.datatypes import is_single_key_read
from checkers.history import Op
from workloads import list_append, rw_register
from workloads.clients.raft import RaftClient
from workloads.ops import OpSpec, on_every_node

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import History  # noqa: E402


def single_read_share(workload, options: dict) -> float:
    ops = workload.generate(random.Random(3), options)
    drawn = [next(ops) for _ in range(4000)]
    return sum(is_single_key_read(op.value) for op in drawn) / len(drawn)


def test_list_append_and_rw_register_read_single_keys_by_default():
    for workload in (list_append, rw_register):
        with_reads = single_read_share(workload, {})
        without = single_read_share(workload, {"single_key_reads": 0})
        # A one-read transaction also comes out of the 1-4 micro-op draw.
        assert with_reads - without > 0.15, workload.NAME
        assert single_read_share(workload, {"single_key_reads": 1}) == 1.0


def test_a_single_key_read_is_the_nodes_get_and_reads_back_as_a_txn():
    op = Op(0, 0, 0, "invoke", "txn", [["r", 7, None]])
    lists = RaftClient(list_append.NAME, {}, {})
    assert lists.request(op) == {"op": "get", "key": "7"}
    assert lists.ok_value(op, {"ok": True, "value": [1, 2]}) == [["r", 7, [1, 2]]]
    assert lists.ok_value(op, {"ok": True, "value": None}) == [["r", 7, []]]
    registers = RaftClient(rw_register.NAME, {}, {})
    assert registers.ok_value(op, {"ok": True, "value": None}) == [["r", 7, None]]
    # More than one micro-op stays a transaction.
    two = Op(0, 0, 0, "invoke", "txn", [["r", 7, None], ["append", 7, 3]])
    assert lists.request(two)["op"] == "txn"


def test_final_reads_ask_every_node():
    reads = [OpSpec("read", None, "r0"), OpSpec("read", None, "r1")]
    asked = on_every_node(reads, ["n1", "n2", "n3"])
    assert len(asked) == 6
    assert {(r.key, r.node) for r in asked} == {(k, n) for k in ("r0", "r1")
                                               for n in ("n1", "n2", "n3")}


def appended_then_read(seen: list[int]) -> History:
    h = History()
    h.txn(1, [["append", "k", 1]])
    h.txn(2, [["append", "k", 2]])
    h.txn(3, [["r", "k", seen]])        # a single-key read, after both appends returned
    h.txn(4, [["r", "k", [1, 2]]])
    return h


def test_twins_a_stale_single_key_read_is_an_anomaly_a_fresh_one_is_not():
    assert elle.check(appended_then_read([1, 2]).ops)["valid"] is True
    stale = elle.check(appended_then_read([1]).ops)
    assert stale["valid"] is False
    assert stale["anomalies"]
