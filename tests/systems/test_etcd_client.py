"""The etcd workload client against a real 3-member cluster on loopback."""

import os
import signal
import threading
import time

import psutil
import pytest

from checkers.history import Op
from faultline import registry as systems
from nodes.etcd.db import INSTALL_HINT, EtcdDB
from nodes.etcd.local_cluster import LocalEtcdCluster, free_port_pair, running
from workloads.clients.etcd import EtcdClient, rejection

needs_etcd = pytest.mark.skipif(EtcdDB().check_installed() is not None, reason=INSTALL_HINT)


def invoke(client, f, value=None, key=None, node="n1", process=0):
    return client.invoke(Op(0, 0, process, "invoke", f, value, key, node))


# --- without a cluster -------------------------------------------------------

def test_unreachable_node_fails_writes_definitely():
    client = EtcdClient("register", {"n1": ("127.0.0.1", free_port_pair())}, {})
    try:
        done = invoke(client, "write", 7)
        assert (done.type, done.node) == ("fail", "n1")
        assert done.error.startswith("unsent")
    finally:
        client.close()


def test_grpc_codes_decide_definiteness():
    assert rejection(400, b'{"error":"bad","code":3}').definite
    assert rejection(429, b'{"error":"etcdserver: too many requests","code":8}').definite
    assert not rejection(503, b'{"error":"etcdserver: leader changed","code":14}').definite
    assert not rejection(504, b'{"error":"etcdserver: request timed out","code":4}').definite
    assert not rejection(502, b"Bad Gateway").definite
    assert rejection(404, b"Not Found").definite


def test_unknown_workload_is_refused():
    with pytest.raises(ValueError):
        EtcdClient("log", {"n1": ("127.0.0.1", 1)}, {})


# --- against real members ----------------------------------------------------

@pytest.fixture(scope="module")
def etcd(tmp_path_factory):
    with running(tmp_path_factory.mktemp("etcd")) as c:
        yield c


@pytest.fixture
def client_for(etcd):
    made = []

    def make(workload, **options):
        client = systems.get("etcd").client_class(workload)(workload, etcd.addresses, options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()




@pytest.mark.slow
@needs_etcd
def test_register_write_read_cas(client_for):
    c = client_for("register")
    assert invoke(c, "write", 1).type == "ok"
    read = invoke(c, "read", node="n2")
    assert (read.type, read.value, read.node) == ("ok", 1, "n2")
    cas = invoke(c, "cas", [1, 2], node="n3")
    assert (cas.type, cas.value) == ("ok", [1, 2])
    assert invoke(c, "read").value == 2


@pytest.mark.slow
@needs_etcd
def test_cas_mismatch_is_a_definite_fail(client_for):
    c = client_for("kv")
    assert invoke(c, "write", 10, key="mismatch").type == "ok"
    cas = invoke(c, "cas", [11, 12], key="mismatch")
    assert (cas.type, cas.error) == ("fail", "cas-mismatch")
    assert invoke(c, "read", key="mismatch").value == 10


@pytest.mark.slow
@needs_etcd
def test_kv_keys_are_independent_and_unwritten_reads_none(client_for):
    c = client_for("kv")
    assert invoke(c, "write", 5, key="a1").type == "ok"
    assert invoke(c, "write", 6, key="b1").type == "ok"
    assert invoke(c, "read", key="a1").value == 5
    assert invoke(c, "read", key="b1").value == 6
    never = invoke(c, "read", key="never-written")
    assert (never.type, never.value) == ("ok", None)
    # cas from "never written" succeeds exactly once.
    assert invoke(c, "cas", [None, 1], key="fresh").type == "ok"
    assert invoke(c, "cas", [None, 2], key="fresh").type == "fail"


@pytest.mark.slow
@needs_etcd
def test_serializable_reads_option_still_reads_values(client_for):
    writer, reader = client_for("kv"), client_for("kv", serializable_reads=True)
    assert invoke(writer, "write", 77, key="ser").type == "ok"
    deadline = time.monotonic() + 5
    # A serializable read answers from the member's own state; it catches up.
    while invoke(reader, "read", key="ser", node="n3").value != 77:
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.slow
@needs_etcd
def test_list_append_txn_reads_its_own_appends(client_for):
    c = client_for("list-append")
    done = invoke(c, "txn", [["append", 100, 1], ["r", 100, None], ["append", 101, 2],
                             ["append", 100, 3], ["r", 100, None], ["r", 102, None]])
    assert done.type == "ok"
    assert done.value == [["append", 100, 1], ["r", 100, [1]], ["append", 101, 2],
                          ["append", 100, 3], ["r", 100, [1, 3]], ["r", 102, []]]
    read = invoke(c, "txn", [["r", 100, None], ["r", 101, None]], node="n2")
    assert read.value == [["r", 100, [1, 3]], ["r", 101, [2]]]


@pytest.mark.slow
@needs_etcd
def test_concurrent_list_append_txns_are_atomic(client_for):
    """Threads append to two keys in one txn each; every acknowledged pair
    lands in both lists, nothing else does, and both lists agree on order."""
    keys = (200, 201)
    results: dict[int, str] = {}

    def worker(w: int) -> None:
        c = client_for("list-append", txn_attempts=20)
        for i in range(15):
            v = w * 1000 + i
            done = invoke(c, "txn", [["append", keys[0], v], ["append", keys[1], v]],
                          node=f"n{w % 3 + 1}", process=w)
            results[v] = done.type

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = invoke(client_for("list-append"), "txn", [["r", keys[0], None], ["r", keys[1], None]])
    a, b = final.value[0][2], final.value[1][2]
    oks = sorted(v for v, typ in results.items() if typ == "ok")
    assert a == b
    assert sorted(a) == oks
    assert len(oks) >= 30
    assert all(typ in ("ok", "fail") for typ in results.values())


def stop(pid: int) -> None:
    os.killpg(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while psutil.Process(pid).status() != psutil.STATUS_STOPPED:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.1)


@pytest.mark.slow
@needs_etcd
def test_paused_member_write_is_info_and_read_is_fail(etcd, client_for):
    c = client_for("kv", op_timeout=0.5)
    assert invoke(c, "write", 1, key="paused", node="n2").type == "ok"   # a live connection
    pid = etcd.procs["n2"].pid
    stop(pid)
    try:
        write = invoke(c, "write", 2, key="paused", node="n2")
        assert (write.type, write.error) == ("info", "timeout")
        read = invoke(c, "read", key="paused", node="n2")
        assert read.type == "fail"
    finally:
        os.killpg(pid, signal.SIGCONT)
    etcd.wait_ready(["n2"])


@pytest.mark.slow
@needs_etcd
def test_acknowledged_writes_survive_leader_kill(tmp_path, client_for):
    with LocalEtcdCluster(tmp_path) as etcd:
        etcd.start_all()
        etcd.wait_ready()
        c = EtcdClient("kv", etcd.addresses, {"op_timeout": 2.0})
        try:
            old = etcd.wait_for_leader()
            acked = {}
            for i in range(20):
                key = f"k{i % 4}"
                if invoke(c, "write", i, key=key, node=old).type == "ok":
                    acked[key] = i
            assert len(acked) == 4
            etcd.kill(old)
            rest = [n for n in etcd.names if n != old]
            new = etcd.wait_for_leader(rest, timeout=15)
            assert new != old
            for node in rest:
                for key, value in acked.items():
                    read = invoke(c, "read", key=key, node=node)
                    assert (read.type, read.value) == ("ok", value)
            # The killed member's stale connection is not reused: a definite fail.
            assert invoke(c, "write", 99, key="k0", node=old).type == "fail"
        finally:
            c.close()
