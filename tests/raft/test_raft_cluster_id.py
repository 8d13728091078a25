"""KIP-595's cluster id: made when a data dir is formatted, stored in it,
carried on every request; a node configured for another cluster than its
data dir's stops with a clear error, and the `reformat` fault's data moves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodes.db import NodeSpec
from nodes.raft import storage
from nodes.raft.db import RaftDB
from nodes.raft.faults import reformat
from nodes.raft.server import NodeOptions, RaftServer


def server(data_dir: Path, cluster_id: str) -> RaftServer:
    return RaftServer(NodeOptions(node_id="n1", cluster_id=cluster_id,
                                  listen=("127.0.0.1", 0), peers={"n1": ("127.0.0.1", 0)},
                                  data_dir=data_dir))


def lines(capsys) -> list[dict]:
    return [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def test_format_writes_the_cluster_id_once(tmp_path):
    assert storage.read_cluster_id(tmp_path) is None
    storage.format_data_dir(tmp_path, "A")
    storage.format_data_dir(tmp_path, "A")          # again for the same cluster: no-op
    assert storage.read_cluster_id(tmp_path) == "A"
    with pytest.raises(storage.FormatError, match="already formatted for cluster 'A'"):
        storage.format_data_dir(tmp_path, "B")
    (tmp_path / storage.META_FILE).write_text("{torn")
    with pytest.raises(storage.FormatError, match="unreadable"):
        storage.read_cluster_id(tmp_path)


def test_new_cluster_ids_are_random_uuids_in_url_safe_base64():
    ids = {storage.new_cluster_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 22 and "=" not in i and "/" not in i and "+" not in i for i in ids)
    assert not any(i.startswith("-") for i in ids)   # never read as a command-line option


def test_the_format_command_generates_an_id_and_refuses_another(tmp_path):
    run = [sys.executable, "-m", "nodes.raft", "format", str(tmp_path / "d")]
    made = subprocess.run(run, capture_output=True, text=True, timeout=30, check=True)
    cluster_id = made.stdout.strip()
    assert storage.read_cluster_id(tmp_path / "d") == cluster_id and len(cluster_id) == 22
    again = subprocess.run(run + ["--cluster-id", "other"], capture_output=True, text=True,
                           timeout=30)
    assert again.returncode == 2 and "already formatted" in again.stderr


def test_a_node_configured_for_another_cluster_stops_before_touching_the_data(tmp_path,
                                                                               capsys):
    storage.format_data_dir(tmp_path, "A")
    with pytest.raises(SystemExit) as stopped:
        server(tmp_path, "B").recover()
    message = str(stopped.value.code)
    assert "formatted for cluster 'A'" in message and "configured for cluster 'B'" in message
    assert "refusing to start" in message
    assert lines(capsys)[-1] | {"t": 0} == {
        "t": 0, "node": "n1", "event": "cluster_id_mismatch", "configured": "B",
        "stored": ["A"]}
    assert not (tmp_path / storage.LOG_DIR).exists()   # recovery never ran


def test_a_quorum_state_of_another_cluster_stops_the_node_too(tmp_path):
    storage.format_data_dir(tmp_path, "A")
    storage.write_quorum_state(tmp_path, {"epoch": 1, "leader": None, "voted_for": None,
                                          "cluster_id": "B"})
    with pytest.raises(SystemExit, match="cluster 'A' and 'B'"):
        server(tmp_path, "A").recover()


def test_an_empty_dir_is_formatted_for_the_configured_cluster(tmp_path, capsys):
    node = server(tmp_path / "d", "A")
    node.recover()
    node.log.close()
    assert storage.read_cluster_id(tmp_path / "d") == "A"
    out = lines(capsys)
    assert {"event": "formatted", "cluster_id": "A"}.items() <= out[0].items()
    start = next(e for e in out if e["event"] == "start")
    assert start["cluster_id"] == "A" and start["voters"] == ["n1"]


def test_a_dir_from_before_meta_files_keeps_its_quorum_states_cluster(tmp_path):
    storage.write_quorum_state(tmp_path, {"epoch": 1, "leader": None, "voted_for": None,
                                          "cluster_id": "B"})
    with pytest.raises(SystemExit, match="formatted for cluster 'B'"):
        server(tmp_path, "A").recover()
    assert storage.read_cluster_id(tmp_path) == "B"


def spec(tmp_path: Path, name: str, **options) -> NodeSpec:
    return NodeSpec(name, "10.0.0.1", 7000, tmp_path / name, tmp_path / "logs", options)


def test_the_adapter_formats_every_node_for_one_new_cluster(tmp_path):
    db = RaftDB()
    nodes = [spec(tmp_path, n) for n in ("n1", "n2", "n3")]
    for node in nodes:
        db.setup(node, nodes)
    ids = {storage.read_cluster_id(n.data_dir) for n in nodes}
    assert len(ids) == 1 and None not in ids
    argv = db.argv(nodes[0], nodes, fresh=True)
    assert f"--cluster-id={ids.pop()}" in argv
    # Another cluster (another adapter) gets another id; an option names one.
    other = RaftDB()
    assert other.cluster_id(spec(tmp_path, "x")) not in ids
    assert other.cluster_id(spec(tmp_path, "x", cluster_id="named")) == "named"


def test_reformat_moves_the_data_aside_and_back(tmp_path):
    db = RaftDB()
    node = spec(tmp_path, "n1")
    db.setup(node, [node])
    ours = db.cluster_id(node)
    storage.write_quorum_state(node.data_dir, {"epoch": 3, "leader": None,
                                               "voted_for": "n2", "cluster_id": ours})
    (node.data_dir / "log").mkdir()
    (node.data_dir / "log" / "0.seg").write_bytes(b"records")
    reformat.stash_data(node.data_dir)
    assert [p.name for p in node.data_dir.iterdir()] == [reformat.STASH]
    assert db.reformat(node, "foreign") == "foreign"
    assert storage.read_cluster_id(node.data_dir) == "foreign"
    assert "--cluster-id=foreign" in db.argv(node, [node], fresh=False)
    (node.data_dir / "log").mkdir()
    (node.data_dir / "log" / "0.seg").write_bytes(b"the other cluster's")
    reformat.restore_data(node.data_dir)
    assert db.reformat(node, None) == ours
    assert storage.read_cluster_id(node.data_dir) == ours
    assert storage.read_quorum_state(node.data_dir)["voted_for"] == "n2"
    assert (node.data_dir / "log" / "0.seg").read_bytes() == b"records"
    assert not (node.data_dir / reformat.STASH).exists()


class OneNodeCluster:
    """The ClusterControl calls the fault makes, on one node's spec."""

    def __init__(self, node: NodeSpec) -> None:
        self.node, self.names, self.calls = node, [node.name], []

    def spec(self, name: str) -> NodeSpec:
        return self.node

    def kill(self, names: list[str]) -> list[str]:
        self.calls.append(("kill", list(names)))
        return list(names)

    def start(self, names: list[str]) -> list[str]:
        self.calls.append(("start", list(names)))
        return list(names)


def test_reformat_says_it_restarted_the_node_and_its_heal_does_not_inject_again(tmp_path):
    # "restarted" makes the hunt hold it through the node's election timeout
    # (nemesis.hunt.held_through_election): a shorter hold heals it unheard.
    import random
    db = RaftDB()
    node = spec(tmp_path, "n1")
    db.setup(node, [node])
    cluster = OneNodeCluster(node)
    fault = reformat.ReformatFault(db)
    value = fault.inject(cluster, random.Random(1), {"nodes": ["n1"]})
    assert value["restarted"] == ["n1"] and value["cluster_id"].startswith("foreign-")
    assert cluster.calls == [("kill", ["n1"]), ("start", ["n1"])]
    # Already re-formatted: nothing done, nothing restarted.
    again = fault.inject(cluster, random.Random(2), {"nodes": ["n1"]})
    assert "restarted" not in again and len(cluster.calls) == 2
    assert fault.heal(cluster) == {"nodes": ["n1"]}
    assert storage.read_cluster_id(node.data_dir) == db.cluster_id(node)


def test_a_system_that_cannot_reformat_cannot_run_the_fault():
    with pytest.raises(ValueError, match="cannot re-format"):
        reformat.ReformatFault(object())


def test_the_node_process_stops_with_the_mismatch_on_stderr(tmp_path):
    # An id that looks like an option still arrives whole (--cluster-id=ID).
    storage.format_data_dir(tmp_path / "d", "-formatted")
    db = RaftDB()
    node = NodeSpec("n1", "127.0.0.1", 1, tmp_path / "d", tmp_path, {"cluster_id": "-other"})
    done = subprocess.run(db.argv(node, [node], fresh=False), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert ("was formatted for cluster '-formatted', but this node is configured for "
            "cluster '-other'") in done.stderr
    event = json.loads(done.stdout.splitlines()[-1])
    assert (event["event"], event["stored"], event["configured"]) == (
        "cluster_id_mismatch", ["-formatted"], "-other")
