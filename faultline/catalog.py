"""What faultline offers, read from the registries (nothing here names a workload
or a fault): each workload with its options, each fault with what it needs from
a system, and which needs a given system leaves unmet."""

from __future__ import annotations

from dataclasses import dataclass

from faultline.system import System
from nemesis.base import CLOCK_FILES, FAULTS, LAZYFS_FAULTS, TRIGGER_FAULTS, split_spec
from nodes.abilities import PreloadClock
from workloads.options import Option
from workloads.registry import WORKLOADS

# What a fault can need: "events" (it fires on a node's event lines, so the
# system must leave them), "lazyfs" (the nodes' data dirs on LazyFS mounts),
# "preload-clock" (its nodes read the clock through libc: nodes.abilities.PreloadClock),
# and what the harness prepares around the nodes (nemesis.host: a "cgroup" each).
EVENTS, LAZYFS, PRELOAD_CLOCK = "events", "lazyfs", "preload-clock"


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    options: dict[str, Option]       # --client-option key -> kind, default, help
    description: str


@dataclass(frozen=True)
class FaultInfo:
    name: str
    needs: frozenset[str]
    description: str                 # variants, what it does, its default


def workloads() -> list[WorkloadInfo]:
    return [WorkloadInfo(name, dict(m.OPTIONS),
                         " ".join((m.__doc__ or "").strip().split("\n\n")[0].split()))
            for name, m in sorted(WORKLOADS.items())]


def fault_needs(name: str) -> frozenset[str]:
    host = FAULTS[name].host if name in FAULTS else ""
    return frozenset({EVENTS} if name in TRIGGER_FAULTS else set()) | (
        {LAZYFS} if name in LAZYFS_FAULTS else set()) | (
        {PRELOAD_CLOCK} if host == CLOCK_FILES else {host} if host else set())


def faults() -> list[FaultInfo]:
    return [FaultInfo(name, fault_needs(name), kind.describe()) for name, kind in FAULTS.items()]


def artifacts_of(system: System) -> frozenset[str]:
    """What the system's nodes leave for checkers; read off the adapter class
    when `db` is one, so no adapter is built just to ask."""
    artifacts = getattr(system.db, "artifacts", None)
    if artifacts is None:
        artifacts = system.db().artifacts
    return frozenset(artifacts)


def unmet_needs(spec: str, system: System) -> frozenset[str]:
    """What fault `spec` (a name, maybe with a variant) needs that `system` lacks.
    LazyFS is the harness's to provide, so only node artefacts can be unmet."""
    needs = fault_needs(split_spec(spec)[0])
    return frozenset(n for n in needs if (n == EVENTS and EVENTS not in artifacts_of(system))
                     or (n == PRELOAD_CLOCK and not preload_clock_of(system)))


def preload_clock_of(system: System) -> bool:
    """Whether the system's node processes take an LD_PRELOAD clock, as its
    adapter declares (nodes.abilities.PreloadClock; undeclared: no)."""
    db = system.db if isinstance(system.db, type) else system.db()
    return isinstance(db, PreloadClock) and bool(db.clock_preload)
