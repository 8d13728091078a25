"""A plug-in that adds a fault and a checker of its own (tests/systems/test_plugin_extensions.py).

`freeze-followers`: SIGSTOP every node but the leader (the first node when
none leads), SIGCONT them at the heal: the leader keeps its role but can
commit nothing while its quorum is frozen.

`nemesis-errors`: a run is invalid when a fault it played failed (a nemesis
op completed with an error): what it meant to test did not happen.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from checkers.checker import Checker, Contributed, Options
from checkers.history import NEMESIS
from checkers.rundir import Run
from checkers.verdict import Verdict, verdict
from nemesis.fault import ClusterControl, Fault, FaultContext, FaultKind

FREEZE, THAW = "freeze-followers", "thaw-followers"


class FreezeFollowers:
    name, heal_f = FREEZE, THAW

    def __init__(self) -> None:
        self.frozen: list[str] = []

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        leader = cluster.leader() or sorted(cluster.names)[0]
        followers = sorted(n for n in cluster.names if n != leader)
        self.frozen = sorted(set(self.frozen) | set(cluster.pause(followers)))
        return {"nodes": list(self.frozen), "leader": leader}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        names, self.frozen = self.frozen, []
        return {"nodes": cluster.resume(names) if names else []}


def _freeze(ctx: FaultContext) -> Fault:
    if ctx.variant is not None:
        raise ValueError(f"{FREEZE} takes no variant")
    return FreezeFollowers()


def _leader_unknown(rng: random.Random, nodes: Any, variant: str | None) -> dict[str, Any]:
    """Who is frozen depends on who leads at inject time."""
    return {}


FAULTS = (FaultKind(FREEZE, _freeze, "SIGSTOP every node but the leader", heal_f=THAW,
                    planner=_leader_unknown),)


def check_nemesis_errors(r: Run, options: Options) -> Verdict:
    nemesis = [op for op in r.history.ops if op.process == NEMESIS and op.type == "info"]
    failed = [{"type": "fault-failed", "f": op.f, "error": op.error, "time": op.time}
              for op in nemesis if op.error]
    stats = {"nemesis_ops": len(nemesis), "failed": len(failed)}
    if not nemesis:
        return verdict("unknown", stats={**stats, "reason": "no fault was played"})
    return verdict(not failed, failed, stats)


NEMESIS_ERRORS = Checker("nemesis-errors", "run", check_nemesis_errors)
# Every run gets it once the plug-in is installed, as the raft store's invariants.
CHECKERS = (Contributed(NEMESIS_ERRORS, every_run=True),)
