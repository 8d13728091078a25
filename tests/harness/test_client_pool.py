"""The dispatcher and worker processes, against a small real TCP server that
speaks the raft client protocol (the real node is covered by the e2e tests)."""

import random
import socket
import struct
import threading
import time

import msgpack
import pytest

from checkers.history import read_history, validate
from harness.run.clients import ClientPool
from harness.run.recorder import Recorder
from workloads.ops import OpSpec

LEN = struct.Struct(">I")


class RegisterServer:
    """Applies put/get/cas to one dict; never answers writes of `silent` values."""

    def __init__(self, silent=()):
        self.silent = set(silent)
        self.data = {}
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            while True:
                head = c.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                req = msgpack.unpackb(c.recv(LEN.unpack(head)[0], socket.MSG_WAITALL))
                if req.get("value") in self.silent:
                    continue
                with self.lock:
                    resp = {"id": req["id"], "ok": True, "value": None}
                    if req["op"] == "get":
                        resp["value"] = self.data.get(req["key"])
                    elif req["op"] == "put":
                        self.data[req["key"]] = req["value"]
                    elif req["op"] == "cas":
                        if self.data.get(req["key"]) == req["expect"]:
                            self.data[req["key"]] = req["value"]
                        else:
                            resp = {"id": req["id"], "ok": False, "error": "cas_mismatch",
                                    "definite": True}
                body = msgpack.packb(resp)
                c.sendall(LEN.pack(len(body)) + body)
        except OSError:
            pass


def ops(n):
    for i in range(1, n + 1):
        yield OpSpec("write", i) if i % 2 else OpSpec("read")


# Long enough that no answered op times out on a loaded machine; the test of
# timeouts sets its own.
OP_TIMEOUT_S = 5.0


# A bound, not a duration: run() returns as soon as every op is answered. A
# loaded 2-core machine once dispatched fewer than 200 quick ops in 5 s.
POOL_DEADLINE_S = 60.0


def run_pool(tmp_path, server, specs, concurrency=3, seconds=POOL_DEADLINE_S, rate=None,
             options=None):
    rec = Recorder(tmp_path / "history.msgpack")
    pool = ClientPool(concurrency, "raft", "register", {"n1": ("127.0.0.1", server.port)},
                      options or {"op_timeout": OP_TIMEOUT_S}, tmp_path / "workers")
    pool.start()
    try:
        pool.run(specs, rec, time.monotonic() + seconds, rate, random.Random(0))
    finally:
        pool.close(rec)
        rec.close()
    return read_history(tmp_path / "history.msgpack").ops


def test_every_op_completes_and_history_is_valid(tmp_path):
    history = run_pool(tmp_path, RegisterServer(), ops(200))
    assert validate(history) == []
    assert sum(op.type == "invoke" for op in history) == 200
    assert all(op.type in ("invoke", "ok") for op in history)
    assert {op.node for op in history} == {"n1"}


def test_timeout_is_info_and_process_is_retired(tmp_path):
    # 300 ops at 100/s take 3 s or more to dispatch: well past the two
    # timeouts (about 1 s in), so later ops need fresh processes.
    history = run_pool(tmp_path, RegisterServer(silent={3, 7}), ops(300), rate=100,
                       options={"op_timeout": 1.0})
    assert validate(history) == []
    infos = [op for op in history if op.type == "info"]
    # The two writes the server never answers time out; on a loaded machine an
    # answered op may too, so the claim is about these two, not an exact list.
    assert {3, 7} <= {op.value for op in infos}
    assert all(op.error == "timeout" for op in infos)
    for i in infos:
        assert not [op for op in history if op.process == i.process and op.index > i.index]
    assert max(op.process for op in history) >= 3  # fresh ids were handed out


def test_refused_connection_is_fail(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now

    class Closed:
        pass

    closed = Closed()
    closed.port = port
    history = run_pool(tmp_path, closed, ops(10), concurrency=2)
    done = [op for op in history if op.type != "invoke"]
    assert len(done) == 10 and all(op.type == "fail" for op in done)
    assert all(op.error.startswith("unsent") for op in done)


def test_rate_limits_dispatch(tmp_path):
    # Unlimited, this server takes thousands of ops a second; at 100/s the
    # dispatcher must hold back. Judged on the recorded invoke times, not on
    # wall-clock time: a loaded machine only dispatches fewer, never more.
    rate = 100
    history = run_pool(tmp_path, RegisterServer(), ops(10_000), seconds=3.0, rate=rate)
    times = sorted(op.time for op in history if op.type == "invoke")
    assert len(times) >= 10  # it dispatched at all
    assert len(times) <= 3.0 * rate * 1.5
    span_s = (times[-1] - times[0]) / 1e9
    # After a stall the dispatcher catches up at most 0.1 s of ops (10 here).
    assert len(times) - 1 <= rate * 1.5 * span_s + 0.1 * rate


def test_bad_concurrency_is_refused(tmp_path):
    with pytest.raises(ValueError):
        ClientPool(0, "raft", "register", {}, {}, tmp_path)


class Redirector(RegisterServer):
    """A follower: answers everything with not_leader, naming n2."""

    def __init__(self):
        self.seen = 0
        super().__init__()

    def serve(self, c):
        try:
            while True:
                head = c.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                req = msgpack.unpackb(c.recv(LEN.unpack(head)[0], socket.MSG_WAITALL))
                self.seen += 1
                body = msgpack.packb({"id": req["id"], "ok": False, "error": "not_leader",
                                      "definite": True, "leader": "n2"})
                c.sendall(LEN.pack(len(body)) + body)
        except OSError:
            pass


def test_client_follows_the_leader_hint_and_forgets_a_dead_leader():
    from checkers.history import Op
    from workloads.clients.raft import RaftClient
    follower, leader = Redirector(), RegisterServer()
    nodes = {"n1": ("127.0.0.1", follower.port), "n2": ("127.0.0.1", leader.port)}
    client = RaftClient("register", nodes, {"op_timeout": 0.5})
    write = Op(0, 0, 0, "invoke", "write", 1, node="n1")
    done = client.invoke(write)
    assert (done.type, done.node) == ("ok", "n2") and follower.seen == 1
    for _ in range(5):
        assert client.invoke(write).node == "n2"
    assert follower.seen == 1                       # straight to the leader now
    # shutdown, not just close: close leaves a socket that a thread is blocked
    # accepting on still listening.
    leader.sock.shutdown(socket.SHUT_RDWR)
    leader.sock.close()
    client._drop("n2")
    assert client.invoke(write).type == "fail"      # refused: certainly not applied
    client.invoke(write)
    assert follower.seen == 2                       # back to the node it was given
    client.close()


def test_the_consistency_option_is_recorded_on_each_write(tmp_path):
    history = run_pool(tmp_path, RegisterServer(), ops(40), seconds=20.0,
                       options={"op_timeout": OP_TIMEOUT_S, "consistency": "quorum,leader"})
    writes = [op for op in history if op.f == "write" and op.type == "ok"]
    reads = [op for op in history if op.f == "read" and op.type == "ok"]
    # Mixed by the written value: both levels appear; reads are always quorum.
    assert writes and {op.level for op in writes} == {"quorum", "leader"}
    assert reads and {op.level for op in reads} == {None}


def test_start_waits_until_every_worker_is_ready(tmp_path):
    # Each worker's interpreter starts a second late (a loaded machine takes
    # seconds): start() returns only once every worker said it is ready, so
    # no op is timed from an invoke that nothing could send yet.
    pool = ClientPool(2, "raft", "register", {"n1": ("127.0.0.1", RegisterServer().port)},
                      {"op_timeout": OP_TIMEOUT_S}, tmp_path / "workers",
                      preexec_fn=lambda: time.sleep(1.0))
    rec = Recorder(tmp_path / "history.msgpack")
    try:
        pool.start(rec)
        assert [w.ready for w in pool.workers] == [True, True]
    finally:
        pool.close(rec)
        rec.close()


def test_a_worker_that_is_not_ready_gets_no_op(tmp_path):
    server = RegisterServer()
    rec = Recorder(tmp_path / "history.msgpack")
    pool = ClientPool(3, "raft", "register", {"n1": ("127.0.0.1", server.port)},
                      {"op_timeout": OP_TIMEOUT_S}, tmp_path / "workers")
    try:
        pool.start(rec)
        pool.workers[1].ready = False   # as a replacement worker still starting
        pool.run(ops(30), rec, time.monotonic() + POOL_DEADLINE_S, None, random.Random(0))
    finally:
        pool.close(rec)
        rec.close()
    history = read_history(tmp_path / "history.msgpack").ops
    assert sum(op.type == "invoke" for op in history) == 30
    assert {op.process for op in history} == {0, 2}


def test_an_op_pinned_to_a_node_is_asked_of_that_node_first(tmp_path):
    """Final reads ask every node: a client that learned the leader still
    sends a pinned op to its own node (which may redirect it); unpinned ops
    go straight to the leader it learned."""
    follower, leader = Redirector(), RegisterServer()
    nodes = {"n1": ("127.0.0.1", follower.port), "n2": ("127.0.0.1", leader.port)}
    rec = Recorder(tmp_path / "history.msgpack")
    pool = ClientPool(1, "raft", "register", nodes, {"op_timeout": OP_TIMEOUT_S},
                      tmp_path / "workers", node_choice="sticky")
    pool.start()
    try:
        unpinned = [OpSpec("write", 1), OpSpec("read"), OpSpec("read")]
        pool.run(iter(unpinned), rec, time.monotonic() + POOL_DEADLINE_S, None,
                 random.Random(0))
        learned = follower.seen                   # 1: the first op's redirect
        pinned = [OpSpec("read", node="n1"), OpSpec("read", node="n1")]
        pool.run(iter(pinned), rec, time.monotonic() + POOL_DEADLINE_S, None, random.Random(0))
    finally:
        pool.close(rec)
        rec.close()
    history = read_history(tmp_path / "history.msgpack").ops
    assert learned == 1
    assert follower.seen == learned + 2
    assert [op.type for op in history if op.type != "invoke"] == ["ok"] * 5
