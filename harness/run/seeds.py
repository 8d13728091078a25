"""Every random stream of a run, derived from the run's one seed by name.

A stream's seed is a pure function of (run seed, stream name, scheme): adding
a stream, or a stream drawing more numbers, never shifts another, and the
workload and the schedule no longer share one sequence. Replay rests on this:
a saved run.json records its scheme, and a run saved before schemes were
recorded (scheme 1) is replayed with the offsets it ran with.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

# What each stream drives.
STREAMS = {
    "workload": "the op generator",
    "companion": "the companion workload's op generator and which ops are its "
                 "(workloads.companion)",
    "schedule": "the nemesis timeline (each event then carries its own seed)",
    "node-choice": "which node a client process talks to",
    "pacing": "the jitter of the op rate",
    "nodes": "the nodes' own randomness (election timers), passed as node option `seed`; "
             "from scheme 3 each node draws its own (`Seeds.node`)",
}
# Scheme 1: the offsets runs used before streams had names (seed+1, seed+2).
OFFSETS_V1 = {"workload": 0, "schedule": 0, "node-choice": 1, "pacing": 2, "nodes": 0,
              "companion": 3}
# Scheme 2: streams by name. Scheme 3: the same streams, and a seed per node
# (under 1 and 2 every node of a run got the same one, so timers ran in step).
SCHEMES = (1, 2, 3)
SCHEME = 3


@dataclass(frozen=True)
class Seeds:
    seed: int
    scheme: int = SCHEME

    def of(self, stream: str) -> int:
        """The seed of one named stream (a non-negative 63-bit int in scheme 2)."""
        if stream not in STREAMS:
            raise KeyError(f"unknown random stream {stream!r}; streams: {', '.join(STREAMS)}")
        if self.scheme == 1:
            return self.seed + OFFSETS_V1[stream]
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown seed scheme {self.scheme!r}; known: {SCHEMES}")
        return self._named(stream)

    def node(self, name: str) -> int:
        """The seed of one node's own randomness (node option `seed`)."""
        if self.scheme < 3 or self.scheme not in SCHEMES:
            return self.of("nodes")   # refuses an unknown scheme
        return self._named(f"nodes/{name}")

    def _named(self, stream: str) -> int:
        digest = hashlib.sha256(f"faultline/{self.seed}/{stream}".encode()).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def rng(self, stream: str) -> random.Random:
        return random.Random(self.of(stream))
