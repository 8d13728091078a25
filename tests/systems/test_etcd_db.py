"""The etcd adapter: command line, readiness, leader, files; real members on loopback."""

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from nodes.db import NodeSpec
from nodes.etcd.db import INSTALL_HINT, EtcdDB
from nodes.etcd.local_cluster import running

needs_etcd = pytest.mark.skipif(EtcdDB().check_installed() is not None, reason=INSTALL_HINT)


def specs(tmp_path: Path, host: str = "10.9.0.2") -> list[NodeSpec]:
    return [NodeSpec(f"n{i}", host if i == 1 else f"10.9.0.{i + 1}", 7000 + 10 * i,
                     tmp_path / f"n{i}" / "data", tmp_path / f"n{i}") for i in (1, 2, 3)]


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_argv_binds_only_the_given_address(tmp_path):
    cluster = specs(tmp_path)
    argv = EtcdDB().argv(cluster[0], cluster, fresh=True)
    assert flag(argv, "--listen-client-urls") == "http://10.9.0.2:7010"
    assert flag(argv, "--advertise-client-urls") == "http://10.9.0.2:7010"
    assert flag(argv, "--listen-peer-urls") == "http://10.9.0.2:7011"
    assert flag(argv, "--initial-advertise-peer-urls") == "http://10.9.0.2:7011"
    assert flag(argv, "--initial-cluster") == (
        "n1=http://10.9.0.2:7011,n2=http://10.9.0.3:7021,n3=http://10.9.0.4:7031")
    assert flag(argv, "--data-dir") == str(cluster[0].data_dir)
    # Nothing else that could open a listener (metrics, pprof) is configured.
    assert not [a for a in argv if "metrics" in a or "pprof" in a]


def test_first_start_bootstraps_and_restarts_join(tmp_path):
    cluster = specs(tmp_path)
    db = EtcdDB()
    assert flag(db.argv(cluster[1], cluster, fresh=True), "--initial-cluster-state") == "new"
    assert flag(db.argv(cluster[1], cluster, fresh=False),
                "--initial-cluster-state") == "existing"


def test_boolean_options_use_equals(tmp_path):
    cluster = specs(tmp_path)
    for node in cluster:
        node.options = {"pre_vote": False, "election_ms": 500}
    argv = EtcdDB().argv(cluster[0], cluster, fresh=True)
    assert "--pre-vote=false" in argv
    assert flag(argv, "--election-timeout") == "500"


def test_check_installed_names_the_packages(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert EtcdDB().check_installed() == INSTALL_HINT


def test_nothing_answers_means_not_ready_and_no_leader(tmp_path):
    cluster = specs(tmp_path, host="127.0.0.1")
    for node in cluster:
        node.host, node.port = "127.0.0.1", 1   # nothing listens on port 1
    db = EtcdDB()
    assert db.is_ready(cluster[0]) is False
    assert db.leader(cluster) is None


class AnsweringDB(EtcdDB):
    """The adapter with the leader's answers given, no member running."""

    def __init__(self, answer: dict) -> None:
        super().__init__()
        self.answer = answer

    def leader(self, cluster):
        return "n1"

    def _post(self, node, path, body, timeout):
        if path.endswith("/member/list"):
            return {"members": [{"ID": str(i), "peerURLs": [f"http://{n.host}:{n.port + 1}"]}
                                for i, n in enumerate(self.cluster)]}
        return self.answer


@pytest.mark.parametrize("error, definite", [
    # The leader removed itself: the change applied, then it stopped.
    ("etcdserver: server stopped", False),
    ("etcdserver: request timed out", False),
    ("etcdserver: member not found", True),
])
def test_a_removal_answered_by_a_stopping_leader_is_in_doubt(tmp_path, error, definite):
    db = AnsweringDB({"error": error})
    db.cluster = specs(tmp_path)
    result = db.change_voters(db.cluster, "remove", "n1")
    assert result["ok"] is False and result["definite"] is definite


def test_dump_log_writes_nothing(tmp_path):
    node = specs(tmp_path)[0]
    EtcdDB().dump_log(node, tmp_path / "log.msgpack")
    assert not (tmp_path / "log.msgpack").exists()


@pytest.fixture
def etcd(tmp_path):
    with running(tmp_path) as c:
        yield c


def listening(pid: int) -> set[tuple[str, int]]:
    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    return {(c.laddr.ip, c.laddr.port) for p in procs for c in p.net_connections("inet")
            if c.status == psutil.CONN_LISTEN}


@pytest.mark.slow
@needs_etcd
def test_members_listen_only_on_their_client_and_peer_port(etcd):
    for node in etcd.specs:
        assert listening(etcd.procs[node.name].pid) == {("127.0.0.1", node.port),
                                                        ("127.0.0.1", node.port + 1)}


@pytest.mark.slow
@needs_etcd
def test_leader_is_one_member_and_data_files_exist(etcd):
    leader = etcd.wait_for_leader()
    assert leader in etcd.names
    for node in etcd.specs:
        files = EtcdDB().data_files(node)
        assert any(f.suffix == ".wal" for f in files)
        assert all(f.is_file() for f in files)


@pytest.mark.slow
@needs_etcd
def test_killed_leader_is_replaced_and_rejoins_from_its_data_dir(etcd):
    db = EtcdDB()
    old = etcd.wait_for_leader()
    etcd.kill(old)
    rest = [n for n in etcd.names if n != old]
    new = etcd.wait_for_leader(rest, timeout=15)  # raises past 15 s
    assert new != old
    etcd.start(old)   # not fresh: --initial-cluster-state existing, recovers its WAL
    etcd.wait_ready([old])
    assert db.is_ready(etcd.spec(old))
    assert db.leader(etcd.specs) in etcd.names


@pytest.mark.slow
@needs_etcd
def test_paused_member_is_not_ready(etcd):
    name = etcd.names[0]
    pid = etcd.procs[name].pid
    os.killpg(pid, signal.SIGSTOP)
    try:
        # Every thread of the Go process must have stopped, not just the first.
        deadline = time.monotonic() + 5
        while psutil.Process(pid).status() != psutil.STATUS_STOPPED:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.1)
        # A probe that hung on the stopped member would fail on the test's
        # time limit; no wall-clock assert here, which load could break.
        assert EtcdDB().is_ready(etcd.spec(name)) is False
    finally:
        os.killpg(pid, signal.SIGCONT)


def change(db: EtcdDB, cluster: list[NodeSpec], what: str, node: str) -> dict:
    """As the membership fault asks: "not now" answers are retried (etcd
    refuses changes until its members have been connected for a while)."""
    deadline = time.monotonic() + 30
    while True:
        result = db.change_voters(cluster, what, node)
        if result["ok"] or result["error"] not in (
                "not_caught_up", "timeout", "not_leader", "no_leader") \
                or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


@needs_etcd
@pytest.mark.slow
def test_member_remove_and_add_back_through_the_member_api(etcd):
    # What the membership fault does on etcd (nemesis/membership.py).
    db, cluster = etcd.db, etcd.specs
    gone = next(n for n in etcd.names if n != etcd.wait_for_leader())
    removed = change(db, cluster, "remove", gone)
    assert removed["ok"] and removed["voters"] == sorted(set(etcd.names) - {gone}), removed
    assert db.change_voters(cluster, "remove", gone)["error"] == "voter_not_found"
    # A removed member shuts itself down.
    proc = etcd.procs[gone]
    proc.wait(timeout=30)
    etcd.kill(gone)
    # Added back, it joins as a new member: empty data dir, the current members named.
    argv_before = db.argv(etcd.spec(gone), cluster, fresh=False)
    added = change(db, cluster, "add", gone)
    assert added["ok"] and added["voters"] == sorted(etcd.names), added
    assert not (etcd.spec(gone).data_dir / "member").exists()
    assert db.change_voters(cluster, "add", gone)["error"] == "duplicate_voter"
    assert flag(argv_before, "--initial-cluster-state") == "existing"
    etcd.start(gone)
    etcd.wait_ready([gone], timeout=60)


@pytest.mark.slow
@needs_etcd
def test_each_member_reports_the_workloads_keys_at_its_revision(etcd):
    import json
    import time

    from harness.run.node_state import agree
    from nodes.etcd.codec import b64, workload_key

    db = EtcdDB()
    leader = etcd.spec(etcd.wait_for_leader())
    for key, value in ((None, 1), ("r1", [2, 3]), ("other", 4)):
        assert "error" not in db._post(leader, "/v3/kv/put", {
            "key": b64(workload_key("register", key)), "value": b64(json.dumps(value))}, 5)
    assert "error" not in db._post(leader, "/v3/kv/put", {"key": b64("registers"),
                                                          "value": b64("x")}, 5)
    deadline = time.monotonic() + 20
    while True:
        states = {n.name: db.applied_state(n, "register") for n in etcd.specs}
        if agree(states) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert agree(states), states
    for state in states.values():
        # Another workload's key ("registers") is not one of ours.
        assert sorted(state["keys"], key=repr) == sorted(
            [[None, 1], ["r1", [2, 3]], ["other", 4]], key=repr)
        assert state["position"] >= 5
    etcd.kill(etcd.names[0])
    assert db.applied_state(etcd.spec(etcd.names[0]), "register") is None
