"""redis-py connections as a test needs them: short timeouts and no retries
(a retried write would be a second, unrecorded attempt)."""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def connect(host: str, port: int, timeout: float, connect_timeout: float) -> redis.Redis:
    return redis.Redis(host=host, port=port, socket_timeout=timeout,
                       socket_connect_timeout=connect_timeout,
                       retry=Retry(NoBackoff(), 0), retry_on_error=[])
