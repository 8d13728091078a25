"""Real node processes: consistency levels per write (Redpanda raft recovery
RFC) and operator voter changes (KIP-853 / KIP-1186) through the client port."""

from __future__ import annotations

import os
import signal
import time

import pytest

from nodes.raft.client import NodeClient
from nodes.raft.local_cluster import LocalCluster
from tests.raft.test_raft_process import wait_until

pytestmark = pytest.mark.slow




def signal_followers(cluster: LocalCluster, leader: str, sig: int) -> None:
    for name in cluster.names:
        if name != leader:
            os.killpg(cluster.procs[name].pid, sig)


@pytest.mark.parametrize("bug", [None, "leader-ack-as-quorum"])
def test_levels_ack_without_a_quorum_only_where_they_promise_less(tmp_path, bug):
    extra = ["--request-timeout-ms", "1500"] + (["--bug", bug] if bug else [])
    # Ticks of 200 ms: the leader's check quorum (15 ticks) outlasts the pause.
    with LocalCluster(tmp_path, size=3, tick_ms=200, extra_args=extra) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        with NodeClient(cluster.address(leader), timeout=5.0) as client:
            assert client.call("put", key="k", value=0).ok
            signal_followers(cluster, leader, signal.SIGSTOP)
            try:
                # No follower can flush: only the levels below quorum may ack.
                assert client.call("put", key="k", value=1, consistency="leader").ok
                assert client.call("append", log="q", value="a", consistency="none").ok
                quorum = client.call("put", key="k", value=2)
                if bug:
                    assert quorum.ok  # the bug: acked after the leader's append only
                else:
                    assert (quorum.ok, quorum.error, quorum.definite) == (False, "timeout", False)
                cas = client.call("cas", key="k", expect=1, value=3, consistency="leader")
                assert (cas.ok, cas.error) == (False, "bad_request")
            finally:
                signal_followers(cluster, leader, signal.SIGCONT)
            # Recovery replicates what the leader acked: it commits after all.
            wait_until(lambda: client.call("get", key="k").value == 2, what="k == 2")


def test_operator_adds_an_observer_and_removes_a_voter(tmp_path):
    with LocalCluster(tmp_path, size=4, voters=["n1", "n2", "n3"]) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader(among=["n1", "n2", "n3"])
        with NodeClient(cluster.address(leader), timeout=10.0) as client:
            assert client.call("put", key="k", value=1).ok
            status = wait_until(lambda: cluster.status("n4"), what="n4 status")
            assert "n4" not in status["voters"]
            wait_until(lambda: (cluster.status("n4") or {}).get("leader") == leader,
                       what="observer n4 follows the leader")
            time.sleep(0.3)
            added = client.call("add_voter", node="n4")
            assert added.ok, added
            assert added.value == {"voters": ["n1", "n2", "n3", "n4"]}
            again = client.call("add_voter", node="n4")
            assert (again.ok, again.error) == (False, "duplicate_voter")
            victim = next(n for n in ("n1", "n2", "n3") if n != leader)
            removed = client.call("remove_voter", node=victim)
            assert removed.ok and victim not in removed.value["voters"]
            wait_until(lambda: "n4" in (cluster.status("n4") or {}).get("committed_voters", []),
                       what="n4 learns it is a voter")
            assert client.call("put", key="k", value=2).ok
