"""The membership fault's retry of a member a heal failed to add back, on
real etcd members (loopback, no namespaces): etcd refuses the first add
(no quorum), a later heal adds the member back and it serves again."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from nemesis import membership
from nemesis.fault import FaultContext
from nodes.db import NodeSpec
from nodes.etcd.db import INSTALL_HINT, EtcdDB
from nodes.etcd.local_cluster import LocalEtcdCluster, running

needs_etcd = pytest.mark.skipif(EtcdDB().check_installed() is not None, reason=INSTALL_HINT)


class LocalControl:
    """The part of the harness's cluster control the membership fault uses,
    over members on loopback (the harness's own needs namespaces and root)."""

    def __init__(self, etcd: LocalEtcdCluster) -> None:
        self.etcd, self.db = etcd, etcd.db
        self.nodes: list[NodeSpec] = etcd.specs
        self.paused: set[str] = set()

    @property
    def names(self) -> list[str]:
        return list(self.etcd.names)

    @contextmanager
    def in_hub(self) -> Iterator[None]:
        yield

    def is_running(self, name: str) -> bool:
        proc = self.etcd.procs.get(name)
        return proc is not None and proc.poll() is None

    def kill(self, names: Sequence[str],
             on_signalled: Callable[[], None] | None = None) -> list[str]:
        for name in names:
            self.etcd.kill(name)
        return list(names)

    def start(self, names: Sequence[str], fresh: bool = False) -> list[str]:
        for name in names:
            self.etcd.start(name)
        return list(names)

    def leader(self) -> str | None:
        return self.db.leader(self.nodes)


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[LocalEtcdCluster]:
    with running(tmp_path) as c:
        yield c


def members(etcd: LocalEtcdCluster, at: str) -> list[str]:
    listed = etcd.db._post(etcd.spec(at), "/v3/cluster/member/list", {}, 5) or {}
    return sorted(m.get("name") or "?" for m in listed.get("members") or [])


@needs_etcd
@pytest.mark.slow
def test_a_member_etcd_refused_to_take_back_is_added_by_the_next_heal(etcd, monkeypatch):
    control = LocalControl(etcd)
    fault = membership.membership_fault(FaultContext(etcd.db))
    leader = etcd.wait_for_leader()
    gone, other = [n for n in etcd.names if n != leader]
    value = fault.inject(control, random.Random(0), {"nodes": [gone]})
    assert value["ok"] and value["voters"] == sorted({leader, other}), value
    assert not control.is_running(gone)
    # One of the two voters left down: no quorum, so etcd cannot take gone back.
    etcd.kill(other)
    monkeypatch.setattr(membership, "RETRY_S", 3.0)
    first = fault.heal(control)
    assert first["nodes"] == [] and list(first["failed"]) == [gone], first
    assert fault.in_force() and not control.is_running(gone)
    etcd.start(other)
    etcd.wait_for_leader([leader, other], timeout=30)
    # etcd refuses an add until its members have been connected for a while:
    # longer "not now" retries than a run's, the point here being the retry.
    monkeypatch.setattr(membership, "RETRY_S", 30.0)
    second = fault.heal(control)
    assert second["nodes"] == [gone] and second["retried"] == [gone], second
    assert second["failed"] == {} and not fault.in_force()
    etcd.wait_ready([gone], timeout=60)
    assert members(etcd, leader) == sorted(etcd.names)
    assert etcd.db.applied_state(etcd.spec(gone), "register") is not None
