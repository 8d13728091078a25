"""Reading every node's applied state at the end of a run, for the
node-state checker (`checkers.node_state`).

After the heal, the recovery time and the final reads, the nodes may still
be catching up: read them all, again and again for a bounded time, until
they agree (every node answered, at one position) with a leader known, the
same at two reads in a row, then save what each said in
nodes/<n>/state.msgpack. The summary names the silent nodes whose process
was not running at the last read (`down`), so the checker can tell a node a
fault left down from a live one that did not answer.
Whatever the last attempt found is saved, agreed or not: the checker decides
what it can judge from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgpack

from checkers.rundir import MAX_NODE_STATE_BYTES, NODE_STATE, NODES_DIR
from harness.run.cluster import Cluster
from nodes.abilities import AppliedState
from nodes.db import NodeSpec, NodeState

# How long the nodes get to agree; a little more than a leader's election
# and a follower's catch-up after the last heal.
AGREE_WAIT_S = 15.0
POLL_S = 0.25


def agree(states: Mapping[str, NodeState | None]) -> bool:
    """Every node answered, at one position. (Not necessarily with one state:
    nodes that applied as far and hold different states never will.)"""
    answered = [s for s in states.values() if s is not None]
    return (bool(answered) and len(answered) == len(states)
            and len({s.get("position") for s in answered}) == 1)


def _positions(states: Mapping[str, NodeState | None]) -> dict[str, Any]:
    return {n: None if s is None else s.get("position") for n, s in states.items()}


def with_keys_of(state: NodeState, other: NodeState) -> NodeState:
    """Pure: a node's state in the main workload's terms, with the keys
    another workload's read of it found that it lacks (a system that keeps
    each workload's keys apart, as etcd under its workload's prefix). Its
    position and digest stay the main read's."""
    have = {repr(k) for k, _ in state["keys"]}
    extra = [[k, v] for k, v in other["keys"] if k is not None and repr(k) not in have]
    return {**state, "keys": [*state["keys"], *extra]} if extra else state


def read_node(db: AppliedState, node: NodeSpec, workloads: Sequence[str]) -> NodeState | None:
    """One node's state, with every workload's keys (the first is the main
    workload, whose terms it is in); None if any read got no answer."""
    state = db.applied_state(node, workloads[0])
    for other in workloads[1:]:
        if state is None:
            break
        theirs = db.applied_state(node, other)
        state = None if theirs is None else with_keys_of(state, theirs)
    return state


def read_all(db: AppliedState, cluster: Cluster,
             workloads: Sequence[str]) -> dict[str, NodeState | None]:
    out: dict[str, NodeState | None] = {}
    with cluster.in_hub():
        for node in cluster.nodes:
            try:
                out[node.name] = read_node(db, node, workloads)
            except Exception:   # a node that answers garbage has not answered
                out[node.name] = None
    return out


def collect(db: AppliedState, cluster: Cluster, workload: str,
            wait_s: float = AGREE_WAIT_S,
            clock: Callable[[], float] = time.monotonic,
            companions: Sequence[str] = ()) -> tuple[dict[str, NodeState | None],
                                                     dict[str, Any]]:
    """The nodes' states once they agree, else the last read when `wait_s`
    passes; and what happened (for run.json: `workloads` names those whose
    keys were read, so the checker judges a companion's keys only then)."""
    workloads = [workload, *companions]
    started = clock()
    deadline = started + wait_s
    attempts = 0
    previous: tuple[Any, str | None] | None = None
    while True:
        attempts += 1
        states = read_all(db, cluster, workloads)
        leader = cluster.leader()
        # Twice alike, a poll apart: a leader just elected may not yet have
        # committed in its epoch (its first entry then moves every position).
        now = (_positions(states), leader)
        agreed = agree(states) and leader is not None and now == previous
        if agreed or clock() >= deadline:
            break
        previous = now
        time.sleep(POLL_S)
    silent = sorted(n for n, s in states.items() if s is None)
    summary = {"agreed": agreed, "leader": leader, "attempts": attempts, "workloads": workloads,
               "waited_s": round(clock() - started, 3),
               "positions": _positions(states), "silent": silent,
               # A silent node whose process is gone is told apart from one
               # running that did not answer: a fault may have left it down.
               "down": [n for n in silent if not cluster.is_running(n)]}
    return states, summary


def save(run_dir: Path, states: Mapping[str, NodeState | None]) -> dict[str, str]:
    """nodes/<n>/state.msgpack for each node; a state over the size limit is
    saved as not answered. Returns the nodes whose state was not saved, with why."""
    dropped = {}
    for name, state in states.items():
        packed = msgpack.packb(state, use_bin_type=True)
        if len(packed) > MAX_NODE_STATE_BYTES:
            dropped[name] = f"{len(packed)} bytes, over the {MAX_NODE_STATE_BYTES} byte limit"
            packed = msgpack.packb(None)
        path = run_dir / NODES_DIR / name / NODE_STATE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(packed)
    return dropped
