"""The run's network world: hub + bridge + node namespaces, nothing in the host's."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from harness.run.resources import NETNS_DIR, ResourceLog, read_journal
from nemesis.netns import Topology, in_netns, popen_in_netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines()}


def netns_inode(name: str) -> int:
    return os.stat(NETNS_DIR / name).st_ino


@pytest.fixture
def topology_factory(tmp_path: Path):
    made: list[Topology] = []

    def make(names: list[str]) -> Topology:
        run_id = f"tnet{uuid.uuid4().hex[:8]}"
        log = ResourceLog(tmp_path / run_id / "resources.jsonl", run_id, tmp_path / "state")
        topo = Topology(run_id, names, log)
        made.append(topo)
        topo.build()
        return topo

    yield make
    for topo in made:
        topo.teardown()


def listen_in(netns_name: str, host: str) -> socket.socket:
    with in_netns(netns_name):
        srv = socket.create_server((host, 0))
    srv.settimeout(2)
    return srv


def test_two_topologies_at_once_are_separate_worlds(topology_factory) -> None:
    before = root_links()
    a = topology_factory(["n1", "n2", "n3"])
    b = topology_factory(["n1", "n2", "n3"])
    assert a.hub != b.hub and set(a.netns.values()).isdisjoint(b.netns.values())
    assert a.ips == b.ips  # same fixed subnet, separate worlds
    # A server in run a's n2 is reachable from a's hub...
    srv = listen_in(a.netns["n2"], a.ips["n2"])
    port = srv.getsockname()[1]
    with in_netns(a.hub), socket.create_connection((a.ips["n2"], port), timeout=2) as c:
        conn, _ = srv.accept()
        c.sendall(b"x")
        assert conn.recv(1) == b"x"
        conn.close()
    # ...but not from run b's hub, though the address is the same.
    with in_netns(b.hub), pytest.raises(OSError):
        socket.create_connection((b.ips["n2"], port), timeout=0.5)
    srv.close()
    # Nothing landed in the host's namespace.
    assert root_links() == before


def test_nodes_reach_each_other_over_the_bridge(topology_factory) -> None:
    topo = topology_factory(["a", "b"])
    srv = listen_in(topo.netns["b"], topo.ips["b"])
    port = srv.getsockname()[1]
    with in_netns(topo.netns["a"]):
        c = socket.create_connection((topo.ips["b"], port), timeout=2)
    conn, peer = srv.accept()
    assert peer[0] == topo.ips["a"]
    conn.close()
    c.close()
    srv.close()


def test_threads_started_in_hub_live_in_hub(topology_factory) -> None:
    topo = topology_factory(["n1"])
    seen: dict[str, int] = {}
    home = os.stat("/proc/thread-self/ns/net").st_ino

    def where() -> None:
        seen["thread"] = os.stat("/proc/thread-self/ns/net").st_ino

    with in_netns(topo.hub):
        t = threading.Thread(target=where)
        t.start()
        t.join()
    assert seen["thread"] == netns_inode(topo.hub)
    # And the calling thread is back where it was.
    assert os.stat("/proc/thread-self/ns/net").st_ino == home != seen["thread"]


def test_child_processes_start_in_the_namespace(topology_factory) -> None:
    topo = topology_factory(["n1"])
    child = popen_in_netns(topo.netns["n1"], ["sleep", "5"])
    try:
        assert os.stat(f"/proc/{child.pid}/ns/net").st_ino == netns_inode(topo.netns["n1"])
        # setns only: the child keeps our mount namespace (FUSE mounts stay visible).
        assert os.stat(f"/proc/{child.pid}/ns/mnt").st_ino == os.stat("/proc/self/ns/mnt").st_ino
    finally:
        child.kill()
        child.wait()


def test_teardown_removes_namespaces_and_journals_it(tmp_path: Path) -> None:
    run_id = f"tnet{uuid.uuid4().hex[:8]}"
    log = ResourceLog(tmp_path / "resources.jsonl", run_id, tmp_path / "state")
    topo = Topology(run_id, ["n1", "n2"], log)
    try:
        topo.build()
        kinds = sorted(r["kind"] for r in read_journal(tmp_path / "resources.jsonl").live)
        assert kinds == ["netns", "netns", "netns", "veth", "veth"]
    finally:
        topo.teardown()
    assert not any((NETNS_DIR / n).exists() for n in topo.namespaces())
    assert read_journal(tmp_path / "resources.jsonl").live == []
    log.close()
    assert not (tmp_path / "state" / f"{run_id}.jsonl").exists()
