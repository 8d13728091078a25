"""The built-in systems, registered like any other (pyproject's `faultline.systems`)."""

from __future__ import annotations

from faultline.system import System, clients_for
from nodes.etcd import db as etcd_db
from nodes.etcd.db import EtcdDB
from nodes.raft import bugs
from nodes.raft import db as raft_db
from nodes.raft.db import RaftDB
from nodes.raft.events import EVENT_KINDS as RAFT_EVENT_KINDS
from workloads.clients.etcd import EtcdClient
from workloads.clients.raft import RaftClient


def _check_raft_bugs(names: list[str]) -> None:
    bugs.validate(names)   # UnknownBug is a ValueError naming the known switches


RAFT = System(
    name=RaftDB.kind,
    db=RaftDB,
    # The raft node serves every workload faultline has.
    clients=clients_for(RaftClient),
    # Elections in a few hundred ms: faults show within a 30 s run.
    node_defaults={"tick_ms": 50},
    node_options=RaftDB.OPTIONS,
    check_bugs=_check_raft_bugs,
    description="faultline's KRaft-style store (nodes/raft), with bug switches",
    timers=raft_db.timers,
    events=RAFT_EVENT_KINDS,
)

ETCD = System(
    name=EtcdDB.kind,
    db=EtcdDB,
    clients=clients_for(EtcdClient),
    node_options=EtcdDB.OPTIONS,
    description="etcd 3.4 from Debian, through its JSON gRPC gateway",
    timers=etcd_db.timers,
)

SYSTEMS = (RAFT, ETCD)
# What a run tests unless told otherwise (harness.run.config).
DEFAULT = RAFT
