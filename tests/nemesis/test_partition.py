"""Partitions: the shapes (pure) and real packet drops on the bridge."""

from __future__ import annotations

import os
import random
import socket
import uuid
from pathlib import Path

import pytest
from echo_db import EchoDB, echo

from checkers.history import Op
from harness.run.cluster import Cluster
from nemesis.base import CompositeNemesis
from nemesis.netns import in_netns
from nemesis.partition import (
    SHAPES,
    PartitionFault,
    cut_script,
    majorities_ring,
    plan_shape,
)

NODES = ["n1", "n2", "n3", "n4", "n5"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def reachable(cut: list, a: str, b: str) -> bool:
    return (a, b) not in {tuple(p) for p in cut}


@pytest.mark.parametrize("seed", range(20))
def test_majorities_ring_gives_each_node_its_own_majority(seed: int) -> None:
    for n in (5, 7):
        nodes = [f"n{i}" for i in range(n)]
        cut = majorities_ring(random.Random(seed), nodes)
        views = [frozenset(b for b in nodes if b == a or reachable(cut, a, b)) for a in nodes]
        assert all(len(v) > n // 2 for v in views)
        assert len(set(views)) == n  # no two nodes see the same majority
        assert all(reachable(cut, b, a) == reachable(cut, a, b) for a in nodes for b in nodes)


@pytest.mark.parametrize("shape", SHAPES)
def test_shapes_are_pure_and_well_formed(shape: str) -> None:
    a = plan_shape(random.Random(7), NODES, shape, leader="n3")
    b = plan_shape(random.Random(7), list(reversed(NODES)), shape, leader="n3")
    assert a == b
    assert all(x != y and x in NODES and y in NODES for x, y in a["cut"])
    assert a["cut"], "every shape cuts something on 5 nodes"


def test_shape_semantics() -> None:
    rng = random.Random(3)
    iso = plan_shape(rng, NODES, "isolate-leader", leader="n2")
    assert all("n2" in pair for pair in iso["cut"]) and len(iso["cut"]) == 8
    br = plan_shape(rng, NODES, "bridge")
    middle = br["nodes"][0]
    assert all(middle not in pair for pair in br["cut"])
    assert len({x for pair in br["cut"] for x in pair}) == 4
    ow = plan_shape(rng, NODES, "one-way")
    assert all(a in ow["nodes"] and b in ow["receivers"] for a, b in ow["cut"])
    assert all(reachable(ow["cut"], b, a) for a, b in ow["cut"])
    halves = plan_shape(rng, NODES, "random-halves")
    assert len(halves["nodes"]) == 2 and len(halves["cut"]) == 2 * 2 * 3


def test_cut_script_is_one_transaction() -> None:
    assert cut_script([]) == "flush set bridge faultline cut\n"
    script = cut_script([("10.77.0.10", "10.77.0.11")])
    assert script.splitlines() == ["flush set bridge faultline cut",
                                   "add element bridge faultline cut { 10.77.0.10 . 10.77.0.11 }"]


# --- real drops ----------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path):
    run_id = f"tpa{uuid.uuid4().hex[:8]}"
    c = Cluster(tmp_path / run_id, EchoDB(leader="n2"), ["n1", "n2", "n3"], run_id,
                state_dir=tmp_path / "state")
    with c:
        c.start_all(timeout=20)
        yield c


def tcp_ok(c: Cluster, src: str, dst: str, timeout: float = 0.5) -> bool:
    """A fresh TCP round trip from inside src's namespace to dst's server."""
    with in_netns(c.netns_of(src)):
        try:
            return echo(c.ip_of(dst), 7000, timeout=timeout) == b"ping\n"
        except OSError:
            return False


def udp_socket(c: Cluster, name: str) -> socket.socket:
    with in_netns(c.netns_of(name)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((c.ip_of(name), 0))
    s.settimeout(0.5)
    return s


def udp_ok(sender: socket.socket, receiver: socket.socket) -> bool:
    sender.sendto(b"hello", receiver.getsockname())
    try:
        return receiver.recv(16) == b"hello"
    except TimeoutError:
        return False


@needs_root
@pytest.mark.slow
def test_isolate_leader_drops_tcp_both_ways_and_heals(cluster: Cluster) -> None:
    nemesis = CompositeNemesis({"partition": PartitionFault()})
    nemesis.setup(cluster)
    try:
        assert tcp_ok(cluster, "n1", "n2") and tcp_ok(cluster, "n2", "n3")
        done = nemesis.invoke(Op(0, 0, "nemesis", "invoke", "partition",
                                 {"shape": "isolate-leader"}))
        assert done.error is None and done.value["nodes"] == ["n2"]
        assert not tcp_ok(cluster, "n1", "n2") and not tcp_ok(cluster, "n2", "n1")
        assert not tcp_ok(cluster, "n3", "n2") and not tcp_ok(cluster, "n2", "n3")
        assert tcp_ok(cluster, "n1", "n3")  # the majority side is intact
        with cluster.in_hub():  # clients are never cut
            assert echo(cluster.ip_of("n2"), 7000, timeout=2) == b"ping\n"
        healed = nemesis.invoke(Op(0, 0, "nemesis", "invoke", "heal", None))
        assert healed.error is None and healed.value["partition"]["healed"]
        assert tcp_ok(cluster, "n1", "n2", timeout=2) and tcp_ok(cluster, "n2", "n3", timeout=2)
    finally:
        nemesis.teardown()


@needs_root
@pytest.mark.slow
def test_one_way_cut_drops_only_one_direction(cluster: Cluster) -> None:
    fault = PartitionFault("one-way")
    fault.setup(cluster)
    a, b = udp_socket(cluster, "n1"), udp_socket(cluster, "n3")
    try:
        assert udp_ok(a, b) and udp_ok(b, a)
        value = fault.inject(cluster, random.Random(0), {"shape": "one-way", "nodes": ["n1"],
                                                         "cut": [["n1", "n3"]]})
        assert value["cut"] == [["n1", "n3"]]
        assert not udp_ok(a, b)  # n1 cannot reach n3...
        assert udp_ok(b, a)      # ...but n3 still reaches n1
        fault.heal(cluster)
        assert udp_ok(a, b)
    finally:
        a.close()
        b.close()
        fault.heal(cluster)
        fault.teardown(cluster)


@needs_root
@pytest.mark.slow
def test_each_random_shape_really_cuts(cluster: Cluster) -> None:
    fault = PartitionFault()
    fault.setup(cluster)
    try:
        for seed, shape in enumerate(("random-halves", "bridge", "isolate-one")):
            value = fault.inject(cluster, random.Random(seed), {"shape": shape})
            src, dst = value["cut"][0]
            assert not tcp_ok(cluster, src, dst, timeout=0.3), (shape, value)
            fault.heal(cluster)
            assert tcp_ok(cluster, src, dst, timeout=2)
    finally:
        fault.heal(cluster)
        fault.teardown(cluster)
