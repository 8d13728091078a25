"""Faults as objects, the registry that names them, the composite nemesis,
and the executor that plays a schedule and records it into the history.

A fault object (the interface nemesis.disk also implements):

    name: str                                   # f of the op that injects it
    inject(cluster, rng, params) -> dict        # what was done, to which nodes
    heal(cluster) -> dict                       # undo everything it did; idempotent
    heal_f: str  (optional, else HEAL_F[name])  # f of the op that heals it
    setup(cluster) / teardown(cluster)          # optional

`rng` is seeded per event by the schedule, so a choice made at inject time
(which node, how many bytes) replays like one made in the schedule.
"""

from __future__ import annotations

import functools
import math
import queue
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from checkers.faults import (
    BANDWIDTH,
    CATCH_UP,
    CHURN,
    CLOCK,
    CLOCK_CUT,
    CPU,
    DISK,
    FLIP_FLOP,
    HUNT,
    KILL,
    KILL_NEW_LEADER,
    LAGGING_VOTERS,
    LEADER_ONE_WAY,
    LOSE_UNSYNCED,
    MEMBERSHIP,
    MEMORY,
    MINORITY_OUT,
    PACKET,
    PARTITION,
    PAUSE,
    STALE_QUORUM,
    STRESS,
    TRUNCATE,
    FaultOp,
)
from checkers.history import NEMESIS, NOOP, Op, noop_reason
from checkers.plugins import contributions
from nemesis import (
    clock,
    compose,
    disk,
    diskfault,
    hunter,
    membership,
    netquality,
    netshape,
    partition,
    pressure,
    process,
)
from nemesis.fault import (  # noqa: F401 (re-exported: the registry's vocabulary)
    CGROUP,
    CLOCK_FILES,
    ClusterControl,
    Fault,
    FaultContext,
    FaultFactory,
    FaultKind,
    Fires,
    InForceAfterHeal,
    NoLeader,
    Planner,
    SetsUp,
    TearsDown,
    one_node,
    split_spec,
)
from nemesis.label import fault_label


def _disk_truncate(ctx: FaultContext) -> Fault:
    return disk.TruncateFault(ctx.db)


def _disk_lose_unsynced(ctx: FaultContext) -> Fault:
    if "mounts" not in ctx.extras:
        raise ValueError(f"{LOSE_UNSYNCED.name} needs the nodes' data dirs on LazyFS mounts")
    return disk.LoseUnsyncedFault(ctx.extras["mounts"])


def _composed(op: FaultOp) -> FaultFactory:
    return compose.composed_fault(op.name)


def _clock_composed(op: FaultOp) -> FaultFactory:
    """A composition that sets clocks: refused, as `clock` is, where the nodes
    take no preloaded clock."""
    make = compose.composed_fault(op.name)

    def factory(ctx: FaultContext) -> Fault:
        clock.check_preload(ctx.db)
        return make(ctx)
    return factory


def _hunt(ctx: FaultContext) -> Fault:
    """The hunt plays the registry's faults: it is handed the table it sits in
    (importing this module from nemesis.hunter would close a circle)."""
    return hunter.hunt_fault(ctx, FAULTS)


def _no_variant(name: str) -> Planner:
    """Whom a composition hits depends on who leads when it acts."""
    def plan(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
        if variant is not None:
            raise ValueError(f"{name} takes no variant")
        return {}
    return plan


RANDOM_TARGETS = "one, a minority or a majority, drawn at random"
SIZES_DRAWN = "one, a minority, a majority or all, drawn at random"


def _kind(op: FaultOp, factory: FaultFactory, help: str, **metadata: Any) -> FaultKind:
    """A built-in fault: its name and heal op are its row of checkers.faults."""
    return FaultKind(op.name, factory, help, op.heal_f, **metadata)


# The one table of faults, every entry a plain reference to its module's
# factory, variants and planner. The fault modules are cheap to import (the
# heavy ones, pyroute2 and the LazyFS process, load where a run uses them).
FAULTS: dict[str, FaultKind] = {k.name: k for k in (
    _kind(KILL, process.kill_fault, "SIGKILL nodes",
          variants=lambda: process.ALL_TARGETS, default=RANDOM_TARGETS,
          planner=process.plan),
    _kind(PAUSE, process.pause_fault, "SIGSTOP nodes",
          variants=lambda: process.ALL_TARGETS, default=RANDOM_TARGETS,
          planner=process.plan),
    _kind(PARTITION, partition.partition_fault, "cut links on the bridge",
          variants=lambda: partition.SHAPES,
          default="a shape that cuts a link on this many nodes",
          planner=partition.plan),
    _kind(PACKET, netshape.packet_fault,
          "lose, duplicate, delay, reorder or corrupt packets on links "
          "(settings combine; links=<partition shape>|link|link-one-way|all; delay, jitter, "
          "reorder and corrupt need iptables and the netfilterqueue package here)",
          variants=lambda: ("loss=<P>", "duplicate=<P>", "delay=<D>[,jitter=<J>]",
                            "reorder=<P>", "corrupt=<P>"),
          default="loss=10 on one node's links (P: percent; D, J: ms)",
          planner=netquality.plan_packet),
    _kind(BANDWIDTH, netshape.bandwidth_fault,
          "cap each link's rate (HTB; links= as packet)", variants=lambda: ("rate=<R>",),
          default="rate=1mbit on one node's links",
          planner=netquality.plan_bandwidth),
    _kind(TRUNCATE, _disk_truncate, "truncate a node's data files",
          variants=lambda: disk.MODES, default="tail"),
    _kind(DISK, diskfault.disk_fault,
          "a node's disk fails (EIO), fills (ENOSPC), slows or flips bits (docs/faults.md)",
          variants=lambda: diskfault.VARIANTS, default=f"eio, p=0.1, {SIZES_DRAWN}",
          needs_lazyfs=True, planner=diskfault.plan),
    _kind(LOSE_UNSYNCED, _disk_lose_unsynced, "drop writes a node never fsynced",
          variants=lambda: process.SIZES, default=SIZES_DRAWN,
          instant=True, needs_lazyfs=True,
          planner=disk.plan_lose_unsynced),
    _kind(MEMBERSHIP, membership.membership_fault,
          "remove voters (KIP-853), added back at the heal",
          variants=lambda: membership.VARIANTS, default="remove",
          planner=membership.plan),
    _kind(FLIP_FLOP, _composed(FLIP_FLOP),
          "cut the leader off while clients write to it, heal it just after the others "
          "elect; 1-3 rounds", planner=_no_variant(FLIP_FLOP.name)),
    _kind(KILL_NEW_LEADER, _composed(KILL_NEW_LEADER),
          "take the leader down, its successor right after its election, and bring the "
          "old one back", planner=_no_variant(KILL_NEW_LEADER.name)),
    _kind(LEADER_ONE_WAY, _composed(LEADER_ONE_WAY),
          "drop the leader's outgoing traffic, held past the election it brings on",
          planner=_no_variant(LEADER_ONE_WAY.name)),
    _kind(CHURN, _composed(CHURN),
          "leader out and back as soon as another leads, again and again for 4-10 s",
          planner=_no_variant(CHURN.name)),
    _kind(CATCH_UP, _composed(CATCH_UP),
          "leave a follower far behind, then a fault while it catches up",
          planner=_no_variant(CATCH_UP.name)),
    _kind(MINORITY_OUT, _composed(MINORITY_OUT),
          "the largest minority of followers out for 10-15 s; the leader keeps a quorum",
          planner=_no_variant(MINORITY_OUT.name)),
    _kind(STALE_QUORUM, _composed(STALE_QUORUM),
          "a minority falls behind, then must elect with the fewest up-to-date nodes while "
          "the old leader's side takes writes it must truncate at the heal",
          planner=_no_variant(STALE_QUORUM.name)),
    _kind(LAGGING_VOTERS, _composed(LAGGING_VOTERS),
          "slow one to a largest minority of followers (packets held 50-150 ms: behind, "
          "still voting), then take the leader out while they lag",
          planner=_no_variant(LAGGING_VOTERS.name)),
    _kind(CLOCK_CUT, _clock_composed(CLOCK_CUT),
          "set the leader's clock behind and/or a quorum of followers' ahead (1-30 s), "
          "cut the leader off past the election, heal, then set the clocks right",
          planner=_no_variant(CLOCK_CUT.name), host=CLOCK_FILES),
    _kind(HUNT, _hunt,
          "the adaptive schedule: plays the other named faults (all the system can take "
          "if none are named) and the compositions, steering toward states not reached yet",
          planner=_no_variant(HUNT.name)),
    _kind(CLOCK, clock.clock_fault,
          "set a node's wall clock off through libfaketime",
          variants=lambda: ("skew=<S>", "bump=<S>", "strobe=<S>,period=<P>", "skew=<S>,leader"),
          default="a skew of 1-30 s either way", planner=clock.plan,
          host=CLOCK_FILES),
    _kind(CPU, pressure.cpu_fault,
          "limit nodes to a fraction of a core (SET: one|minority|majority|all)",
          variants=lambda: pressure.CPU_VARIANTS, default=f"limit=0.1, {SIZES_DRAWN}",
          planner=pressure.plan_cpu, host=CGROUP),
    _kind(MEMORY, pressure.memory_fault,
          "squeeze nodes' memory to a share of what each uses (SET as cpu's)",
          variants=lambda: pressure.MEMORY_VARIANTS,
          default=f"pressure=1.0, {SIZES_DRAWN}", planner=pressure.plan_memory,
          host=CGROUP),
    _kind(STRESS, pressure.stress_fault, "run stress-ng in nodes' cgroups (SET as cpu's)",
          variants=lambda: pressure.STRESS_VARIANTS, default=f"cpu=1, {SIZES_DRAWN}",
          planner=pressure.plan_stress, host=CGROUP),
)}


# The entry-point group through which a system or a plug-in adds faults (the
# bundled systems' own among them, pyproject.toml): each entry point names a
# FaultKind or an iterable of them.
GROUP = "faultline.faults"


def _add_fault(kind: FaultKind) -> None:
    """Add a fault kind; its name must be new. Only while the registry loads:
    the tables below are derived from FAULTS then."""
    if kind.name in FAULTS:
        raise ValueError(f"fault {kind.name!r} is registered twice")
    FAULTS[kind.name] = kind


def _load_entry_points() -> None:
    for kind in contributions(GROUP, FaultKind):
        _add_fault(kind)


# Before the tables below are derived from FAULTS.
_load_entry_points()


def _with(attr: str) -> frozenset[str]:
    return frozenset(name for name, kind in FAULTS.items() if getattr(kind, attr))


LAZYFS_FAULTS = _with("needs_lazyfs")
TRIGGER_FAULTS = _with("fires_on_events")
REPLAYS_LIVE_FAULTS = _with("replays_live")
INSTANT_FAULTS = _with("instant")
HEAL_F = {name: kind.heal_f for name, kind in FAULTS.items()}


def heal_f(fault: Fault) -> str:
    return getattr(fault, "heal_f", None) or HEAL_F.get(fault.name, "heal")


def needs_lazyfs(specs: Sequence[str]) -> bool:
    return any(split_spec(s)[0] in LAZYFS_FAULTS for s in specs)


def host_needs(specs: Sequence[str]) -> set[str]:
    """What the harness must prepare around the nodes for `specs` (FaultKind.host)."""
    kinds = (FAULTS.get(split_spec(s)[0]) for s in specs)
    return {k.host for k in kinds if k is not None and k.host}


def make_fault(spec: str, ctx: FaultContext | None = None) -> Fault:
    name, variant = split_spec(spec)
    if name not in FAULTS:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(FAULTS))}")
    base = ctx or FaultContext()
    return FAULTS[name](FaultContext(base.db, variant, base.extras))


class CompositeNemesis:
    """The contract's Nemesis: setup(cluster), invoke(op) -> op, teardown().

    Holds fault objects by spec; invoke dispatches on the op's f (an inject
    name, or a heal f, which heals every fault healed by that f).
    """

    def __init__(self, faults: Mapping[str, Fault], context: FaultContext | None = None) -> None:
        self.faults = dict(faults)
        self.cluster: ClusterControl | None = None
        self.context = context or FaultContext()

    @classmethod
    def from_specs(cls, specs: Sequence[str], ctx: FaultContext | None = None
                   ) -> CompositeNemesis:
        return cls({spec: make_fault(spec, ctx) for spec in specs}, ctx)

    def setup(self, cluster: ClusterControl) -> None:
        self.cluster = cluster
        for fault in self.faults.values():
            if isinstance(fault, SetsUp):
                fault.setup(cluster)

    def _control(self) -> ClusterControl:
        if self.cluster is None:
            raise RuntimeError("the nemesis acts on no cluster: setup(cluster) first")
        return self.cluster

    def inject(self, spec: str, rng: random.Random, params: Mapping[str, Any]) -> dict[str, Any]:
        return self.faults[spec].inject(self._control(), rng, params)

    def heal(self, spec: str) -> dict[str, Any]:
        return self.faults[spec].heal(self._control())

    def invoke(self, op: Op, rng: random.Random | None = None) -> Op:
        """Apply one nemesis invoke op; returns its info completion (error set on failure)."""
        rng = rng or random.Random(0)
        try:
            injectors = [s for s, f in self.faults.items() if f.name == op.f or s == op.f]
            if injectors:
                value: Any = self.inject(injectors[0], rng, op.value or {})
            else:
                healers = [s for s, f in self.faults.items() if heal_f(f) == op.f]
                if not healers:
                    raise ValueError(f"no fault is injected or healed by {op.f!r}")
                value = {s: self.heal(s) for s in healers}
            return Op(0, 0, NEMESIS, "info", op.f, value)
        except Exception as e:
            return Op(0, 0, NEMESIS, "info", op.f, op.value, error=_describe(e))

    def teardown(self) -> dict[str, str]:
        """Heal every fault, then let each clean up; returns errors by spec."""
        errors = {}
        for spec in self.faults:
            try:
                self.heal(spec)
            except Exception as e:
                errors[spec] = _describe(e)
        for spec, fault in self.faults.items():
            if isinstance(fault, TearsDown):
                try:
                    fault.teardown(self._control())
                except Exception as e:
                    errors.setdefault(spec, _describe(e))
        return errors


def lateness_s(behind_s: float) -> float:
    """Pure: how late an event ran, in s, rounded up to the ms (a bound, never
    an underestimate: a replay's check adds it to its tolerance); 0 if on time."""
    return math.ceil(round(max(0.0, behind_s) * 1000, 6)) / 1000


def played_after_stop(executed: Sequence[Any]) -> list[dict[str, Any]]:
    """Pure: the executed entries a runner played after its stop (`play_all`:
    a replay that ran past its time limit played them anyway)."""
    return [e for e in executed if isinstance(e, dict) and e.get("after_stop")]


def ran_late(executed: Sequence[Any]) -> str | None:
    """Pure: one line on a replay that ran past its time limit, or None."""
    late = played_after_stop(executed)
    if not late:
        return None
    most = max((e["late_s"] for e in late if isinstance(e.get("late_s"), (int, float))),
               default=0.0)
    return (f"the replay ran late: {len(late)} fault event{'s' if len(late) != 1 else ''} "
            f"still due at the time limit played after it, in order (up to {most:.3f} s "
            "after their recorded times)")


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class RecordFn(Protocol):
    """`harness.run.recorder.Recorder.record`'s shape."""

    def __call__(self, process: int | str, type: str, f: str, value: Any = None,
                 key: Any = None, node: str | None = None, error: str | None = None
                 ) -> Op: ...


class NemesisRunner:
    """Plays a schedule against a cluster, recording an invoke and an info op
    per event. A fault that fails is recorded with its error and the run goes
    on; at the end every fault injected since its last heal is healed (and
    recorded), then the nemesis tears down.

    Each scheduled event aims at its own absolute time (the run's start plus
    its `time`), never at a sleep after the one before, so lateness does not
    add up over a schedule. It can still be late: the events run one at a
    time (nemesis ops never overlap), so one due while an action runs (a node
    start on a loaded machine) waits for it, and a loaded machine wakes this
    thread late. Its executed entry says by how much (`late_s`).

    A live run's schedule ends at `stop` (its time limit): what is still
    pending is dropped, and the final heal heals what ran. A replay's
    (`play_all`) plays everything its original recorded, so one running late
    under load plays the events the stop finds pending too, in order and as
    soon as each falls due, before the final heal (each such entry says
    `after_stop`); only `abandon` (a run ending early) drops them."""

    def __init__(self, nemesis: CompositeNemesis, events: Sequence[Any], record: RecordFn,
                 clock: Callable[[], float] = time.monotonic, play_all: bool = False) -> None:
        self.nemesis = nemesis
        self.events = list(events)
        self.record = record
        self.clock = clock
        self.play_all = play_all
        self._abandoned = threading.Event()
        self.executed: list[dict[str, Any]] = []
        self._dirty: set[str] = set()
        self._start: float | None = None
        self._final = False
        # Faults a trigger fired (a system's trigger faults), run by this thread ahead of
        # the schedule so nemesis ops never overlap in the history.
        self._urgent: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        for fault in nemesis.faults.values():
            self._connect(fault)

    def _connect(self, fault: Fault) -> None:
        if isinstance(fault, Fires):
            fault.fire = self.fire

    def fire(self, spec: str, params: dict[str, Any], action: str = "inject",
             note: dict[str, Any] | None = None) -> Future[Op]:
        """Run the fault `spec` with `params` (or, `action` "heal", heal it) as
        soon as possible, from any thread; `note` is kept with its executed
        entry (why it ran). The future ends with its info op once it ran."""
        request = _Request(spec, params, action, note)
        self._urgent.put(request)
        return request.done

    def abandon(self) -> None:
        """The run ends early (an error, an interrupt): even a replay's runner
        drops what is pending once stopped, and heals."""
        self._abandoned.set()

    def run(self, stop: threading.Event, start: float | None = None) -> list[dict[str, Any]]:
        """Blocks until the schedule ends or `stop` is set (with `play_all`:
        until the schedule ends, or `abandon`); always heals at the end."""
        start = self.clock() if start is None else start
        self._start = start
        try:
            pending = list(self.events)
            while pending and not self._abandoned.is_set() \
                    and not (stop.is_set() and not self.play_all):
                wait = start + pending[0].time - self.clock()
                if wait > 0:
                    try:
                        request = self._urgent.get(timeout=min(wait, STOP_POLL_S))
                    except queue.Empty:
                        continue
                    self._serve(request, start)
                    continue
                event = pending.pop(0)
                stopped = stop.is_set()
                self.apply(event, due=start + event.time)
                if stopped:
                    self.executed[-1]["after_stop"] = True
        finally:
            self.heal_all()
        return self.executed

    def _serve(self, request: _Request, start: float) -> None:
        if self._final and request.action == "heal" and request.spec not in self._dirty:
            # A driver stopped by the final heal asks to heal what that heal
            # already healed: nothing to run, nothing for a replay to repeat.
            request.done.set_result(Op(0, 0, NEMESIS, "info", request.spec,
                                       {NOOP: "healed by the final heal"}))
            return
        try:
            op = self.apply_fired(request.spec, request.params, start, request.action,
                                  request.note)
        except Exception as e:
            # A fault that cannot even be built here (a variant this system
            # refuses) ran nothing: its driver hears why; the run goes on.
            op = Op(0, 0, NEMESIS, "info", request.spec, request.params, error=_describe(e))
        except BaseException as e:
            request.done.set_exception(e)
            raise
        request.done.set_result(op)

    def apply_fired(self, spec: str, params: dict[str, Any], start: float,
                    action: str = "inject", note: dict[str, Any] | None = None) -> Op:
        """A triggered fault, recorded as a plain inject (or heal) of `spec`
        (replay runs it so)."""
        if spec not in self.nemesis.faults:
            fault = make_fault(spec, self.nemesis.context)
            self.nemesis.faults[spec] = fault
            self._connect(fault)
            if isinstance(fault, SetsUp) and self.nemesis.cluster is not None:
                fault.setup(self.nemesis.cluster)
        return self.apply(_Fired(round(self.clock() - start, 3), action, spec, params, 0,
                                 note))

    def apply(self, event: Any, due: float | None = None) -> Op:
        """Run one event now; `due`: the clock time it aimed at (a scheduled
        event), from which its entry records how late it ran."""
        fault = self.nemesis.faults[event.fault]
        if event.action == "inject":
            f, value = fault.name, dict(event.params)
            self._dirty.add(event.fault)
            def act() -> Any:
                return self.nemesis.inject(event.fault, random.Random(event.seed), event.params)
        else:
            f, value = heal_f(fault), None
            self._dirty.discard(event.fault)
            def act() -> Any:
                return self.nemesis.heal(event.fault)
        done = self._recorded(f, value, act, event, due)
        if event.action != "inject" and isinstance(fault, InForceAfterHeal) \
                and fault.in_force():
            self._dirty.add(event.fault)
        return done

    def _recorded(self, f: str, value: Any, act: Callable[[], Any], event: Any,
                  due: float | None = None) -> Op:
        invoke = self.record(NEMESIS, "invoke", f, value)
        # Read after the invoke is stamped: never less than how late the stamp is.
        late = None if due is None else lateness_s(self.clock() - due)
        try:
            done = self.record(NEMESIS, "info", f, act())
        except NoLeader as e:
            # It failed, and it changed nothing: the checkers must not read
            # the time it spent waiting for a leader as a fault in force.
            done = self.record(NEMESIS, "info", f, {**(value or {}), NOOP: str(e)},
                               error=_describe(e))
        except Exception as e:
            done = self.record(NEMESIS, "info", f, value, error=_describe(e))
        self.executed.append({"time": invoke.time, "end": done.time, "f": f,
                              "fault": getattr(event, "fault", None),
                              "value": done.value, "error": done.error,
                              "noop": noop_reason(done.value),
                              "label": fault_label(f, done.value)})
        if late is not None:
            self.executed[-1]["late_s"] = late
        if isinstance(event, _Fired):
            # A heal a trigger fired mid-fault is not the run's final one: replay keeps it.
            self.executed[-1]["fired"] = True
            # What it was fired with: no plan holds a fired step's params, and
            # its recorded value need not name them (a step of the trigger's
            # own fault would replay as an arming).
            self.executed[-1]["params"] = dict(event.params)
            if event.note is not None:
                self.executed[-1]["note"] = event.note
        return done

    def heal_all(self) -> None:
        # A trigger may fire just before (or while) its final heal disarms it:
        # a power cut has then frozen mounts already, and only the fault it
        # queued restarts those nodes. So what was fired is applied and healed
        # too; a trigger's heal disarms it, so this ends (the bound is a guard).
        self._final = True
        for _ in range(MAX_FINAL_ROUNDS):
            for spec in sorted(self._dirty):
                fault = self.nemesis.faults[spec]
                self._recorded(heal_f(fault), None, functools.partial(self.nemesis.heal, spec),
                               _FinalHeal(spec))
            self._dirty.clear()
            fired = self._drain_fired()
            if not fired:
                break
            for request in fired:
                self._serve(request, self.clock() if self._start is None else self._start)
        self.nemesis.teardown()

    def _drain_fired(self) -> list[_Request]:
        fired = []
        while True:
            try:
                fired.append(self._urgent.get_nowait())
            except queue.Empty:
                return fired


@dataclass
class _FinalHeal:
    fault: str


@dataclass
class _Fired:
    time: float
    action: str
    fault: str
    params: dict[str, Any]
    seed: int
    note: dict[str, Any] | None = None


@dataclass
class _Request:
    """A fault fired from another thread, waiting for the runner's."""
    spec: str
    params: dict[str, Any]
    action: str = "inject"
    note: dict[str, Any] | None = None
    done: Future[Op] = field(default_factory=Future)


STOP_POLL_S = 0.02
MAX_FINAL_ROUNDS = 4
