"""MariaDB Galera Cluster (Debian's mariadb-server and galera-4), tested by
faultline through its public API only."""

from faultline import System, clients_for
from faultline_galera.client import GaleraClient
from faultline_galera.config import NODE_DEFAULTS, NODE_OPTIONS
from faultline_galera.db import GaleraDB

GALERA = System(
    name=GaleraDB.kind,
    db=GaleraDB,
    clients=clients_for(GaleraClient),
    node_defaults=NODE_DEFAULTS,
    node_options=NODE_OPTIONS,
    description=("MariaDB Galera Cluster (Debian's mariadb-server 10.11, galera-4): "
                 "every node takes SQL transactions, a table per workload"),
)
