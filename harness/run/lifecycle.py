"""One test run, from namespaces to verdict.

The lifecycle, as in Jepsen: build the cluster, start the nodes, run the
workload while the nemesis plays its schedule, heal, let the cluster recover,
read the final state, stop and dump the nodes, tear everything down, and
judge the history in-process. Whatever happens, teardown runs, and the history
written so far stays on disk.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.registry import APPLIED_STATE, EVENTS, NODE_EXITS, NODE_LOGS
from checkers.verdict import exit_code
from faultline import registry as systems
from harness.report.views import judge, write_views
from harness.results.store import check_results_dir, create_run_dir
from harness.run import node_state
from harness.run.clients import ClientPool
from harness.run.cluster import Cluster, check_privileges
from harness.run.config import (
    RunConfig,
    companion_line,
    fresh_schedule,
    hunt_line,
    kinds_left_out,
    node_names,
    validate,
)
from harness.run.errors import EXIT_HARNESS_ERROR as HARNESS_ERROR  # noqa: F401 (re-export)
from harness.run.errors import ClientError, HarnessError, UserError
from harness.run.leader_watch import LeaderWatch
from harness.run.progress import FINAL_READS, RECOVER, WORKLOAD, Progress
from harness.run.recorder import Recorder
from harness.run.resources import (
    Terminated,
    dead_runs_with_leftovers,
    process_start_time,
    signals_deferred,
)
from harness.run.run_json import write_final_run_json, write_run_json
from harness.run.seeds import Seeds
from harness.run.state import COMPLETE, ERROR, INTERRUPTED, RUNNING, harness_fields
from nemesis.base import (
    REPLAYS_LIVE_FAULTS,
    CompositeNemesis,
    FaultContext,
    NemesisRunner,
    host_needs,
    needs_lazyfs,
    ran_late,
    split_spec,
)
from nemesis.label import fault_label
from nemesis.netns import preexec_setns
from nemesis.schedule import Event
from nodes.abilities import AppliedState, NodeLogPatterns, ReplicaProgress
from nodes.db import Timers
from nodes.log_patterns import GENERIC_BENIGN_LINES, GENERIC_FAILURE_LINES
from workloads import companion
from workloads.ops import OpSpec, on_every_node
from workloads.registry import get as get_workload

LEADER_WAIT_S = 20.0
# More nodes than this per CPU and timing (elections, op latencies) says more
# about the machine than about the system: say so.
NODES_PER_CPU_WARNING = 10


@dataclass
class RunOutcome:
    run_dir: Path
    verdicts: dict[str, Any] | None
    exit_code: int


def plan_events(config: RunConfig) -> list[Event]:
    """The nemesis timeline: the one a replayed run executed, else a fresh seeded one."""
    if config.schedule is not None:
        return [Event(e["time"], e["action"], e["fault"], e.get("params") or {},
                      e.get("seed", 0)) for e in config.schedule]
    return fresh_schedule(config)


def run_seeds(config: RunConfig) -> Seeds:
    return Seeds(config.seed, config.seed_scheme)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version
    out = {"python": platform.python_version(), "kernel": platform.release()}
    for pkg in ("faultline", "msgpack", "pyroute2", "networkx", "pyspark"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def run_artifacts(db: Any) -> set[str]:
    """What a run of `db` leaves for the checkers: the adapter's own artefacts,
    and what the harness leaves for every system."""
    extra = {NODE_LOGS, NODE_EXITS} | ({APPLIED_STATE} if isinstance(db, AppliedState) else set())
    return set(db.artifacts) | extra


def node_log_patterns(db: Any) -> dict[str, list[str]]:
    """The lines that mean a node tripped over itself: the adapter's, else the
    generic Python and Go ones."""
    if isinstance(db, NodeLogPatterns):
        return {"failure": list(db.failure_log_lines), "benign": list(db.benign_log_lines)}
    return {"failure": list(GENERIC_FAILURE_LINES), "benign": list(GENERIC_BENIGN_LINES)}


class TrackingOps:
    """The workload's op stream, remembering what was issued (for final reads)."""

    def __init__(self, ops: Any) -> None:
        self._ops = ops
        self.issued: list[OpSpec] = []

    def __iter__(self) -> TrackingOps:
        return self

    def __next__(self) -> OpSpec:
        op = next(self._ops)
        self.issued.append(op)
        return op


def active_faults(executed: list[dict[str, Any]]) -> list[str]:
    """Faults injected and not yet healed, from the runner's executed list."""
    active: dict[str, str] = {}
    for e in executed:
        fault = e.get("fault") or e["f"]
        if e.get("noop"):
            continue  # it changed nothing: not an active fault
        if e["f"] == split_spec(fault)[0]:
            active[fault] = e.get("label") or fault_label(e["f"], e.get("value"))
        else:
            active.pop(fault, None)
    return list(active.values())


@dataclass
class Live:
    """What the workload, heal, recover and final-read phases share."""

    recorder: Recorder
    runner: NemesisRunner
    pool: ClientPool
    ops: TrackingOps
    seeds: Seeds
    progress: Progress
    stop: threading.Event = field(default_factory=threading.Event)
    nemesis_thread: threading.Thread | None = None
    t0: float = 0.0
    # A replay that ran past its time limit healed this late (monotonic s):
    # its quiet spell counts from then, as its original's did from its heal.
    healed_late: float | None = None
    leader_watch: LeaderWatch | None = None   # a system without election events

    def tick(self, phase: str) -> Callable[[], None]:
        return lambda: self.progress.update(phase, self.recorder.counts,
                                            active_faults(self.runner.executed))


class Run:
    """One run as named phases: preflight, setup, start, workload + nemesis, heal,
    recover, final reads, dump, teardown, check (`execute` calls them in order)."""

    def __init__(self, config: RunConfig, results: Path, stream: Any = None,
                 extra_doc: dict[str, Any] | None = None,
                 on_run_dir: Callable[[Path], None] | None = None) -> None:
        self.config = validate(config)
        # Fields a caller adds to run.json (a replay's "replay_of", a campaign's entry).
        self.extra_doc = dict(extra_doc or {})
        # Told the run dir once it exists (a campaign worker records it at once).
        self.on_run_dir = on_run_dir
        self.results = results
        self.stream = stream or sys.stderr
        self.system = systems.get(config.db)
        self.db = self.system.db()
        self.workload = get_workload(config.workload)
        self.companion = get_workload(config.companion) if config.companion else None
        self.names = node_names(config.nodes)
        self.run_dir: Path | None = None
        self.doc: dict[str, Any] = {}
        self.mounts: dict[str, Any] = {}
        self.mount_processes: dict[str, int] = {}    # node -> journal record of its FUSE process
        self.host: Any = None    # nemesis.host.NodeHost, when a host fault is in the run
        self.executed: list[dict[str, Any]] = []
        # Set when the final run.json could not be written whole (a full disk).
        self.write_failure: OSError | None = None

    # --- preflight ----------------------------------------------------------------

    def preflight(self) -> None:
        """Everything that can be wrong before anything is created: one sentence each."""
        problem = self.db.check_installed()
        if problem:
            raise UserError(problem)
        check_privileges()
        check_results_dir(self.results)
        if needs_lazyfs(self.config.nemesis):
            from nemesis.lazyfs import check_installed
            problem = check_installed()
            if problem:
                raise UserError(problem)
        from nemesis.host import check_host
        problem = check_host(host_needs(self.fault_specs()))
        if problem:
            raise UserError(problem)

    def fault_specs(self) -> list[str]:
        """Every fault the run may play: those named, and a replayed schedule's."""
        return sorted(set(self.config.nemesis)
                      | {e["fault"] for e in self.config.schedule or ()})

    def node_options(self) -> dict[str, Any]:
        opts = dict(self.system.node_defaults)
        opts.update(self.config.node_options)
        if self.config.bugs:
            opts["bugs"] = list(self.config.bugs)
        return opts

    def per_node_options(self) -> dict[str, dict[str, Any]]:
        """Each node's own seed (seeds.Seeds.node), unless a node option sets one for all."""
        if "seed" in self.node_options():
            return {}
        seeds = run_seeds(self.config)
        return {name: {"seed": seeds.node(name)} for name in self.names}

    def timers(self) -> Timers:
        return self.system.timers(self.node_options())

    def client_options(self) -> dict[str, Any]:
        # Sticky clients stay on their node; others follow leader hints.
        return {"op_timeout": self.config.op_timeout,
                "follow_leader": self.config.node_choice != "sticky",
                **self.config.workload_options}

    # --- the lifecycle -------------------------------------------------------------

    def execute(self) -> RunOutcome:
        self.preflight()
        progress = self._open_run_dir()
        assert self.run_dir is not None
        cluster = Cluster(self.run_dir, self.db, self.names, self.run_dir.name,
                          node_options=self.node_options(),
                          per_node_options=self.per_node_options())
        interrupted = False
        try:
            self._run_cluster(cluster, progress)
            self.doc["status"] = COMPLETE
        except BaseException as e:
            interrupted = isinstance(e, (KeyboardInterrupt, Terminated))
            self.doc["status"] = INTERRUPTED if interrupted else ERROR
            self.doc["error"] = f"{type(e).__name__}: {e}"
            if isinstance(e, ClientError):  # the traceback apart, the error a line
                self.doc.update(error=f"ClientError: {e.summary}", client_error=e.to_json())
            raise
        finally:
            progress.close()
            self._teardown(cluster, interrupted)
        if self.write_failure is not None:
            raise HarnessError(f"the run's results could not be written ({self.write_failure}); "
                               f"run.json says error: {self.run_dir}")
        try:
            return self._judge()
        except OSError as e:
            # The verdicts or the page could not be written: the run must
            # not stand as complete with nothing to show for it.
            self.doc.update(status=ERROR, error=f"judging the run: {type(e).__name__}: {e}")
            write_final_run_json(self.run_dir, self.doc, self.stream)
            raise

    def _open_run_dir(self) -> Progress:
        """The run dir and its first run.json (status running), after the warnings."""
        cpus = os.cpu_count() or 1
        if self.config.nodes > NODES_PER_CPU_WARNING * cpus:
            print(f"faultline: warning: {self.config.nodes} nodes on {cpus} CPU(s): starting "
                  "them takes a while and they compete with the clients for CPU (the "
                  "time limit counts from the workload's start)", file=self.stream, flush=True)
        line = hunt_line(self.config) if self.config.schedule is None else None
        if line:
            print(line, file=self.stream, flush=True)
        print(companion_line(self.config), file=self.stream, flush=True)
        if self.config.schedule is None:
            left_out = kinds_left_out(self.config, fresh_schedule(self.config))
            if left_out:
                print(f"faultline: warning: the schedule never injects {', '.join(left_out)} "
                      f"({self.config.time_limit:g} s, a fault every "
                      f"{self.config.nemesis_interval:g} s on average): a longer run or a "
                      "shorter interval gives each named fault its turn", file=self.stream,
                      flush=True)
        dead = dead_runs_with_leftovers()
        if dead:
            print(f"faultline: {len(dead)} earlier run(s) whose harness died left processes, "
                  f"namespaces or mounts ({', '.join(dead[:3])}{' ...' if len(dead) > 3 else ''}"
                  f"); `faultline clean` removes them", file=self.stream, flush=True)
        self.run_dir = create_run_dir(self.results)
        self.doc = {"run_id": self.run_dir.name, "config": self.config.to_json(),
                    "status": RUNNING, "start_wall": datetime.now(UTC).isoformat(),
                    **harness_fields(os.getpid(), process_start_time(os.getpid())),
                    "versions": versions(), "host": platform.node(),
                    "artifacts": sorted(run_artifacts(self.db)),
                    "node_log_patterns": node_log_patterns(self.db),
                    # What availability and convergence judge by (nodes.db.Timers).
                    "timers": self.timers().to_json(),
                    "system": {"name": self.system.name, "description": self.system.description,
                               "workloads": self.system.workloads,
                               "node_defaults": dict(self.system.node_defaults)},
                    **self.extra_doc}
        write_run_json(self.run_dir, self.doc)
        if self.on_run_dir is not None:
            self.on_run_dir(self.run_dir)
        progress = Progress(self.config.time_limit, self.stream)
        progress.say(f"run {self.run_dir.name}: {self.config.db} x {self.config.workload}, "
                     f"{self.config.nodes} nodes, nemesis "
                     f"{','.join(self.config.nemesis) or 'none'}, seed {self.config.seed}")
        return progress

    def _teardown(self, cluster: Cluster, interrupted: bool) -> None:
        """teardown: processes, mounts, namespaces; the final run.json. Runs always.

        The nodes go first: a LazyFS process stays mounted while a node holds
        files open on it, so stopping it before would wait out its timeout."""
        assert self.run_dir is not None
        # One deferral over all three: a Ctrl-C in the middle must not skip
        # the cluster's teardown (a second one still acts at once).
        with signals_deferred():
            cluster.stop_nodes()
            self._stop_mounts(cluster)
            if self.host is not None:
                self.host.teardown()
            cluster.teardown()
        self.doc["end_wall"] = datetime.now(UTC).isoformat()
        self.doc["schedule"] = self.executed
        self.write_failure = write_final_run_json(self.run_dir, self.doc, self.stream)
        if interrupted and self.write_failure is None:
            self._say_how_to_check()
            # What was recorded, on the page too: marked interrupted, not yet judged
            # (after the command is said: a second Ctrl-C may cut this short).
            write_views(self.run_dir, None, stream=self.stream)
        elif "client_error" in self.doc and self.write_failure is None:
            # The page says why this run has no verdict, with the client's traceback.
            write_views(self.run_dir, None, stream=self.stream)

    def _say_how_to_check(self) -> None:
        """An interrupted run keeps its history: say where it is and how to judge it."""
        assert self.run_dir is not None
        history = self.run_dir / "history.msgpack"
        what = (f"its history ({history.stat().st_size} bytes) is kept"
                if history.exists() else "it recorded no history")
        print(f"faultline: run interrupted and torn down; {what} in {self.run_dir}\n"
              f"faultline: judge what was recorded with:  faultline check --in-process "
              f"{self.run_dir}", file=self.stream, flush=True)

    def _run_cluster(self, cluster: Cluster, progress: Progress) -> None:
        """The phases between building the run dir and tearing down, in order."""
        self._setup(cluster)
        self._start(cluster, progress)
        live = self._begin_workload_and_nemesis(cluster, progress)
        try:
            self._workload(live)
            self._heal(live, progress)
            self._recover(live)
            reads = companion.final_reads(self.workload, self.companion, live.ops.issued)
            self._final_reads(live.pool, live.recorder, on_every_node(reads, cluster.names),
                              live.tick(FINAL_READS))
        finally:
            self._end_workload_and_nemesis(live)
        self._converge(cluster, progress)
        self._collect_node_states(cluster, progress)
        self._dump(cluster, live.recorder, progress)

    # --- phases --------------------------------------------------------------------

    def _setup(self, cluster: Cluster) -> None:
        """setup: namespaces, data dirs (on LazyFS when a fault needs it)."""
        cluster.setup()
        if needs_lazyfs(self.config.nemesis):
            self._mount_lazyfs(cluster)
        needs = host_needs(self.fault_specs())
        if needs:
            from nemesis.host import prepare
            assert self.run_dir is not None
            self.host = prepare(needs, self.run_dir.name, cluster.names,
                                self.run_dir / "clocks", cluster.resources)
            cluster.node_env = {n: self.host.launch_env(n) for n in cluster.names}
            cluster.node_cgroups = {n: self.host.launch_cgroups(n) for n in cluster.names}
        self.doc["nodes"] = {n.name: {"address": n.host, "port": n.port} for n in cluster.nodes}

    def _start(self, cluster: Cluster, progress: Progress) -> None:
        """start: every node, then wait (bounded) for a leader."""
        progress.say("starting nodes")
        cluster.start_all(timeout=60.0)
        self._wait_for_leader(cluster, progress)

    def _begin_workload_and_nemesis(self, cluster: Cluster, progress: Progress) -> Live:
        """The recorder, the nemesis with its planned schedule, the client pool."""
        cfg = self.config
        assert self.run_dir is not None
        seeds = run_seeds(cfg)
        recorder = Recorder(self.run_dir / "history.msgpack")
        self.doc["start_monotonic_ns"] = recorder.start_ns
        write_run_json(self.run_dir, self.doc)
        events = plan_events(cfg)
        # The plan (with per-event seeds and params) and where schedule time 0
        # falls in history time: with "schedule" they let a replay rebuild
        # exactly what was executed.
        self.doc["planned_schedule"] = [e.to_map() for e in events]
        nemesis = CompositeNemesis.from_specs(
            sorted({e.fault for e in events} | set(cfg.nemesis)),
            # In a replay, triggers stay silent: what they fired is in the
            # schedule (unless it was dropped for them to fire live again:
            # with --live-triggers, or always for those `replays_live`).
            FaultContext(self.db, None, {"mounts": self.mounts,
                                         "replay": cfg.schedule is not None
                                         and not cfg.live_triggers,
                                         "replays_live": REPLAYS_LIVE_FAULTS,
                                         "host": self.host,
                                         "clocks": self.host.clocks if self.host else {}}))
        nemesis.setup(cluster)
        # A replay plays every fault its original recorded, late or not: one
        # that runs late under load still plays what its time limit finds pending.
        runner = NemesisRunner(nemesis, events, recorder.record,
                               play_all=cfg.schedule is not None)
        self.executed = runner.executed
        pool = ClientPool(cfg.concurrency, cfg.db, cfg.workload,
                          {n.name: (n.host, n.port) for n in cluster.nodes},
                          self.client_options(), self.run_dir / "clients",
                          preexec_fn=preexec_setns(cluster.hub_netns, die_with_parent_thread=True),
                          node_rng=seeds.rng("node-choice"),
                          node_choice=cfg.node_choice)
        ops = TrackingOps(self._ops(seeds))
        live = Live(recorder, runner, pool, ops, seeds, progress)
        if EVENTS not in run_artifacts(self.db):
            # From now, not from the workers' start: who led when the history began.
            live.leader_watch = LeaderWatch(cluster.leader, recorder.start_ns)
            live.leader_watch.start()
        return live

    def _ops(self, seeds: Seeds) -> Iterator[OpSpec]:
        """The main workload's ops, with its companion's at their share."""
        cfg = self.config
        main = self.workload.generate(seeds.rng("workload"), cfg.workload_options)
        if self.companion is None:
            return main
        mix = seeds.rng("companion")
        # The companion's own options are its defaults: --client-option keys are the main's.
        theirs = self.companion.generate(random.Random(mix.getrandbits(63)), {})
        return companion.compose(main, theirs, self.companion.NAME, cfg.companion_ops, mix)

    def _workload(self, live: Live) -> None:
        """workload + nemesis: clients run the ops while the nemesis plays its schedule."""
        # The workers first: the time limit and the schedule count from when
        # clients can send, not from when their interpreters began to start.
        live.pool.start(live.recorder)
        live.t0 = time.monotonic()
        live.progress.start_clock()
        self.doc["schedule_offset_ns"] = int(live.t0 * 1e9) - live.recorder.start_ns
        live.nemesis_thread = threading.Thread(target=live.runner.run,
                                               args=(live.stop, live.t0), name="nemesis",
                                               daemon=True)
        live.nemesis_thread.start()
        live.pool.run(live.ops, live.recorder, live.t0 + self.config.time_limit,
                      self.config.rate or None, live.seeds.rng("pacing"), live.tick(WORKLOAD))

    def _heal(self, live: Live, progress: Progress) -> None:
        """heal: the nemesis heals everything before its thread returns."""
        live.stop.set()
        assert live.nemesis_thread is not None
        live.nemesis_thread.join()
        late = ran_late(self.executed)
        if late is not None:
            live.healed_late = time.monotonic()
            progress.say(late)
        progress.say(f"healed; recovering for {self.config.recovery_time:g}s")

    def _recover(self, live: Live) -> None:
        """recover: a quiet spell (ops still open finish) before the final reads."""
        cfg = self.config
        live.pool.run(iter(()), live.recorder, time.monotonic() + cfg.recovery_time, None,
                      live.seeds.rng("pacing"), live.tick(RECOVER))
        since = max(live.t0 + cfg.time_limit, live.healed_late or 0.0)
        time.sleep(max(0.0, cfg.recovery_time - (time.monotonic() - since)))

    def _end_workload_and_nemesis(self, live: Live) -> None:
        """Whatever happened: the nemesis stopped (healing), the clients closed, the
        history closed with info completions for ops still open."""
        live.runner.abandon()   # ended early, a replay's runner too: nothing more is played
        live.stop.set()
        if live.nemesis_thread is not None and live.nemesis_thread.is_alive():
            live.nemesis_thread.join()
        if live.leader_watch is not None:
            self.doc["leaders"] = live.leader_watch.stop()
        live.pool.close(live.recorder)
        live.recorder.close()

    def _converge(self, cluster: Cluster, progress: Progress) -> None:
        """converge: every live node given the system's recovery time to catch
        up before its log is dumped, polled, so a healthy cluster waits a
        moment; what each node reported goes to run.json `convergence`."""
        if not isinstance(self.db, ReplicaProgress):
            return
        bound = self.timers().recovery_s
        db, run_dir = self.db, self.run_dir
        assert run_dir is not None   # made before the cluster

        def probe() -> dict[str, dict[str, Any] | None]:
            # The nodes' addresses exist only in the run's namespaces.
            with cluster.in_hub():
                return {n.name: db.replica_progress(n) for n in cluster.nodes
                        if cluster.is_running(n.name)}

        try:
            record = wait_for_convergence(probe, [n.name for n in cluster.nodes], bound)
        except Exception as e:  # a probe that breaks leaves convergence unjudged, not the run
            self.doc["convergence_error"] = f"{type(e).__name__}: {e}"
            return
        self.doc["convergence"] = record
        write_run_json(run_dir, self.doc)
        progress.say(f"nodes {'converged' if record['converged'] else 'did not converge'} "
                     f"after {record['waited_s']:g}s (bound {bound:g}s)")

    def _collect_node_states(self, cluster: Cluster, progress: Progress) -> None:
        """node state: each node's applied state, once they agree (bounded), saved
        for the node-state checker. Before the nodes stop: they must answer."""
        if not isinstance(self.db, AppliedState):
            return
        assert self.run_dir is not None
        try:
            states, summary = node_state.collect(
                self.db, cluster, self.config.workload,
                companions=[self.companion.NAME] if self.companion is not None else [])
            dropped = node_state.save(self.run_dir, states)
        except Exception as e:  # states that cannot be read are a finding, not a crash
            self.doc["node_states"] = {"error": f"{type(e).__name__}: {e}"}
            return
        if dropped:
            summary["dropped"] = dropped
        self.doc["node_states"] = summary
        progress.say(f"node states read: {'agreed' if summary['agreed'] else 'did not agree'} "
                     f"after {summary['waited_s']:g}s")

    def _dump(self, cluster: Cluster, recorder: Recorder, progress: Progress) -> None:
        """dump: stop the nodes and dump their logs for the checkers."""
        counts = dict(recorder.counts)
        self.doc["op_counts"] = counts
        progress.say(f"ops: {sum(counts.get(t, 0) for t in ('ok', 'fail', 'info'))} "
                     f"(ok {counts.get('ok', 0)} refused {counts.get('refused', 0)} "
                     f"error {counts.get('error', 0)} info {counts.get('info', 0)}); "
                     "stopping nodes and dumping logs")
        cluster.kill(cluster.names)
        try:
            cluster.dump_logs()
        except Exception as e:  # a node whose log cannot be dumped is a finding, not a crash
            self.doc["dump_error"] = f"{type(e).__name__}: {e}"

    def _wait_for_leader(self, cluster: Cluster, progress: Progress) -> None:
        deadline = time.monotonic() + LEADER_WAIT_S
        while time.monotonic() < deadline:
            try:
                leader = cluster.leader()
            except Exception:
                leader = None
            if leader is not None:
                progress.say(f"nodes ready, leader {leader}")
                return
            time.sleep(0.2)
        progress.say(f"no leader after {LEADER_WAIT_S:g}s; running anyway")

    def _final_reads(self, pool: ClientPool, recorder: Recorder, reads: list[OpSpec],
                     on_tick: Callable[[], None]) -> None:
        """Issue each final read until it succeeds or the final-read time is up."""
        pending = list(reads)
        succeeded: set[int] = set()

        def done(invoke: Any, completion: Any) -> None:
            if completion.type == "ok":
                for i, spec in enumerate(pending):
                    if ((spec.f, spec.key, spec.value, spec.node)
                            == (invoke.f, invoke.key, invoke.value, invoke.node)):
                        succeeded.add(i)
                        break

        pool.on_complete = done
        deadline = time.monotonic() + self.config.final_read_timeout
        try:
            while time.monotonic() < deadline:
                todo = [s for i, s in enumerate(pending) if i not in succeeded]
                if not todo:
                    break
                pool.run(iter(todo), recorder, deadline, None, random.Random(0), on_tick)
                if len(succeeded) < len(pending):
                    time.sleep(0.2)
        finally:
            pool.on_complete = None
        self.doc["final_reads"] = {"asked": len(pending), "succeeded": len(succeeded)}

    def _mount_lazyfs(self, cluster: Cluster) -> None:
        from nemesis.lazyfs import mount_data_dir
        assert cluster.resources is not None
        resources = cluster.resources
        for node in cluster.nodes:
            resources.add("mount", path=str(node.data_dir))

            def journal(pid: int, name: str = node.name) -> None:
                self.mount_processes[name] = resources.add_process(pid)

            self.mounts[node.name] = mount_data_dir(node.data_dir, on_spawn=journal)

    def _stop_mounts(self, cluster: Cluster) -> None:
        """Every LazyFS mount stopped at once: they are independent processes,
        and one that hangs costs its own timeout, not one per mount."""
        stopped: list[str] = []

        def stop(name: str, fs: Any) -> None:
            try:
                fs.stop()
            except Exception:
                return  # the cluster's teardown sweeps whatever is still journalled
            stopped.append(name)

        # Daemon threads, not an executor: a second Ctrl-C while they wait must
        # let the harness exit at once (the watchdog sweeps what they leave).
        threads = [threading.Thread(target=stop, args=(name, fs), name=f"stop-mount-{name}",
                                    daemon=True) for name, fs in self.mounts.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for name in stopped:
            # Its FUSE process has exited: the journal must not keep the run
            # indexed as having something left to sweep.
            rid = self.mount_processes.pop(name, None)
            if rid is not None and cluster.resources is not None:
                cluster.resources.release(rid)

    # --- judging -------------------------------------------------------------------

    def _judge(self) -> RunOutcome:
        assert self.run_dir is not None
        document = judge(self.run_dir, self.stream)
        return RunOutcome(self.run_dir, document, exit_code(document["valid"]))


CONVERGE_POLL_S = 0.2


def wait_for_convergence(probe: Callable[[], dict[str, dict[str, Any] | None]],
                         names: list[str], bound_s: float,
                         clock: Callable[[], float] = time.monotonic,
                         sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Poll `probe` (live node -> its progress, None if it did not answer)
    until every live node reports the same progress, or `bound_s` passes: the
    last reports, and whether they agreed. A node not live is not waited for
    (the run's other checks say why it is down); `names` lists them all."""
    started = clock()
    while True:
        reports = probe()
        agreed = (None not in reports.values()
                  and len({json.dumps(r, sort_keys=True) for r in reports.values()}) <= 1)
        waited = clock() - started
        if agreed or waited >= bound_s:
            return {"converged": agreed, "waited_s": round(waited, 3), "bound_s": bound_s,
                    "live": sorted(reports), "not_live": sorted(set(names) - set(reports)),
                    "progress": reports}
        sleep(CONVERGE_POLL_S)


def run_test(config: RunConfig, results: Path, stream: Any = None,
             extra_doc: dict[str, Any] | None = None) -> RunOutcome:
    return Run(config, results, stream, extra_doc).execute()
