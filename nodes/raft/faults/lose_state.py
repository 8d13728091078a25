"""`lose-state`: a voter forgets the votes it gave (its quorum-state file
gone, the rest of its disk kept) just as an election needs it."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from nemesis.fault import (
    FOUND_NO_LEADER,
    WAITED_FOR_LEADER,
    ClusterControl,
    NoLeader,
    await_leader,
    replayed_wait,
)
from nodes.abilities import StateFiles
from nodes.raft.fault_rows import LOSE_STATE


class LoseStateFault:
    """`lose-state`: the leader goes down and, at the same moment, a follower
    loses its state files (the rest of its disk survives) and restarts at once;
    heal restarts the leader. The election that follows needs the follower's
    vote before it can have caught up with any leader: the moment a voter that
    forgot its votes must abstain (KIP-996, "Disk failure")."""

    name, heal_f = LOSE_STATE.name, LOSE_STATE.heal_f

    def __init__(self, db: Any) -> None:
        if not isinstance(db, StateFiles):
            raise ValueError("lose-state needs a db that names its nodes' state files")
        self.db: StateFiles = db
        self.down: list[str] = []

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        recorded = params.get("nodes")
        if isinstance(recorded, list) and len(recorded) == 2:
            # A replay: the leader and follower its original hit, when it hit them.
            (leader, node), waited_s = recorded, replayed_wait(params) or 0.0
        else:
            if params.get(FOUND_NO_LEADER):
                raise NoLeader("no leader and follower to aim at (the run replayed found none)")
            # Drawn soon after its last heal restarted the leader, it may find the
            # cluster still electing: it waits for the election rather than do nothing.
            leader, waited_s = await_leader(cluster)
            followers = sorted(n for n in cluster.names
                               if n != leader and cluster.is_running(n))
            if leader is None or not followers:
                raise NoLeader(f"no leader and follower to aim at (waited {waited_s} s)")
            node = rng.choice(followers)
        cluster.kill([leader, node])
        self.down = sorted(set(self.down) | {leader})
        removed = []
        for path in self.db.state_files(cluster.spec(node)):
            if path.exists():
                path.unlink()
                removed.append(str(path))
        cluster.start([node])
        return {"nodes": [leader, node], "leader": leader, "lost_state": node,
                "removed": removed, WAITED_FOR_LEADER: waited_s}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        names, self.down = self.down, []
        return {"nodes": cluster.start(names) if names else []}
