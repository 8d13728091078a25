"""Each workload's ops judged by its own checkers in a run with a companion
workload (workloads/companion.py, docs/workloads.md): a register anomaly in a
list-append run is linearizability's, a transaction anomaly in a register run
Elle's, each verdict naming the workload; the twins pass. A run without a
companion (every saved run before them) is judged as it always was."""

from __future__ import annotations

import msgpack
import pytest

from checkers.checker import APPLIED_STATE, COMPANIONS, LOG_DUMP, OPS_OF, companion_key
from checkers.history import NEMESIS, History, Op
from checkers.registry import check_loaded, ops_of
from checkers.rundir import NODE_STATE, Run
from checkers.verdict import checker_label
from checkers.writes import owners
from workloads.judging import plan_for


class Ops:
    """A history built op by op, each op tagged with the workload that issued it."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, process: int | str, typ: str, f: str, value, key=None,
            workload: str | None = None) -> None:
        self.ops.append(Op(len(self.ops), len(self.ops) * 10, process, typ, f, value, key,
                           workload=workload))

    def done(self, process: int, f: str, invoked, completed, typ: str = "ok", key=None,
             workload: str | None = None) -> None:
        self.add(process, "invoke", f, invoked, key, workload)
        self.add(process, typ, f, completed, key, workload)


def register_ops(h: Ops, workload: str | None = None) -> None:
    """A correct register history on key r0 (in the companion's namespace if it is one)."""
    key = companion_key(workload, "r0") if workload else "r0"
    sign = -1 if workload else 1
    h.done(0, "write", sign * 1, sign * 1, key=key, workload=workload)
    h.done(0, "read", None, sign * 1, key=key, workload=workload)
    h.done(0, "cas", [sign * 1, sign * 2], [sign * 1, sign * 2], key=key, workload=workload)
    h.done(0, "read", None, sign * 2, key=key, workload=workload)


def list_ops(h: Ops, workload: str | None = None) -> None:
    """A correct list-append history on key 1 (in the companion's namespace if it is one)."""
    key = companion_key(workload, 1) if workload else 1
    v = -1 if workload else 1
    h.done(1, "txn", [["append", key, v]], [["append", key, v]], workload=workload)
    h.done(1, "txn", [["r", key, None]], [["r", key, [v]]], workload=workload)


def judged(h: Ops, workload: str, companion: str | None, checkers: list[str]) -> dict:
    config = {"workload": workload, "checkers": checkers,
              **({"companion": companion} if companion else {})}
    run = {"config": config, "artifacts": []}
    return check_loaded(Run(None, run, History(h.ops)), plan_for(run))


def test_a_register_anomaly_in_a_list_append_run_is_linearizabilitys():
    """A cas on a key nobody wrote that succeeds (the unplanted cas-absent-key)."""
    def run(cas_result: str) -> dict:
        h = Ops()
        list_ops(h)
        register_ops(h, "register")
        absent = companion_key("register", "r0-absent")
        h.done(2, "cas", [-7, -8], [-7, -8], typ=cas_result, key=absent, workload="register")
        return judged(h, "list-append", "register", ["elle"])

    bad = run("ok")
    lin = bad["checkers"]["linearizability"]
    assert lin["valid"] is False and lin["stats"]["workload"] == "register"
    assert {a.get("key") for a in lin["anomalies"]} == {companion_key("register", "r0-absent")}
    assert checker_label("linearizability", lin, "list-append") == \
        "linearizability (register ops)"
    assert checker_label("elle", bad["checkers"]["elle"], "list-append") == "elle"
    # Elle judged the list-append ops alone: no cas reached it.
    elle = bad["checkers"]["elle"]
    assert elle["valid"] is True and elle["stats"]["workload"] == "list-append"
    assert bad["valid"] is False
    good = run("fail")
    assert good["checkers"]["linearizability"]["valid"] is True and good["valid"] is True


def test_a_transaction_anomaly_in_a_register_run_is_elles():
    """A transaction that appends then reads its key and misses its own append
    (the unplanted txn-reads-first)."""
    def run(read: list[int]) -> dict:
        h = Ops()
        register_ops(h)
        list_ops(h, "list-append")
        key = companion_key("list-append", 2)
        h.done(3, "txn", [["append", key, -5], ["r", key, None]],
               [["append", key, -5], ["r", key, read]], workload="list-append")
        return judged(h, "register", "list-append", ["linearizability"])

    bad = run([])
    elle = bad["checkers"]["elle"]
    assert elle["valid"] is False and elle["stats"]["workload"] == "list-append"
    assert checker_label("elle", elle, "register") == "elle (list-append ops)"
    lin = bad["checkers"]["linearizability"]
    assert lin["valid"] is True and lin["stats"]["workload"] == "register"
    good = run([-5])
    assert good["checkers"]["elle"]["valid"] is True and good["valid"] is True


def test_the_main_workloads_anomaly_stays_the_main_checkers():
    h = Ops()
    register_ops(h)
    h.done(0, "read", None, 9, key="r0")   # never written
    list_ops(h, "list-append")
    doc = judged(h, "register", "list-append", ["linearizability"])
    assert doc["checkers"]["linearizability"]["valid"] is False
    assert doc["checkers"]["elle"]["valid"] is True


def test_a_run_without_a_companion_is_judged_as_before():
    """No `companion` in run.json (a run of before, or --companion-ops 0): no
    checker is added, none is given `ops_of`, every op is the main's."""
    plan = plan_for({"config": {"workload": "register"}})
    assert "elle" not in plan and all(OPS_OF not in o for o in plan.values())
    h = Ops()
    register_ops(h)
    h.done(0, "read", None, 9, key="r0")
    doc = judged(h, "register", None, ["linearizability"])
    lin = doc["checkers"]["linearizability"]
    assert lin["valid"] is False and "workload" not in lin["stats"]


def test_the_plan_adds_the_companions_own_checkers_once():
    plan = plan_for({"config": {"workload": "register", "companion": "list-append"}})
    assert plan["elle"][OPS_OF] == "list-append"
    assert plan["linearizability"] == {"model": "register-kv", OPS_OF: "register"}
    # durability judges the main workload's data type, told the companion's
    # (whose ops say which committed values are not the main workload's).
    assert plan["durability"]["data"] == "registers"
    assert plan["durability"][COMPANIONS] == {"list-append": "lists"}
    assert all(o[OPS_OF] == "register" for n, o in plan.items()
               if n not in ("elle", "node-state", "durability", "read-commit-point"))
    # node-state judges each workload's keys itself, told the companion's data
    # type; so does read-commit-point each workload's reads.
    for name in ("node-state", "read-commit-point"):
        assert OPS_OF not in plan[name]
        assert plan[name][COMPANIONS] == {"list-append": "lists"}
    assert OPS_OF not in plan["durability"]
    lists = plan_for({"config": {"workload": "list-append", "companion": "register"}})
    assert lists["linearizability"] == {"model": "register-kv", OPS_OF: "register"}


def test_ops_of_keeps_the_nemesis_and_reads_an_untagged_op_as_the_mains():
    ops = [Op(0, 0, 0, "invoke", "read", None, "r0"),
           Op(1, 1, NEMESIS, "info", "kill", None),
           Op(2, 2, 1, "invoke", "txn", [["r", "list-append:1", None]], workload="list-append")]
    assert [o.index for o in ops_of(ops, "register", "register")] == [0, 1]
    assert [o.index for o in ops_of(ops, "list-append", "register")] == [1, 2]


def node_state_of(tmp_path, h: Ops, keys_by_node: dict[str, list], workload: str,
                  companion: str) -> dict:
    """node-state's verdict on nodes holding `keys_by_node` at one position,
    a leader known, in a run of `workload` with `companion`."""
    for node, keys in keys_by_node.items():
        d = tmp_path / "nodes" / node
        d.mkdir(parents=True)
        (d / NODE_STATE).write_bytes(msgpack.packb({"position": 9, "keys": keys}))
    run = {"config": {"workload": workload, "companion": companion},
           "artifacts": [APPLIED_STATE], "node_states": {"leader": "n1", "agreed": True,
                                                    "workloads": [workload, companion]}}
    plan = {"node-state": plan_for(run)["node-state"]}
    return check_loaded(Run(tmp_path, run, History(h.ops)), plan)["checkers"]["node-state"]


@pytest.mark.parametrize("held, valid", [(-2, True), (-1, False)])
def test_node_state_judges_the_companions_keys_against_its_ops(tmp_path, held, valid):
    """A node holding a companion register value older than an acknowledged
    companion write is stale; the main workload's list keys, judged by the
    list rules against the list ops, are fine either way."""
    h = Ops()
    list_ops(h)
    register_ops(h, "register")
    r0 = companion_key("register", "r0")
    v = node_state_of(tmp_path, h, {n: [["1", [1]], [r0, held if n == "n2" else -2]]
                                    for n in ("n1", "n2")}, "list-append", "register")
    assert v["valid"] is valid
    assert v["stats"]["acknowledged_writes_by_workload"] == {"list-append": 1, "register": 2}
    if not valid:
        stale = [a for a in v["anomalies"] if a["type"] == "stale-value"]
        assert [(a["node"], a["key"], a["workload"]) for a in stale] == [("n2", r0, "register")]


@pytest.mark.parametrize("held, valid", [([-1], True), ([], False)])
def test_node_state_judges_a_list_companion_by_the_list_rules(tmp_path, held, valid):
    """In a register run, a list-append companion's acknowledged append
    missing from a node's list is a lost append of that workload."""
    h = Ops()
    register_ops(h)
    list_ops(h, "list-append")
    key = str(companion_key("list-append", 1))
    v = node_state_of(tmp_path, h, {n: [["r0", 2], [key, held]] for n in ("n1", "n2")},
                      "register", "list-append")
    assert v["valid"] is valid
    if not valid:
        assert {(a["type"], a["key"], a["workload"]) for a in v["anomalies"]} == {
            ("lost-append", key, "list-append")}


def test_the_keys_of_each_workload_are_the_keys_its_ops_name():
    """Generic: no key shape; an untagged op is the main workload's."""
    h = Ops()
    register_ops(h)
    list_ops(h, "list-append")
    h.done(0, "write", 1, 1, key="z", workload="list-append")
    assert owners(h.ops, "register") == {"r0": "register", "-2": "list-append",
                                         "z": "list-append"}


def durability_of(h: Ops, committed: list[dict], workload: str = "register",
                  companion: str | None = "list-append") -> dict:
    """durability's verdict with `committed` the payloads of a node's committed log."""
    dumps = {"n1": {"node": "n1", "entries": [
        {"offset": i, "epoch": 1, "committed": True, "payload": p}
        for i, p in enumerate(committed)]}}
    run = {"config": {"workload": workload, **({"companion": companion} if companion else {})},
           "artifacts": [LOG_DUMP]}
    plan = {"durability": plan_for(run)["durability"]}
    return check_loaded(Run(None, run, History(h.ops), dumps), plan)["checkers"]["durability"]


def same_values(main_write: str) -> Ops:
    """A register write of 5 (`main_write`: how it ended) and a list-append
    companion's append of the same value 5 to its own key."""
    h = Ops()
    h.done(0, "write", 5, 5, typ=main_write, key="r0")
    key = companion_key("list-append", 1)
    h.done(1, "txn", [["append", key, 5]], [["append", key, 5]], workload="list-append")
    return h


COMPANION_APPEND = {"op": "txn", "ops": [["append", "-2", 5]]}


@pytest.mark.parametrize("committed, valid", [([COMPANION_APPEND], False),
                                              ([COMPANION_APPEND, {"op": "put", "key": "r0",
                                                                   "value": 5}], True)])
def test_durability_does_not_take_a_companions_value_for_the_mains(committed, valid):
    """Values are not kept apart by workload: the companion's committed 5 is
    not the main workload's acknowledged write of 5, lost unless committed."""
    v = durability_of(same_values("ok"), committed)
    assert v["valid"] is valid
    if not valid:
        assert [(a["type"], a["key"], a["value"]) for a in v["anomalies"]] == [
            ("lost-write", "r0", 5)]


@pytest.mark.parametrize("committed, valid", [([COMPANION_APPEND], True),
                                              ([{"op": "put", "key": "r0", "value": 5}], False)])
def test_a_companions_committed_value_is_no_failed_main_write(committed, valid):
    v = durability_of(same_values("fail"), committed)
    assert v["valid"] is valid
    if not valid:
        assert [a["type"] for a in v["anomalies"]] == ["failed-write-committed"]


def test_a_history_without_workload_tags_is_the_main_workloads():
    """A run saved before companions: every op and committed value is the main's."""
    h = Ops()
    h.done(0, "write", 5, 5, key="r0")
    assert durability_of(h, [{"op": "put", "key": "r0", "value": 5}], companion=None)[
        "valid"] is True
    assert durability_of(h, [{"op": "put", "key": "r0", "value": 6}], companion=None)[
        "valid"] is False


def test_node_state_leaves_out_a_companions_keys_the_harness_did_not_read(tmp_path):
    """A run saved before the harness read every workload's keys (run.json
    node_states without `workloads`): on etcd the companion's keys were not
    read (judged, they would read as lost writes); on raft they were, and
    are not the main workload's either (a list main would call them unwritten)."""
    h = Ops()
    list_ops(h)
    register_ops(h, "register")
    r0 = companion_key("register", "r0")
    for node, keys in {"n1": [["1", [1]], [r0, -1]], "n2": [["1", [1]]]}.items():
        d = tmp_path / "nodes" / node
        d.mkdir(parents=True)
        (d / NODE_STATE).write_bytes(msgpack.packb({"position": 9, "keys": keys}))
    run = {"config": {"workload": "list-append", "companion": "register"},
           "artifacts": [APPLIED_STATE], "node_states": {"leader": "n1", "agreed": True}}
    plan = {"node-state": plan_for(run)["node-state"]}
    v = check_loaded(Run(tmp_path, run, History(h.ops)), plan)["checkers"]["node-state"]
    assert v["valid"] is True and v["stats"]["workloads_not_read"] == ["register"]
