"""A run's configuration: defaults, validation, and its run.json form.

Validation is pure and happens before anything starts, so a bad argument
costs one sentence and no namespaces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from checkers.faults import HUNT
from checkers.history import non_finite_in
from faultline import registry as systems
from faultline.catalog import EVENTS, PRELOAD_CLOCK, unmet_needs
from harness.run.bounds import CHECK_BUDGETS, RUN_FIELDS, THRESHOLD
from harness.run.clients import WORKER_MIB, max_concurrency
from harness.run.errors import UserError
from harness.run.seeds import SCHEME, SCHEMES
from nemesis.address_plan import MAX_NODES
from nemesis.base import FAULTS
from workloads import companion, register
from workloads.companion import COMPANION_OPS
from workloads.contract import ChecksOptions
from workloads.options import NODE_NAMES, kinds, option_kind
from workloads.registry import WORKLOADS

# Faults by name, from the nemesis registry.
NEMESES = tuple(FAULTS)


def _default_system() -> str:
    from faultline.builtin import DEFAULT  # builds the systems: only when a run is made
    return DEFAULT.name


class ConfigError(UserError, ValueError):
    """One sentence saying which argument is wrong and what is allowed."""


@dataclass
class RunConfig:
    db: str = field(default_factory=_default_system)
    workload: str = register.NAME
    # "hunt" alone: the hunting schedule over every fault the system can take
    # (validate names them); "hunt" with others: over those.
    nemesis: list[str] = field(default_factory=lambda: [HUNT.name])
    nodes: int = 3
    concurrency: int = 5
    rate: float = 200.0
    time_limit: float = 30.0
    seed: int = 0
    # How the run's random streams derive from `seed` (harness.run.seeds); a
    # run.json without it predates schemes: 1.
    seed_scheme: int = SCHEME
    nemesis_interval: float = 5.0     # mean seconds between fault events
    nemesis_min_duration: float = 0.0  # shortest fault, s (0: min(1, interval / 2))
    # Degrading families (packet, clock, disk, ...) each on a timeline of their
    # own, overlapping the others (nemesis.schedule.lanes).
    nemesis_overlap: bool = False
    recovery_time: float = 5.0        # quiet time after the final heal, before final reads
    final_read_timeout: float = 10.0
    op_timeout: float = 1.0
    node_choice: str = "random"       # or "sticky": client process -> one node
    bugs: list[str] = field(default_factory=list)
    node_options: dict[str, Any] = field(default_factory=dict)
    workload_options: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    consistency_model: str = "strict-serializable"
    lin_model: str | None = None
    # The linearizability search's budget: time_limit (s), memory_limit_mb
    # (null for none), stop_on_first_failure. A long single-register run
    # needs more than the default 60 s.
    lin_options: dict[str, Any] = field(default_factory=dict)
    schedule: list[dict[str, Any]] | None = None   # replay: the events to execute as they were
    # Replay with the trigger faults armed again, watching for their moment,
    # instead of silent with what they fired replayed at its recorded time
    # (harness.run.replay.replay_events drops those firings then).
    live_triggers: bool = False
    # The hunt: states (coverage signatures) earlier runs of a campaign reached,
    # so this one steers past them (harness.campaign.corpus).
    hunt_corpus: list[list[Any]] = field(default_factory=list)
    # The default hunt: the faults left out of its repertoire and why (this
    # host cannot prepare them, the system cannot take them), as resolved.
    hunt_left_out: dict[str, str] = field(default_factory=dict)
    # Share of ops a companion workload of another data type issues
    # (workloads.companion; 0: none); a run.json without it had none.
    companion_ops: float = COMPANION_OPS
    # The companion as resolved (None: none), and why there is none.
    companion: str | None = None
    companion_left_out: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunConfig:
        known = set(cls.__dataclass_fields__)
        return cls(**{"seed_scheme": 1, "companion_ops": 0.0,
                      **{k: v for k, v in d.items() if k in known}})


# How the CLI spells a RunConfig field, for errors (a campaign file or run.json
# spells it as the field; the sentence names both ways).
_FLAGS = {name: f"--{name.replace('_', '-')}" for name in RUN_FIELDS}
_FLAGS["final_read_timeout"] = "final_read_timeout"


def validate(c: RunConfig) -> RunConfig:
    try:
        system = systems.get(c.db)
    except systems.UnknownSystem as e:
        raise ConfigError(str(e)) from None
    if c.workload not in WORKLOADS:
        raise ConfigError(f"unknown workload {c.workload!r}: choose one of "
                          f"{', '.join(sorted(WORKLOADS))}")
    if c.workload not in system.clients:
        raise ConfigError(f"system {c.db} has no client for workload {c.workload!r}: "
                          f"it supports {', '.join(system.workloads)}")
    bad = [n for n in c.nemesis if n.partition(":")[0] not in NEMESES]
    if bad:
        raise ConfigError(f"unknown nemesis {', '.join(map(repr, bad))}: choose from "
                          f"{', '.join(NEMESES)} (comma-separated, or 'none')")
    _choose_companion(c, system)
    if c.nemesis == [HUNT.name]:
        repertoire, c.hunt_left_out = hunt_choice(system, c.nodes)
        c.nemesis = [HUNT.name, *repertoire]
    if c.nemesis_overlap and HUNT.name in c.nemesis:
        raise ConfigError("--nemesis-overlap shapes the seeded schedule; the hunt decides "
                          "its own as it goes: name the faults instead of hunt")
    if c.nodes < 1:
        raise ConfigError(f"--nodes must be at least 1, not {c.nodes}")
    if c.nodes > MAX_NODES:
        raise ConfigError(f"--nodes must be at most {MAX_NODES} (the addresses one run's "
                          f"/24 network has for nodes), not {c.nodes}")
    for spec in c.nemesis:
        check_variant(spec, c.nodes)
        # A fault that fires on node event lines would never fire: say so now.
        # (A clock the system cannot take is refused below, in the adapter's words.)
        unmet = unmet_needs(spec, system) - {PRELOAD_CLOCK}
        if unmet:
            raise ConfigError(f"nemesis {spec} needs node {', '.join(sorted(unmet))} lines, "
                              f"which system {c.db} does not leave")
    _check_faults_fit_system(c.nemesis, system)
    for name, bound in RUN_FIELDS.items():
        problem = bound.problem(_FLAGS.get(name, name), getattr(c, name))
        if problem is not None:
            raise ConfigError(problem)
    if c.seed_scheme not in SCHEMES:
        raise ConfigError(f"seed_scheme must be one of {', '.join(map(str, SCHEMES))}, "
                          f"not {c.seed_scheme!r}")
    if c.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, not {c.concurrency}")
    most = max_concurrency()
    if c.concurrency > most:
        raise ConfigError(f"--concurrency must be at most {most} on this machine (each "
                          f"client is a worker process with two pipes and ~{WORKER_MIB} MiB; "
                          f"its open-file, process and free-memory limits allow {most}), "
                          f"not {c.concurrency}")
    if c.node_choice not in ("random", "sticky"):
        raise ConfigError(f"--node-choice must be random or sticky, not {c.node_choice!r}")
    for flag, options in (("--node-option", c.node_options),
                          ("--client-option", c.workload_options),
                          ("--threshold", c.thresholds), ("--lin-option", c.lin_options)):
        for key, value in options.items():
            if non_finite_in(value) is not None:
                raise ConfigError(f"{flag} {key} must be finite, not {non_finite_in(value)}")
    if not isinstance(c.hunt_corpus, list) or not all(isinstance(k, list)
                                                      for k in c.hunt_corpus):
        raise ConfigError("hunt_corpus must be a list of signatures (lists)")
    _check_models(c)
    _check_thresholds(c.thresholds)
    _check_lin_options(c.lin_options)
    workload = WORKLOADS[c.workload]
    if isinstance(workload, ChecksOptions):
        try:
            workload.check_options(c.workload_options)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if c.bugs:
        if system.check_bugs is None:
            raise ConfigError(f"--bug: system {c.db} has no bug switches")
        try:
            system.check_bugs(list(c.bugs))
        except ValueError as e:
            raise ConfigError(f"--bug: {e}") from None
    _check_workload_options(c)
    _check_node_options(c)
    return c


def _choose_companion(c: RunConfig, system: Any) -> None:
    """The run's companion workload (workloads.companion), once: a replay keeps
    the one its run.json names."""
    if c.companion is not None:
        if c.companion not in system.clients:
            raise ConfigError(f"companion workload {c.companion!r}: system {c.db} has no "
                              f"client for it")
        return
    bound = RUN_FIELDS["companion_ops"].problem("--companion-ops", c.companion_ops)
    if bound is not None:
        raise ConfigError(bound)
    main = WORKLOADS[c.workload]
    chosen = companion.choose(main, system.clients) if c.companion_ops else None
    c.companion = chosen.NAME if chosen is not None else None
    c.companion_left_out = (None if chosen is not None
                            else companion.left_out_reason(main, c.db, c.companion_ops))


def companion_line(c: RunConfig) -> str:
    """Pure: the line a run prints of its companion workload, or why it has none."""
    if c.companion is None:
        return f"faultline: no companion workload: {c.companion_left_out or 'none chosen'}"
    return (f"faultline: companion workload {c.companion} at {c.companion_ops:.0%} of ops, "
            "on keys of its own, judged by its own checkers")


def _check_node_options(c: RunConfig) -> None:
    """--node-option keys the db's adapter reads (its OPTIONS): a typo would
    otherwise be ignored, or fail only once the nodes start."""
    system = systems.get(c.db)
    allowed = system.node_options
    if allowed is None:
        return
    _check_options(c.node_options, allowed, "--node-option", c.db)
    names = node_names(c.nodes)
    for key, value in c.node_options.items():
        strangers = sorted(set(value) - set(names)) if allowed[key] == NODE_NAMES else []
        if strangers:
            raise ConfigError(f"--node-option {key} names {', '.join(strangers)}, not one "
                              f"of this run's nodes ({names[0]}..{names[-1]})")
    # What the adapter itself refuses (etcd: an election timeout under 5 heartbeats).
    check = getattr(system.db, "check_options", None)
    if check is not None:
        try:
            check(dict(c.node_options))
        except ValueError as e:
            raise ConfigError(f"--node-option: {e}") from None
    # The bug switches a node is started with, however they are given.
    if "bugs" in c.node_options and system.check_bugs is not None:
        try:
            system.check_bugs(list(c.node_options["bugs"]))
        except ValueError as e:
            raise ConfigError(f"--node-option bugs: {e}") from None


def _check_workload_options(c: RunConfig) -> None:
    """--client-option keys are read by the workload's generator and the db's
    client: a key neither reads (a typo) would silently do nothing."""
    allowed = dict(getattr(systems.get(c.db).client_class(c.workload), "OPTIONS", {}))
    allowed.update(kinds(WORKLOADS[c.workload].OPTIONS))
    _check_options(c.workload_options, allowed, "--client-option", f"{c.db} x {c.workload}")


def _check_options(given: Mapping[str, Any], allowed: Mapping[str, str], flag: str,
                   what_for: str) -> None:
    for key, value in given.items():
        if key not in allowed:
            raise ConfigError(f"unknown {flag} {key!r} for {what_for}: "
                              f"choose from {', '.join(sorted(allowed))}")
        ok, what = option_kind(allowed[key])
        if not ok(value):
            raise ConfigError(f"{flag} {key} must be {what}, not {value!r}")


def node_names(n: int) -> list[str]:
    return [f"n{i}" for i in range(1, n + 1)]


def hunting(c: RunConfig) -> bool:
    return HUNT.name in c.nemesis


def fresh_schedule(c: RunConfig) -> list[Any]:
    """The seeded nemesis timeline a run of `c` plays (a replay plays its saved one)."""
    from harness.run.seeds import Seeds
    from nemesis.schedule import hunt_schedule, schedule
    if hunting(c):
        return hunt_schedule(Seeds(c.seed, c.seed_scheme).of("schedule"),
                             [s for s in c.nemesis if s != HUNT.name], c.nemesis_interval,
                             c.time_limit, c.nemesis_min_duration, c.hunt_corpus, c.seed,
                             declared_failover_s(c))
    return schedule(Seeds(c.seed, c.seed_scheme).of("schedule"), c.nemesis,
                    c.nemesis_interval, c.time_limit, node_names(c.nodes),
                    c.nemesis_min_duration, c.nemesis_overlap)


def declared_failover_s(c: RunConfig) -> float | None:
    """The failover bound the system declares for `c`'s node options (run.json
    `timers`, as availability judges by), None where it declares none: from
    it the hunt sets how long it holds a fault that takes the leader or a
    quorum (nemesis.hunt.election_hold)."""
    from nodes.db import GENERIC_TIMERS
    system = systems.get(c.db)
    timers = system.timers({**system.node_defaults, **c.node_options})
    return None if timers == GENERIC_TIMERS else timers.failover_s


def kinds_left_out(c: RunConfig, events: list[Any]) -> list[str]:
    """Faults `c` names that the schedule never injects (too few turns in the
    time limit): the run must not read as tested against them."""
    if hunting(c):
        return []  # the hunt picks among them as it goes, and records what it picked
    injected = {e.fault for e in events if e.action == "inject"}
    return [spec for spec in c.nemesis if spec not in injected]


def hunt_repertoire(system: Any, nodes: int) -> list[str]:
    """Every registered fault `system` can take on `nodes` nodes here
    (`hunt_choice`)."""
    return hunt_choice(system, nodes)[0]


def hunt_choice(system: Any, nodes: int) -> tuple[list[str], dict[str, str]]:
    """The default hunt's repertoire: every registered fault `system` can take
    on `nodes` nodes (those whose node lines it leaves, that its adapter can
    do), and that this host can prepare (LazyFS faults when LazyFS is
    installed; host faults, clock and cgroup pressure, when libfaketime is
    installed or a cgroup per node can be made: the harness prepares them
    as when named); and the others, each with why it was left out.
    Resolved once, into the run's config, so a replay or a re-check reads the
    list that ran."""
    from nemesis.base import LAZYFS_FAULTS, FaultContext, make_fault
    from nemesis.host import check_host
    from nemesis.lazyfs import check_installed
    lazyfs = check_installed()
    db = system.db()
    out: list[str] = []
    left: dict[str, str] = {}
    for name in FAULTS:
        if name == HUNT.name:
            continue
        unmet = unmet_needs(name, system)
        host = FAULTS[name].host
        if unmet:
            left[name] = "; ".join(_UNMET.get(n, n).format(system.name) for n in sorted(unmet))
            continue
        problem = (lazyfs if name in LAZYFS_FAULTS else None) or (
            check_host({host}) if host else None)
        if problem:
            left[name] = problem
            continue
        try:
            check_variant(name, nodes)
            make_fault(name, FaultContext(db, None, {"mounts": {}, "replay": False}))
        except (ValueError, ConfigError) as e:
            left[name] = str(e)
            continue
        out.append(name)
    return out, left


# Why a fault whose need the system lacks is left out of the default hunt.
_UNMET = {PRELOAD_CLOCK: "system {} takes no preloaded clock",
          EVENTS: "system {} leaves no event lines"}


def hunt_line(c: RunConfig) -> str | None:
    """Pure: the line a run prints of what its default hunt plays and what it
    left out, and why (None when the run does not hunt)."""
    if not hunting(c):
        return None
    played = [s for s in c.nemesis if s != HUNT.name]
    left = "; ".join(f"{name} ({why})" for name, why in c.hunt_left_out.items())
    return (f"faultline: hunt over {len(played)} faults: {', '.join(played)}"
            + (f"; left out: {left}" if left else ""))


def _check_faults_fit_system(specs: list[str], system: Any) -> None:
    """Each fault built as the run would build it, against the system's own
    adapter: a fault that needs what the adapter lacks (state files to delete,
    a way to re-format a node, nodes that rejoin by themselves) says so now,
    not after the cluster started. LazyFS mounts are the harness's to make:
    stand-ins here, their availability is checked by the run's preflight."""
    if not specs:
        return
    from nemesis.base import FaultContext, make_fault
    db = system.db()
    for spec in specs:
        try:
            make_fault(spec, FaultContext(db, None, {"mounts": {}, "replay": False}))
        except ValueError as e:
            raise ConfigError(f"nemesis {spec} cannot run on system {system.name}: {e}") from None


def check_variant(spec: str, nodes: int) -> None:
    """A variant (`partition:one-way`) the planner does not know is a config error,
    found before anything starts rather than when the fault first fires."""
    import random

    from nemesis.schedule import plan_params
    try:
        plan_params(spec, random.Random(0), [f"n{i}" for i in range(1, max(nodes, 1) + 1)])
    except (ValueError, KeyError) as e:
        raise ConfigError(f"bad nemesis variant {spec!r}: {e}") from None


def parse_nemesis(text: str) -> list[str]:
    """"kill,packet:delay=50ms,jitter=5ms" -> ["kill", "packet:delay=50ms,jitter=5ms"]:
    a part with `=` before any `:` is a setting of the fault before it (a
    fault name has no `=`)."""
    text = text.strip()
    if text in ("", "none"):
        return []
    # A variant may hold commas (`clock:strobe=2,period=0.1`,
    # `packet:delay=50ms,jitter=5ms`, `stress:cpu=4,leader`): a part that names
    # no fault, or holds `=` before any `:`, continues the variant before it.
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        head = part.split(":", 1)[0]
        if specs and ("=" in head or (":" in specs[-1] and head not in FAULTS)):
            specs[-1] += "," + part
        else:
            specs.append(part)
    return specs


def _check_models(c: RunConfig) -> None:
    """The models the checkers are asked for: a typo would otherwise be found
    only by the checker, after the whole run."""
    from checkers.elle.consistency import MODELS as ELLE_MODELS
    from checkers.models import MODELS as LIN_MODELS
    if c.consistency_model not in ELLE_MODELS:
        raise ConfigError(f"--consistency-model must be one of {', '.join(ELLE_MODELS)}, "
                          f"not {c.consistency_model!r}")
    if c.lin_model is not None and c.lin_model not in LIN_MODELS:
        raise ConfigError(f"lin_model must be one of {', '.join(sorted(LIN_MODELS))}, "
                          f"not {c.lin_model!r}")


def _check_thresholds(thresholds: dict[str, Any]) -> None:
    """--threshold keys the availability checker reads, each a non-negative
    number: an unknown key would silently judge nothing."""
    from checkers.availability import THRESHOLDS
    for key, value in thresholds.items():
        if key not in THRESHOLDS:
            raise ConfigError(f"unknown --threshold {key!r}: choose from "
                              f"{', '.join(THRESHOLDS)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"--threshold {key} must be a non-negative number, "
                              f"not {value!r}")
        problem = THRESHOLD.problem(f"--threshold {key}", value)
        if problem is not None:
            raise ConfigError(problem)


LIN_OPTIONS = ("time_limit", "memory_limit_mb", "stop_on_first_failure")


def _check_lin_options(options: dict[str, Any]) -> None:
    for key, value in options.items():
        if key not in LIN_OPTIONS:
            raise ConfigError(f"unknown linearizability option {key!r}: choose from "
                              f"{', '.join(LIN_OPTIONS)}")
        if key == "stop_on_first_failure":
            if not isinstance(value, bool):
                raise ConfigError(f"linearizability option {key} must be true or false, "
                                  f"not {value!r}")
        elif value is not None and (isinstance(value, bool)
                                    or not isinstance(value, (int, float)) or value <= 0):
            raise ConfigError(f"linearizability option {key} must be a positive number "
                              f"or null (no limit), not {value!r}")
        elif value is not None:
            problem = CHECK_BUDGETS[key].problem(f"linearizability option {key}", value)
            if problem is not None:
                raise ConfigError(problem)
