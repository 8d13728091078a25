"""Cluster: real node processes in their namespaces, killed, restarted, paused."""

from __future__ import annotations

import os
import random
import time
import uuid
from pathlib import Path

import psutil
import pytest
from echo_db import EchoDB, echo

from harness.run import cluster as cluster_mod
from harness.run.cluster import Cluster, ClusterError, NeedsRootError, check_privileges
from harness.run.resources import NETNS_DIR, read_journal

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def make_cluster(tmp_path: Path, names: list[str], db: EchoDB | None = None) -> Cluster:
    run_id = f"tcl{uuid.uuid4().hex[:8]}"
    return Cluster(tmp_path / run_id, db or EchoDB(), names, run_id,
                   state_dir=tmp_path / "state")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_privilege_error_is_one_sentence(monkeypatch) -> None:
    monkeypatch.setattr(cluster_mod, "effective_caps", lambda: 0)
    with pytest.raises(NeedsRootError) as e:
        check_privileges()
    message = str(e.value)
    assert "root" in message and "CAP_NET_ADMIN" in message
    assert message.count(". ") == 0 and message.endswith(".")


@needs_root
@pytest.mark.slow
def test_kill_restart_pause_resume(tmp_path: Path) -> None:
    with make_cluster(tmp_path, ["n1", "n2", "n3"]) as c:
        c.start_all(timeout=20)
        n1 = c.spec("n1")
        assert (n1.log_dir / "stdout.log").read_text().startswith("listening 10.77.0.10")
        pid, helper = c._procs["n1"].popen.pid, EchoDB.helper_pid(n1)

        assert c.kill(["n1"]) == ["n1"]
        assert gone(pid) and wait_for(lambda: gone(helper))  # the whole group
        assert not c.is_running("n1") and c.running() == ["n2", "n3"]
        with c.in_hub(), pytest.raises(OSError):
            echo(n1.host, n1.port)

        assert c.start(["n1"]) == ["n1"]
        c.wait_ready(["n1"], timeout=20)
        starts = EchoDB.starts(n1)
        assert len(starts) == 2 and starts[0].endswith("fresh=True")
        assert starts[1].endswith("fresh=False")  # same data dir, not fresh

        n2 = c.spec("n2")
        helper2 = EchoDB.helper_pid(n2)
        assert c.pause(["n2"]) == ["n2"] and c.paused == {"n2"}
        assert wait_for(lambda: psutil.Process(helper2).status() == psutil.STATUS_STOPPED)
        with c.in_hub(), pytest.raises(OSError):  # accepted by the kernel, never answered
            echo(n2.host, n2.port, timeout=0.3)
        assert c.resume(["n2"]) == ["n2"] and not c.paused
        with c.in_hub():
            assert echo(n2.host, n2.port, timeout=2) == b"ping\n"
        assert c.leader() == "n1"

        # Killing a paused node works too.
        c.pause(["n3"])
        assert c.kill(["n3"]) == ["n3"] and not c.paused
        live_pids = [np.popen.pid for np in c._procs.values()]
        namespaces = c.topology.namespaces()
        journal = c.run_dir / "resources.jsonl"
        data_root = n1.data_dir.parent
    assert all(gone(p) for p in live_pids)
    assert not any((NETNS_DIR / n).exists() for n in namespaces)
    assert not data_root.exists()
    assert read_journal(journal).live == []
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").iterdir())


@needs_root
@pytest.mark.slow
def test_two_clusters_at_once(tmp_path: Path) -> None:
    with make_cluster(tmp_path, ["n1", "n2"]) as a, make_cluster(tmp_path, ["n1", "n2"]) as b:
        a.start_all(timeout=20)
        b.start_all(timeout=20)
        a.kill(["n1"])
        with b.in_hub():
            assert echo(b.ip_of("n1"), 7000, timeout=2) == b"ping\n"
        with a.in_hub(), pytest.raises(OSError):
            echo(a.ip_of("n1"), 7000)


@needs_root
@pytest.mark.slow
def test_node_that_exits_is_reported(tmp_path: Path) -> None:
    class BrokenDB(EchoDB):
        def argv(self, node, cluster, fresh):  # type: ignore[no-untyped-def]
            return ["python3", "-c", "import sys; sys.exit('no such option')"]

    with make_cluster(tmp_path, ["n1"], BrokenDB()) as c:
        with pytest.raises(ClusterError, match="exited before it was ready"):
            c.start_all(timeout=10)
        assert "no such option" in (c.spec("n1").log_dir / "stderr.log").read_text()


@needs_root
@pytest.mark.slow
def test_raft_nodes_under_kill_and_leader_isolation(tmp_path: Path) -> None:
    from nemesis.partition import PartitionFault
    from nodes.raft.db import RaftDB

    run_id = f"tcr{uuid.uuid4().hex[:8]}"
    with Cluster(tmp_path / run_id, RaftDB(), ["n1", "n2", "n3"], run_id,
                 state_dir=tmp_path / "state") as c:
        c.start_all(timeout=60)
        old = c.leader()
        assert old in c.names
        fault = PartitionFault("isolate-leader")
        fault.setup(c)
        try:
            value = fault.inject(c, random.Random(0), {"shape": "isolate-leader"})
            assert value["nodes"] == [old]
            # The majority side elects someone else (it leads in a higher epoch).
            assert wait_for(lambda: c.leader() not in (None, old), timeout=30)
            fault.heal(c)
        finally:
            fault.teardown(c)
        leader = c.leader()
        assert leader is not None
        assert c.kill([leader]) == [leader]
        c.start([leader])
        c.wait_ready(timeout=60)
        assert "start" in (c.spec(leader).log_dir / "stdout.log").read_text()


@needs_root
def test_each_node_gets_the_shared_options_and_its_own(tmp_path: Path) -> None:
    run_id = f"tcl{uuid.uuid4().hex[:8]}"
    with Cluster(tmp_path / run_id, EchoDB(), ["n1", "n2"], run_id, state_dir=tmp_path / "state",
                 node_options={"tick_ms": 50},
                 per_node_options={"n1": {"seed": 7}, "n2": {"seed": 8}}) as c:
        assert c.spec("n1").options == {"tick_ms": 50, "seed": 7}
        assert c.spec("n2").options == {"tick_ms": 50, "seed": 8}
