"""NATS JetStream (Debian's nats-server), tested by faultline through its public API only."""

from faultline import System, clients_for
from faultline_nats.client import NatsClient
from faultline_nats.db import NatsDB

NATS = System(
    name=NatsDB.kind,
    db=NatsDB,
    clients=clients_for(NatsClient),
    node_options={},
    description=("NATS JetStream (Debian's nats-server): a cluster, one R3/R5 stream, "
                 "a subject per log"),
)
