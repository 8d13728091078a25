"""Reading the nodes' applied states at the end of a run: the raft adapter
against real nodes, the harness's bounded wait for agreement, the run dir
files, and the checker's place in every workload's plan."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from checkers.registry import APPLIED_STATE, NODE_EXITS, NODE_LOGS
from checkers.rundir import load_node_states
from harness.run import node_state
from harness.run.lifecycle import node_log_patterns, run_artifacts
from nodes.abilities import AppliedState, NodeLogPatterns
from nodes.db import NodeSpec
from nodes.etcd.db import EtcdDB
from nodes.log_patterns import GENERIC_FAILURE_LINES
from nodes.raft.client import NodeClient
from nodes.raft.db import FILL_KEY, RaftDB
from workloads.judging import plan_for


class FakeCluster:
    def __init__(self, names: list[str], leader: str | None = "n1",
                 down: tuple[str, ...] = ()) -> None:
        self.nodes = [NodeSpec(n, "127.0.0.1", 1, Path("/nonexistent"), Path("/nonexistent"))
                      for n in names]
        self._leader = leader
        self.down = down

    def is_running(self, name: str) -> bool:
        return name not in self.down

    @contextmanager
    def in_hub(self):
        yield

    def leader(self) -> str | None:
        return self._leader


class CatchingUp:
    """n2 reaches n1's position on its third read."""

    def __init__(self) -> None:
        self.reads = {"n1": 0, "n2": 0}

    def applied_state(self, node: NodeSpec, workload: str) -> Any:
        self.reads[node.name] += 1
        position = 9 if node.name == "n1" or self.reads["n2"] >= 3 else 7
        return {"position": position, "keys": [], "digest": str(position)}


def test_collect_waits_until_the_nodes_agree() -> None:
    db = CatchingUp()
    states, summary = node_state.collect(db, FakeCluster(["n1", "n2"]), "register", wait_s=10)
    # n2 catches up at the third read; the fourth confirms it.
    assert summary["agreed"] is True and summary["attempts"] == 4
    assert {s["position"] for s in states.values()} == {9}


def test_collect_gives_up_after_its_bound_and_keeps_the_last_read() -> None:
    class Silent(CatchingUp):
        def applied_state(self, node, workload):
            return None if node.name == "n2" else super().applied_state(node, workload)

    ticks = iter(range(100))
    states, summary = node_state.collect(Silent(), FakeCluster(["n1", "n2"]), "register",
                                         wait_s=2, clock=lambda: float(next(ticks)))
    assert summary["agreed"] is False and summary["silent"] == ["n2"]
    assert summary["down"] == []
    assert states["n2"] is None and states["n1"]["position"] == 9


@pytest.mark.parametrize("down, named", [(("n2",), ["n2"]), (("n1",), [])])
def test_collect_names_the_silent_nodes_whose_process_was_gone(down, named) -> None:
    """Only a silent node is named: n1 answered (a stale `is_running` says
    nothing then), n2 is named down only when its process was not running."""
    class Silent(CatchingUp):
        def applied_state(self, node, workload):
            return None if node.name == "n2" else super().applied_state(node, workload)

    ticks = iter(range(100))
    _, summary = node_state.collect(Silent(), FakeCluster(["n1", "n2"], down=down),
                                    "register", wait_s=2, clock=lambda: float(next(ticks)))
    assert summary["down"] == named


def test_no_leader_is_no_agreement() -> None:
    ticks = iter(range(100))
    _, summary = node_state.collect(CatchingUp(), FakeCluster(["n1"], leader=None), "register",
                                    wait_s=1, clock=lambda: float(next(ticks)))
    assert summary["agreed"] is False


def test_saved_states_load_back(tmp_path: Path) -> None:
    states = {"n1": {"position": 3, "keys": [[None, 1], ["r1", [1, 2]]], "digest": "x"},
              "n2": None}
    assert node_state.save(tmp_path, states) == {}
    assert load_node_states(tmp_path) == states


def test_the_adapters_declare_their_abilities() -> None:
    assert isinstance(RaftDB(), AppliedState) and isinstance(EtcdDB(), AppliedState)
    assert isinstance(RaftDB(), NodeLogPatterns) and isinstance(EtcdDB(), NodeLogPatterns)
    assert APPLIED_STATE in run_artifacts(RaftDB())

    class Bare:
        artifacts = frozenset()

    assert run_artifacts(Bare()) == {NODE_LOGS, NODE_EXITS}
    assert node_log_patterns(Bare())["failure"] == list(GENERIC_FAILURE_LINES)


@pytest.mark.parametrize("workload", ["register", "list-append", "rw-register", "log", "kv"])
def test_every_workload_plans_the_node_checkers(workload: str) -> None:
    plan = plan_for({"config": {"workload": workload}})
    assert {"node-state", "node-logs", "node-exits"} <= set(plan)
    assert plan["node-state"]["data"]


@pytest.mark.slow
def test_raft_nodes_report_their_applied_state(tmp_path: Path) -> None:
    from nodes.raft.local_cluster import LocalCluster

    with LocalCluster(tmp_path, size=3) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        with NodeClient(cluster.address(leader)) as client:
            assert client.put("register", 1).ok       # the keyless register
            assert client.put("r1", 2).ok
            assert client.put(FILL_KEY, 3).ok
            assert client.append("L", "x").ok
        db = RaftDB()
        deadline = time.monotonic() + 20
        while True:
            states = {n: db.applied_state(cluster.spec(n), "register") for n in cluster.names}
            if node_state.agree(states) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert node_state.agree(states), states
        state = states[leader]
        assert sorted(state["keys"], key=repr) == sorted([[None, 1], ["r1", 2]], key=repr)
        assert state["logs"] == [["L", ["x"]]]
        cluster.stop(leader)
        assert db.applied_state(cluster.spec(leader), "register") is None


def test_node_exits_without_the_node_dirs_is_unknown(tmp_path: Path) -> None:
    from checkers.history import History, Op
    from checkers.registry import run_check
    from checkers.rundir import Run

    ops = [Op(0, 1, 0, "invoke", "read", None), Op(1, 2, 0, "ok", "read", 1)]
    run = Run(tmp_path, {"start_monotonic_ns": 0}, History(ops))
    assert run_check("node-exits", run, {})[0]["valid"] == "unknown"
    (tmp_path / "nodes" / "n1").mkdir(parents=True)
    assert run_check("node-exits", run, {})[0]["valid"] is True


class ByPrefix:
    """A store that keeps each workload's keys apart (etcd, under its
    workload's prefix); n2 does not answer a read of the companion's."""

    KEYS = {"list-append": [["1", [1, 2]]], "register": [["register:r0", 3]]}

    def applied_state(self, node: NodeSpec, workload: str) -> Any:
        if node.name == "n2" and workload == "register":
            return None
        return {"position": 9, "keys": list(self.KEYS[workload])}


def test_collect_reads_every_workloads_keys() -> None:
    states, summary = node_state.collect(ByPrefix(), FakeCluster(["n1", "n2"]), "list-append",
                                         wait_s=0, companions=["register"])
    assert summary["workloads"] == ["list-append", "register"]
    assert states["n1"] == {"position": 9, "keys": [["1", [1, 2]], ["register:r0", 3]]}
    # Half a state would read as the companion's writes lost: it did not answer.
    assert states["n2"] is None and summary["silent"] == ["n2"]


def test_keys_the_main_read_has_are_not_added_again() -> None:
    main = {"position": 9, "keys": [[None, 1], ["-2", [1]]], "digest": "d"}
    assert node_state.with_keys_of(main, {"position": 10, "keys": [["register", 1],
                                                                    ["-2", [1]]]}) == {
        "position": 9, "keys": [[None, 1], ["-2", [1]], ["register", 1]], "digest": "d"}
