import json
import socket
import subprocess
import sys
import time

import msgpack
import pytest

from nodes.raft import codec
from nodes.raft.client import NodeClient
from nodes.raft.db import RaftDB
from nodes.raft.local_cluster import LocalCluster

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path):
    c = LocalCluster(tmp_path, size=3)
    try:
        c.start_all()
        yield c
    finally:
        c.close()


def wait_until(predicate, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(what)


def events(cluster, name):
    lines = (cluster.root / name / "stdout.log").read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def starts(cluster, name) -> int:
    return sum(e["event"] == "start" for e in events(cluster, name))


def dump(cluster, name, tmp_path):
    out = tmp_path / f"{name}.msgpack"
    subprocess.run(
        [sys.executable, "-m", "nodes.raft", "dump", str(cluster.data_dir(name)),
         "--out", str(out), "--node", name],
        check=True, timeout=30,
    )
    return msgpack.unpackb(out.read_bytes(), raw=False)


def test_write_and_read_through_the_client(cluster):
    cluster.wait_for_leader()
    client = cluster.client()
    try:
        assert client.call("get", key="x").value is None
        assert client.call("put", key="x", value=1).ok
        assert client.call("get", key="x").value == 1
        miss = client.call("cas", key="x", expect=5, value=6)
        assert (miss.ok, miss.error, miss.definite) == (False, "cas_mismatch", True)
        assert client.call("cas", key="x", expect=1, value=2).ok
        assert client.call("get", key="x").value == 2
        txn = client.call("txn", ops=[["append", "l", 1], ["append", "l", 2], ["r", "l", None]])
        assert txn.value == [["append", "l", 1], ["append", "l", 2], ["r", "l", [1, 2]]]
        assert [client.call("append", log="q", value=v).value for v in "ab"] == [0, 1]
        assert client.call("read", log="q", **{"from": 0, "count": 5}).value == [[0, "a"], [1, "b"]]
    finally:
        client.close()
    # a follower refuses, definitely, and names the leader
    leader = cluster.wait_for_leader()
    follower = next(n for n in cluster.names if n != leader)
    with NodeClient(cluster.address(follower)) as direct:
        refused = direct.put("x", 99)
        assert (refused.error, refused.definite, refused.leader) == ("not_leader", True, leader)
        status = direct.status().value
        assert status["role"] == "Follower" and status["leader"] == leader
    # every node's stdout is event lines stamped with the monotonic clock
    # A data dir no one formatted is formatted by the node itself, for its
    # configured cluster, before it starts (KIP-595 cluster id).
    first, start = events(cluster, follower)[:2]
    assert first["event"] == "formatted" and first["cluster_id"] == start["cluster_id"]
    assert start["event"] == "start" and start["node"] == follower
    assert start["recovered_truncated_bytes"] == 0 and start["t"] <= time.monotonic_ns()
    assert start["voters"] == cluster.names   # the set in force, for the invariants
    # The leader says when it acknowledges writes (put, the cas that matched,
    # the txn, two appends), never reads or a refused cas; each write's age
    # since the leader wrote it is at least a round trip.
    acks = [e for n in cluster.names for e in events(cluster, n) if e["event"] == "ack"]
    assert sum(e["writes"] for e in acks) == 5
    assert all(e["node"] == leader and 0 < e["age_ms"] < 5000 and e["first"] <= e["last"]
               for e in acks)


def test_db_adapter_sees_the_cluster(cluster, tmp_path):
    db = RaftDB()
    assert db.check_installed() is None
    leader = cluster.wait_for_leader()
    specs = cluster.specs()
    assert db.leader(specs) == leader
    assert all(db.is_ready(spec) for spec in specs)
    with NodeClient(cluster.address(leader)) as client:
        assert client.put("k", 1).ok
    spec = cluster.spec(leader)
    files = db.data_files(spec)
    assert any(f.suffix == ".seg" for f in files) and all(f.exists() for f in files)
    cluster.stop(leader)
    assert not db.is_ready(spec)
    db.dump_log(spec, tmp_path / "out" / "log.msgpack")
    dumped = msgpack.unpackb((tmp_path / "out" / "log.msgpack").read_bytes(), raw=False)
    assert dumped["node"] == leader
    assert any(e["payload"].get("key") == "k" for e in dumped["entries"] if e["committed"])


def test_db_adapter_grows_a_leaders_log_and_a_follower_refuses(cluster):
    """fast-failover's `grow_log`: blind writes at the leader until its log
    reaches the end asked for; a follower answers not_leader and grows nothing."""
    db = RaftDB()
    leader = cluster.wait_for_leader()
    spec = cluster.spec(leader)
    start = db.status(spec)["log_end"]
    grown = db.grow_log(spec, start + 5, time.monotonic() + 10)
    assert grown == {"node": leader, "to": start + 5, "appended": 5, "log_end": start + 5,
                     "error": None}
    assert db.status(spec)["log_end"] == start + 5
    assert db.grow_log(spec, start + 2, time.monotonic() + 10)["appended"] == 0
    follower = next(n for n in cluster.names if n != leader)
    refused = db.grow_log(cluster.spec(follower), start + 50, time.monotonic() + 10)
    assert refused["appended"] == 0 and refused["error"] == "not_leader"


def read_retrying(client, key):
    """Reads are safe to retry when their outcome was unknown (dead connection, timeout)."""
    for _ in range(20):
        try:
            response = client.call("get", key=key)
        except OSError:
            continue
        if response.ok:
            return response.value
        time.sleep(0.1)
    raise AssertionError(f"could not read {key}")


def test_leader_kill_keeps_acknowledged_writes_and_restart_catches_up(cluster, tmp_path):
    first_leader = cluster.wait_for_leader()
    client = cluster.client(timeout=3.0)
    acknowledged = {}
    try:
        for i in range(60):
            response = client.call("put", key=f"k{i % 20}", value=i)
            if response.ok:
                acknowledged[f"k{i % 20}"] = i
        assert len(acknowledged) == 20
        cluster.kill(first_leader)
        survivors = [n for n in cluster.names if n != first_leader]
        new_leader = cluster.wait_for_leader(among=survivors)
        assert new_leader != first_leader
        for key, value in acknowledged.items():
            assert read_retrying(client, key) == value
        # more writes while the old leader is down, so it has something to catch up on
        for i in range(60, 80):
            assert client.call("put", key=f"k{i % 20}", value=i).ok
        assert read_retrying(client, "k19") == 79
        # stdout.log is appended to across restarts: the new incarnation's
        # start is the one beyond those logged before it.
        starts_before = starts(cluster, first_leader)
        cluster.start(first_leader)
        wait_until(lambda: starts(cluster, first_leader) > starts_before,
                   what="the restarted node logs its start")
        leader_status = cluster.status(cluster.wait_for_leader())
        wait_until(
            lambda: (s := cluster.status(first_leader)) and s["hw"] >= leader_status["hw"],
            what="restarted node catches up",
        )
    finally:
        client.close()
    for name in cluster.names:
        cluster.stop(name)
    dumps = {name: dump(cluster, name, tmp_path) for name in cluster.names}
    committed = {
        name: [(e["offset"], e["epoch"], e["digest"]) for e in d["entries"] if e["committed"]]
        for name, d in dumps.items()
    }
    longest = max(committed.values(), key=len)
    assert len(longest) >= 80
    for name, prefix in committed.items():
        assert prefix == longest[: len(prefix)], f"{name} diverges from the committed log"
        assert len(prefix) >= leader_status["hw"], f"{name} did not catch up"
    assert dumps[first_leader]["epoch"] > 0
    assert dumps[first_leader]["epochs"][0][1] == 0
    payloads = [e["payload"] for e in dumps[first_leader]["entries"]]
    assert {"op": "put", "key": "k0", "value": 0} == {
        k: v for k, v in payloads[1].items() if k != "rid"}


def send_raw(address, data):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        replies = []
        try:
            while True:
                replies.append(codec.recv_frame(s))
        except ConnectionError:
            pass
    return replies


def test_bad_requests_do_not_crash_a_node(cluster):
    leader = cluster.wait_for_leader()
    address = cluster.address(leader)

    def frame(obj):
        return codec.encode_frame(obj)

    def raw_frame(body):
        return codec.LENGTH.pack(len(body)) + body

    # garbage bodies and bad requests: one error each, the connection stays up
    replies = send_raw(address, b"".join([
        raw_frame(b"\xc1\xc1"),
        raw_frame(msgpack.packb([1, 2])),
        frame({"kind": "client", "id": 1, "op": "drop_table"}),
        frame({"kind": "client", "id": 2, "op": "put", "key": 5, "value": 1}),
        frame({"kind": "client", "id": 3, "op": "read", "log": "l", "from": "x", "count": 1}),
        frame({"kind": "client", "op": "get", "key": "x"}),
        frame({"kind": "client", "id": 4, "op": "get", "key": "x", "cluster_id": "other"}),
        frame({"kind": "what", "id": 5}),
        frame({"kind": "peer", "type": "fetch", "to": leader, "from": "n9"}),
        frame({"kind": "peer", "type": "nonsense", "to": leader, "from": "n2",
               "cluster_id": "test", "epoch": "high"}),
        frame({"kind": "client", "id": 6, "op": "status"}),
    ]))
    assert [r["error"] for r in replies] == [
        "bad_request", "bad_request", "bad_request", "bad_request", "bad_request",
        "bad_request", "cluster_id_mismatch", "bad_request", None,
    ]
    assert all(r["definite"] for r in replies)
    assert replies[-1]["value"]["node"] == leader
    # broken framing: an error, then the node hangs up
    replies = send_raw(address, codec.LENGTH.pack(codec.MAX_FRAME_BYTES + 1) + b"x" * 100)
    assert [r["error"] for r in replies] == ["bad_request"]
    assert send_raw(address, b"GET / HTTP/1.1\r\n\r\n")[0]["error"] == "bad_request"
    # a torn header then EOF: answered, then closed (send_raw returns at close)
    assert [r["error"] for r in send_raw(address, b"\x00\x00")] == ["bad_request"]
    # still the leader of the same cluster, still serving writes
    with NodeClient(address) as client:
        assert client.put("after", 1).ok
        assert client.get("after").value == 1
    assert all(proc.poll() is None for proc in cluster.procs.values())


def test_lost_quorum_gives_indeterminate_then_definite_errors(tmp_path):
    # Check quorum fires after fetch_timeout_ticks (15) ticks without a
    # fetching majority: 200 ms ticks put that 3 s out, ten times the 300 ms
    # request timeout, so the put below times out before the leader resigns
    # even on a loaded machine.
    args = ["--request-timeout-ms", "300", "--tick-ms", "200"]
    with LocalCluster(tmp_path, size=3, extra_args=args) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        with NodeClient(cluster.address(leader)) as client:
            assert client.put("x", 1).ok
            for name in cluster.names:
                if name != leader:
                    cluster.kill(name)
            # still leading (check-quorum has not fired yet): the write cannot commit
            stuck = client.put("x", 2)
            assert stuck.error in ("timeout", "leader_lost") and stuck.definite is False
            # once it has noticed it lost the quorum, it refuses outright
            refused = wait_until(
                lambda: (r := client.put("x", 3)).error == "not_leader" and r,
                what="leader resigns",
            )
            assert refused.definite is True
