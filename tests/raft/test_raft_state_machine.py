import pytest

from nodes.raft.requests import BadRequest, command_for
from nodes.raft.state_machine import Outcome, StateMachine


def test_put_get_and_overwrite():
    sm = StateMachine()
    assert sm.query({"op": "get", "key": "x"}) == Outcome(True, None)
    assert sm.apply({"op": "put", "key": "x", "value": 1, "rid": 5}).ok
    sm.apply({"op": "put", "key": "x", "value": [2]})
    assert sm.query({"op": "get", "key": "x"}).value == [2]


def test_cas():
    sm = StateMachine()
    assert sm.apply({"op": "cas", "key": "k", "expect": None, "value": 1}).ok
    miss = sm.apply({"op": "cas", "key": "k", "expect": 5, "value": 9})
    assert miss == Outcome(False, error="cas_mismatch")
    assert sm.query({"op": "get", "key": "k"}).value == 1
    assert sm.apply({"op": "cas", "key": "k", "expect": 1, "value": 2}).ok
    assert sm.kv["k"] == 2


def test_txn_appends_and_reads_see_own_writes():
    sm = StateMachine()
    out = sm.apply(
        {"op": "txn", "ops": [["r", "a", None], ["append", "a", 1], ["append", "b", 2],
                              ["r", "a", None], ["append", "a", 3], ["r", "a", None]]}
    )
    assert out.ok
    assert out.value == [["r", "a", []], ["append", "a", 1], ["append", "b", 2],
                         ["r", "a", [1]], ["append", "a", 3], ["r", "a", [1, 3]]]
    assert sm.kv == {"a": [1, 3], "b": [2]}
    # returned reads are snapshots, not views into the state
    out.value[5][2].append(99)
    assert sm.kv["a"] == [1, 3]


def test_txn_is_atomic():
    sm = StateMachine()
    sm.apply({"op": "put", "key": "scalar", "value": 7})
    out = sm.apply({"op": "txn", "ops": [["append", "a", 1], ["append", "scalar", 2]]})
    assert out == Outcome(False, error="type_mismatch")
    assert "a" not in sm.kv and sm.kv["scalar"] == 7
    out = sm.apply({"op": "txn", "ops": [["append", "a", 1], ["delete", "a", 2]]})
    assert not out.ok and "a" not in sm.kv


def test_register_txn_micro_ops():
    sm = StateMachine()
    out = sm.apply({"op": "txn", "ops": [["get", "x", None], ["w", "x", 1], ["get", "x", None]]})
    assert out == Outcome(True, [["get", "x", None], ["w", "x", 1], ["get", "x", 1]])
    assert sm.kv["x"] == 1
    # a list read of a register is refused whole, not a crash of every replica
    out = sm.apply({"op": "txn", "ops": [["w", "y", 2], ["r", "x", None]]})
    assert out == Outcome(False, error="type_mismatch") and "y" not in sm.kv


def test_named_logs_offsets_and_range_reads():
    sm = StateMachine()
    assert [sm.apply({"op": "append", "log": "q", "value": v}).value for v in "abc"] == [0, 1, 2]
    assert sm.apply({"op": "append", "log": "other", "value": "z"}).value == 0
    read = sm.query({"op": "read", "log": "q", "from": 1, "count": 10})
    assert read.value == [[1, "b"], [2, "c"]]
    assert sm.query({"op": "read", "log": "q", "from": 0, "count": 2}).value == [[0, "a"], [1, "b"]]
    assert sm.query({"op": "read", "log": "q", "from": 5, "count": 2}).value == []
    assert sm.query({"op": "read", "log": "none", "from": 0, "count": 2}).value == []


def test_markers_and_malformed_commands_change_nothing():
    sm = StateMachine()
    assert sm.apply({"op": "leader_change", "leader": "n1", "epoch": 2}).ok
    assert sm.apply({"op": "read_barrier", "rid": 1}).ok
    assert sm.apply({"op": "nope"}) == Outcome(False, error="bad_command")
    assert sm.apply({"op": "put"}) == Outcome(False, error="bad_command")
    assert sm.apply({"op": "txn", "ops": 5}) == Outcome(False, error="bad_command")
    assert sm.kv == {} and sm.logs == {}


def test_replicas_applying_the_same_commands_agree():
    commands = [{"op": "put", "key": f"k{i % 3}", "value": i} for i in range(10)]
    commands += [{"op": "cas", "key": "k0", "expect": 9, "value": 100}]
    commands += [{"op": "append", "log": "l", "value": i} for i in range(4)]
    a, b = StateMachine(), StateMachine()
    assert [a.apply(c) for c in commands] == [b.apply(c) for c in commands]
    assert (a.kv, a.logs) == (b.kv, b.logs)


def test_requests_become_commands():
    assert command_for({"op": "get", "key": "x"}) == {"op": "read_barrier"}
    assert command_for({"op": "read", "log": "l", "from": 0, "count": 3}) == {"op": "read_barrier"}
    assert command_for({"op": "put", "key": "x", "value": None, "id": 1}) == {
        "op": "put", "key": "x", "value": None}
    assert command_for({"op": "cas", "key": "x", "expect": 1, "value": 2})["expect"] == 1
    assert command_for({"op": "txn", "ops": [["append", "a", 1], ["r", "a", None]]})["op"] == "txn"
    assert command_for({"op": "append", "log": "l", "value": 3}) == {
        "op": "append", "log": "l", "value": 3}


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"op": "drop_table"},
        {"op": 5},
        {"op": "get"},
        {"op": "get", "key": 5},
        {"op": "put", "key": "x"},
        {"op": "cas", "key": "x", "value": 1},
        {"op": "txn", "ops": "nope"},
        {"op": "txn", "ops": [["append", "a"]]},
        {"op": "txn", "ops": [["delete", "a", 1]]},
        {"op": "txn", "ops": [["r", 3, None]]},
        {"op": "read", "log": "l", "from": -1, "count": 1},
        {"op": "read", "log": "l", "from": True, "count": 1},
        {"op": "read", "log": "l", "from": 0, "count": 10**9},
        {"op": "append", "log": ["l"], "value": 1},
    ],
)
def test_bad_requests_are_refused(request_):
    with pytest.raises(BadRequest):
        command_for(request_)
