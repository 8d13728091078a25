"""What a fault is, for the faults and for the registry that names them: the
`Fault` interface, the context a fault factory gets, and fault spec names.
Below every fault module and the registry (nemesis.base), so none of them
imports another back."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from checkers.faults import WAITED_FOR_LEADER
from nodes.db import DB, NodeSpec


class ClusterControl(Protocol):
    """What a fault may do to the cluster under test: the harness's running
    cluster (`harness.run.cluster.Cluster`) is one. Names are node names; every
    action returns the nodes it acted on (an empty list: nothing to do)."""

    db: DB
    nodes: list[NodeSpec]
    paused: set[str]

    @property
    def names(self) -> list[str]: ...

    @property
    def hub_netns(self) -> str: ...

    def netns_of(self, name: str) -> str: ...

    def ip_of(self, name: str) -> str: ...

    def spec(self, name: str) -> NodeSpec: ...

    def in_hub(self) -> AbstractContextManager[None]:
        """This thread (and threads it starts) in the clients' namespace."""
        ...

    def is_running(self, name: str) -> bool: ...

    def start(self, names: Sequence[str], fresh: bool = False) -> list[str]: ...

    def kill(self, names: Sequence[str],
             on_signalled: Callable[[], None] | None = None) -> list[str]:
        """SIGKILL the nodes; `on_signalled` runs once every signal is out,
        before the processes are waited for."""
        ...

    def pause(self, names: Sequence[str]) -> list[str]: ...

    def resume(self, names: Sequence[str]) -> list[str]: ...

    def leader(self) -> str | None: ...


class Fault(Protocol):
    name: str

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]: ...

    def heal(self, cluster: ClusterControl) -> dict[str, Any]: ...


@runtime_checkable
class SetsUp(Protocol):
    """A fault that prepares before the schedule starts (a trigger starts its
    watcher); called once with the running cluster."""

    def setup(self, cluster: ClusterControl) -> None: ...


@runtime_checkable
class TearsDown(Protocol):
    """A fault that cleans up after its last heal (a trigger stops its watcher)."""

    def teardown(self, cluster: ClusterControl) -> None: ...


@runtime_checkable
class InForceAfterHeal(Protocol):
    """A fault a heal may leave partly in force (a removed member the heal
    could not add back): while `in_force()`, the runner counts it as not
    healed, so the run's final heal (recorded) heals it again."""

    def in_force(self) -> bool: ...


# (fault spec, params[, "inject" or "heal"[, note]]) -> the future of its op:
# the runner's queue for faults a trigger or a composition sets off.
FireFn = Callable[..., Future]


@runtime_checkable
class Fires(Protocol):
    """A fault that sets off other faults (triggers, compositions): the runner
    gives it `fire(spec, params, action)`, which runs one as its own op."""

    fire: FireFn | None


@dataclass
class FaultContext:
    """What a fault factory may need from the run: the DB adapter, and
    anything else a run prepared (e.g. `mounts`: node -> LazyFS)."""
    db: Any = None
    variant: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


FaultFactory = Callable[[FaultContext], Fault]

# What a fault kind may need the harness to prepare around the nodes before
# they start (FaultKind.host; nemesis.host makes them).
CLOCK_FILES, CGROUP = "clock-files", "cgroup"


def split_spec(spec: str) -> tuple[str, str | None]:
    """`"partition:one-way"` -> (`"partition"`, `"one-way"`)."""
    name, _, variant = spec.partition(":")
    return name, (variant or None)


Planner = Callable[[random.Random, Sequence[str], str | None], dict[str, Any]]


def one_node(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    """Disk faults and plug-ins: one node, chosen when planned so the timeline shows it."""
    return {"nodes": [rng.choice(sorted(nodes))]}


@dataclass(frozen=True)
class FaultKind:
    """A fault as the registry knows it, with its metadata.

    heal_f: f of the op that heals it (contracts.md, "Nemesis ops").
    variants: what may follow the colon (`partition:one-way`), read from the
        fault's module when asked; default: what it does without one.
    instant: injecting it also heals it (the schedule plans no heal).
    needs_lazyfs: the nodes' data dirs must be LazyFS mounts (made before they start).
    fires_on_events: armed by the schedule, fired by node event lines (the
        system's own triggers, declared in its package).
    replays_live: its firing is several steps, each waiting for a node event
        (a vote line, then a Leader line), which no replay at the recorded
        times can redo (in another run the election comes a few hundred ms
        sooner or later): a replay arms it again, its recorded firings (each
        naming it in its params' `trigger`) dropped, as `--live-triggers`
        does for every trigger.
    planner: what an inject will do (its params), from the event's rng, the
        node names and the variant; pure, so the schedule shows and replays it.
    host: what the harness must prepare around the nodes before they start
        (nemesis.host: "clock" control files, a "cgroup" per node); the
        default hunt takes such a fault only where this host can prepare it
        (harness.run.config.hunt_choice), as it changes how every node runs.
    """

    name: str
    factory: FaultFactory
    help: str
    heal_f: str = "heal"
    variants: Callable[[], tuple[str, ...]] = tuple
    default: str = ""
    instant: bool = False
    needs_lazyfs: bool = False
    fires_on_events: bool = False
    replays_live: bool = False
    planner: Planner = one_node
    host: str = ""

    def __call__(self, ctx: FaultContext) -> Fault:
        return self.factory(ctx)

    def describe(self) -> str:
        """One line for the CLI's help and `faultline systems`."""
        variants = self.variants()
        shown = f"[:{'|'.join(variants)}]" if variants else ""
        default = f" (without one: {self.default})" if self.default else ""
        return f"{self.name}{shown}: {self.help}{default}"


def plan_in(kinds: Mapping[str, FaultKind], spec: str, rng: random.Random,
            nodes: Sequence[str]) -> dict[str, Any]:
    """Pure: what fault `spec` will do, decided from the rng and the node names
    by its kind's planner in `kinds` (a fault they do not know: one node)."""
    name, variant = split_spec(spec)
    kind = kinds.get(name)
    return (kind.planner if kind is not None else one_node)(rng, nodes, variant)


# How long a fault or a composition's step waits for an election (the
# adapter's leader to change, or one to exist): far longer than the election
# timeouts the systems we test run with (a second or two at most: each
# system's `Timers`).
ELECTION_WAIT_S = 6.0
# How often the adapter is asked meanwhile.
LEADER_POLL_S = 0.1


def await_leader(cluster: ClusterControl, timeout: float | None = None,
                 clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], None] | None = None) -> tuple[str | None, float]:
    """The leader the adapter names, asked every LEADER_POLL_S for up to
    `timeout` s (default ELECTION_WAIT_S; None after it), and how long it
    waited: a fault aimed at the leader that a schedule draws within a second
    of a heal that restarted the last one would otherwise find none on a
    loaded machine, and do nothing (a fault that takes a voter's state with
    its leader found none 0.85 s after such a heal at load 16)."""
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    limit = ELECTION_WAIT_S if timeout is None else timeout
    started = clock()
    leader = cluster.leader()
    if leader is not None:
        return leader, 0.0   # no wait: the time of one ask is not one
    while leader is None and clock() - started < limit:
        sleep(LEADER_POLL_S)
        leader = cluster.leader()
    return leader, round(clock() - started, 3)


class NoLeader(RuntimeError):
    """A fault aimed at the leader found none within its wait: it did nothing
    (the run records it failed and goes on)."""


# A leader-aimed fault that aimed live records how long it waited for the
# leader; a replay passes it back (harness.run.replay.RESOLVED_KEYS) with the
# recorded nodes and sleeps it (`replayed_wait`), so it acts when its original
# did, on the node its original hit, never asking the adapter again.
# What a replay passes to a leader-aimed inject whose original found no leader
# (it failed with NoLeader): it fails so again at once, neither waiting nor
# aiming at whoever leads in the replay.
FOUND_NO_LEADER = "found_no_leader"


def aim_at_leader(cluster: ClusterControl, params: Mapping[str, Any], what: str = "target"
                  ) -> tuple[str, float]:
    """The leader a leader-aimed fault hits now, waited for as `await_leader`
    does, and how long that took; none by then raises NoLeader (what such a
    fault always did when it found none at once)."""
    if params.get(FOUND_NO_LEADER):
        raise NoLeader(f"no leader to {what} (the run replayed found none)")
    leader, waited_s = await_leader(cluster)
    if leader is None:
        raise NoLeader(f"no leader to {what} (waited {waited_s:g} s)")
    return leader, waited_s


def replayed_wait(params: Mapping[str, Any]) -> float | None:
    """In a replay of a leader-aimed fault (its recorded nodes in `params`):
    sleep the wait its original recorded before acting, and return it for the
    replay's own record (a replay of the replay waits as long); None if it
    recorded none."""
    waited = params.get(WAITED_FOR_LEADER)
    if not isinstance(waited, (int, float)):
        return None
    if waited > 0:
        time.sleep(min(float(waited), ELECTION_WAIT_S + LEADER_POLL_S))
    return float(waited)


@dataclass(frozen=True)
class Aimed:
    """The nodes a node-targeted fault acts on, and how long it waited for the
    leader (None: it did not aim at the leader live: planned or replayed)."""

    nodes: list[str]
    waited_s: float | None = None

    def recorded(self) -> dict[str, Any]:
        """What its op value adds, for a replay (`WAITED_FOR_LEADER`)."""
        return {} if self.waited_s is None else {WAITED_FOR_LEADER: self.waited_s}


def planned_or_leader(cluster: ClusterControl, params: Mapping[str, Any]) -> Aimed:
    """The nodes a plan named, or (a `,leader` variant) the node leading now,
    waited for (`aim_at_leader`); the fault records it in its op value, so a
    replay hits the same node."""
    if params.get("nodes"):
        return Aimed(list(params["nodes"]), replayed_wait(params))
    leader, waited_s = aim_at_leader(cluster, params)
    return Aimed([leader], waited_s)
