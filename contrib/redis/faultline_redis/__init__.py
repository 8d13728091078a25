"""Redis 7 with replicas and Sentinel, tested by faultline through its public API only."""

from faultline import System, clients_for
from faultline_redis.client import RedisClient
from faultline_redis.db import OPTIONS, RedisDB

REDIS = System(
    name=RedisDB.kind,
    db=RedisDB,
    clients=clients_for(RedisClient),
    node_defaults={"down_after_ms": 1000, "failover_timeout_ms": 3000},
    node_options=OPTIONS,
    description="Redis 7 (Debian's redis-server): one primary, replicas, a Sentinel per node",
)
