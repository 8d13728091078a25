"""The checkers by name, each behind one signature, and running them in-process.

Every checker is `check(run, options) -> Verdict`: `run` is a loaded run dir
(history, run.json, node dumps and events), `options` what this run asks of
that checker (a model, limits, the history's data type). Adapters below fit each
checker module's own function to that signature. Which checkers judge a run,
and with which options, is a `Plan` (name -> options) the caller derives from
the run's workload (`workloads.judging.plan_for`): this module knows no workload.

One registry serves `faultline run` (in-process, at the end of a run) and
`faultline check` (Spark), so a run gets the same verdict either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checkers.checker import (  # noqa: F401 (re-exported: the artefact names)
    APPLIED_STATE,
    ARTIFACT_WORDS,
    COMPANIONS,
    EVENTS,
    LOG_DUMP,
    NODE_EXITS,
    NODE_LOGS,
    OPS_OF,
    Checker,
    Contributed,
    Options,
)
from checkers.coverage import run_coverage
from checkers.history import NEMESIS, History, Op, client_ops
from checkers.nothing_to_judge import NO_CLIENT_OPS
from checkers.plugins import contributions
from checkers.rundir import Run, load_dumps, load_events, load_json, load_run
from checkers.verdict import Validity, Verdict, combine, merge, verdict
from checkers.verdict_store import history_digest, write_verdicts
from nodes.events import VoteLoss

if TYPE_CHECKING:
    from checkers.at_rest import AtRest

# checker name -> its options, in the order the checkers judge.
Plan = dict[str, dict[str, Any]]
def config_of(run: Run) -> dict[str, Any]:
    return run.run.get("config") or {}


def run_from_ops(path: Path, run_json: dict[str, Any], ops: list[Op]) -> Run:
    """A Run whose history came from elsewhere (a Spark partition), node files not loaded."""
    return Run(path, run_json, History(ops))


def read_run_json(run_dir: Path) -> dict[str, Any]:
    return load_json(run_dir / "run.json")


def load_node_files(run_dir: Path) -> tuple[dict[str, dict[str, Any]],
                                            dict[str, list[dict[str, Any]]]]:
    return load_dumps(run_dir), load_events(run_dir)


def _no_events() -> Verdict:
    return verdict("unknown", stats={"reason": "no node event logs in the run"})


def _linearizability(r: Run, options: Options) -> Verdict:
    from checkers import linearizability
    return linearizability.check(client_ops(r.history.ops), r.run, **options)


def _stats(r: Run, options: Options) -> Verdict:
    from checkers import stats
    return stats.check(r.history.ops, r.run)


def _elle(r: Run, options: Options) -> Verdict:
    from checkers import elle
    return elle.check(client_ops(r.history.ops), r.run, **options)


def _rw_register(r: Run, options: Options) -> Verdict:
    from checkers.elle import rw_register
    return rw_register.check(client_ops(r.history.ops), r.run, **options)


def _durability(r: Run, options: Options) -> Verdict:
    from checkers import durability
    return durability.check(r.history.ops, r.dumps or None, options.get("data"),
                            companions=options.get(COMPANIONS),
                            main=str(config_of(r).get("workload", "")))


def _durability_needs(options: Options) -> frozenset[str]:
    # list and log histories show every value in their reads; for registers
    # only the committed log shows whether an acknowledged write survived.
    from checkers import durability
    return frozenset({LOG_DUMP} if options.get("data") in durability.JUDGED_BY_LOG else ())


def _divergence(r: Run, options: Options) -> Verdict:
    from checkers import divergence
    if not r.dumps:
        return verdict("unknown", stats={"reason": "no node log dumps in the run"})
    return divergence.check(r.dumps, r.events or None, convergence=r.run.get("convergence"),
                            vote_loss=VOTE_LOSS, at_rest=at_rest_of(r), **options)


def at_rest_of(r: Run) -> list[AtRest] | None:
    """The run's faults that destroyed or disturbed data at rest, on the nodes'
    clock; None when its faults cannot be put there (no start_monotonic_ns)."""
    from checkers.at_rest import at_rest_faults
    start_ns = r.run.get("start_monotonic_ns")
    if not any(op.process == NEMESIS for op in r.history.ops):
        return []
    return at_rest_faults(r.history.ops, start_ns) if type(start_ns) is int else None


def _elections(r: Run, options: Options) -> Verdict:
    from checkers import elections
    return elections.check(r.events) if r.events else _no_events()


def leader_events(r: Run) -> dict[str, list[dict[str, Any]]] | None:
    """The nodes' event lines, or None where the run's system declares it
    leaves none (run.json `artifacts` without EVENTS). Its nodes' stdout still
    loads as an empty list per node, which availability would read as nodes
    that told their roles and never led: the leader unknown taken for no
    leader at all, every stretch excused and no leader change to judge."""
    artifacts = r.run.get("artifacts")
    if artifacts is not None and EVENTS not in artifacts:
        return None
    return r.events or None


def _availability(r: Run, options: Options) -> Verdict:
    from checkers import availability
    from checkers.rundir import load_exits
    return availability.check(r.history.ops, leader_events(r), r.run, options.get("thresholds"),
                              exits=load_exits(r.path) if r.path is not None else None,
                              vote_loss=VOTE_LOSS)


def _no_run_dir() -> Verdict:
    return verdict("unknown", stats={"reason": "no run directory to read node files from"})


def _node_state(r: Run, options: Options) -> Verdict:
    from checkers import node_state
    from checkers.node_logs import left_down
    from checkers.rundir import load_exits, load_node_states
    if r.path is None:
        return _no_run_dir()
    states = load_node_states(r.path)
    if not states:
        return verdict("unknown", stats={"reason": "no node states in the run"})
    collected = r.run.get("node_states") or {}
    # A companion's keys are judged only where the harness read them (a run
    # saved before it did may hold them on one system and not on another):
    # absent keys would read as writes lost.
    read = collected.get("workloads") or ()
    companions = {w: d for w, d in (options.get(COMPANIONS) or {}).items() if w in read}
    # Which silent nodes were down, recorded since; a run saved before: none known.
    down = collected.get("down")
    left = left_down(down or (), load_exits(r.path), r.history.ops,
                     r.run.get("start_monotonic_ns"))
    v = node_state.check(states, r.history.ops, options.get("data"),
                         realtime=options.get("realtime", True),
                         # "agreed" was only ever recorded with a leader known.
                         leader_known=collected.get("leader") is not None
                         or collected.get("agreed") is True,
                         companions=companions,
                         main=str(config_of(r).get("workload", "")),
                         down=down, left_down=left)
    unread = sorted(set(options.get(COMPANIONS) or {}) - set(companions))
    if unread:
        v["stats"]["workloads_not_read"] = unread
    return v


def _node_logs(r: Run, options: Options) -> Verdict:
    from checkers import node_logs
    from checkers.rundir import iter_node_log_lines
    if r.path is None:
        return _no_run_dir()
    patterns = r.run.get("node_log_patterns") or {}
    return node_logs.check_logs(iter_node_log_lines(r.path), patterns.get("failure") or (),
                                patterns.get("benign") or ())


def _node_exits(r: Run, options: Options) -> Verdict:
    from checkers import node_logs
    from checkers.rundir import load_exits, node_names
    if r.path is None or not node_names(r.path):
        # No node dirs here (a run judged away from its files): no exits
        # recorded is not the same as none seen.
        return _no_run_dir()
    return node_logs.check_exits(load_exits(r.path), r.history.ops,
                                 r.run.get("start_monotonic_ns"))


def _read_commit_point(r: Run, options: Options) -> Verdict:
    from checkers import read_commit_point
    events = leader_events(r)
    if not events:
        return _no_events()
    return read_commit_point.check(r.history.ops, events, r.run.get("start_monotonic_ns"),
                                   options.get("data"), companions=options.get(COMPANIONS),
                                   main=str(config_of(r).get("workload", "")),
                                   realtime=options.get("realtime", True),
                                   assume_hw_before_answers=options.get(
                                       "assume_hw_before_answers", False))


def _realtime(config: Mapping[str, Any]) -> dict[str, Any]:
    # Real-time order binds the final state only under a strict model.
    return {"realtime": config.get("consistency_model", "strict-serializable")
            in ("strict-serializable", "linearizable")}


def _consistency_model(config: Mapping[str, Any]) -> dict[str, Any]:
    return {"model": config.get("consistency_model", "strict-serializable")}


def _rw_register_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """The model, and which of Elle's version-order inferences the checker may
    use: the run's `elle_options`, else writes-follow-reads (true of every
    serializable store) and, when the model checked is strict serializability
    (which makes every key linearizable), linearizable keys."""
    options = _consistency_model(config)
    if config.get("elle_options") is not None:
        return {**options, **{k.replace("-", "_"): bool(v)
                              for k, v in config["elle_options"].items()}}
    strict = options["model"] == "strict-serializable"
    return {**options, "wfr_keys": True, "linearizable_keys": strict}


STATS = Checker("stats", "run", _stats)
LINEARIZABILITY = Checker(
    "linearizability", "key", _linearizability,
    from_config=lambda c: {**({"model": str(c["lin_model"])} if c.get("lin_model") else {}),
                           **(c.get("lin_options") or {})})
ELLE = Checker("elle", "run", _elle, from_config=_consistency_model)
RW_REGISTER = Checker("rw-register", "run", _rw_register, from_config=_rw_register_options)
# Its `data` option (checkers.datatypes) comes from the run's workload (workloads.judging).
# It judges the main workload's writes, matching the dumps' committed values
# to them on (workload, key, value): the companions' ops tell it which are theirs.
DURABILITY = Checker("durability", "run", _durability, needs=_durability_needs,
                     needs_node_files=True, every_workload=True)
DIVERGENCE = Checker("divergence", "run", _divergence, needs=lambda o: frozenset({LOG_DUMP}),
                     needs_node_files=True)
ELECTIONS = Checker("elections", "run", _elections, needs=lambda o: frozenset({EVENTS}),
                    needs_node_files=True)
AVAILABILITY = Checker("availability", "run", _availability,
                       from_config=lambda c: {"thresholds": c.get("thresholds")},
                       needs_node_files=True)

# Its `data` option comes from the run's workload, as durability's.
# It judges each workload's keys against that workload's ops (COMPANIONS).
NODE_STATE = Checker("node-state", "run", _node_state, from_config=_realtime,
                     needs=lambda o: frozenset({APPLIED_STATE}), needs_node_files=True,
                     every_workload=True)
NODE_LOGS_CHECKER = Checker("node-logs", "run", _node_logs,
                            needs=lambda o: frozenset({NODE_LOGS}), needs_node_files=True)
NODE_EXITS_CHECKER = Checker("node-exits", "run", _node_exits,
                             needs=lambda o: frozenset({NODE_EXITS}), needs_node_files=True)
# Its `data` option comes from the run's workload, as durability's; it reads
# every workload's linearizable reads (COMPANIONS), under the run's model.
READ_COMMIT_POINT = Checker("read-commit-point", "run", _read_commit_point,
                            from_config=_realtime, needs=lambda o: frozenset({EVENTS}),
                            needs_node_files=True, every_workload=True)

CHECKS: dict[str, Checker] = {c.name: c for c in (
    STATS, LINEARIZABILITY, ELLE, RW_REGISTER, DURABILITY, DIVERGENCE, ELECTIONS,
    AVAILABILITY, NODE_STATE, NODE_LOGS_CHECKER, NODE_EXITS_CHECKER, READ_COMMIT_POINT)}
# The checkers that judge the nodes rather than a workload's answers: every
# workload's run gets them, after its own (a system's, `every_run`, included).
CLUSTER_CHECKERS: tuple[Checker, ...] = (ELECTIONS, DIVERGENCE, AVAILABILITY, NODE_STATE,
                                         NODE_LOGS_CHECKER, NODE_EXITS_CHECKER,
                                         READ_COMMIT_POINT)

# The entry-point group through which a system or a plug-in adds checkers
# (the bundled systems' own among them, pyproject.toml): each entry point names a
# `Contributed` (or an iterable of them).
GROUP = "faultline.checkers"
# What the systems' vocabularies say about voters that may not vote (their
# contributions', for divergence and availability).
VOTE_LOSS: tuple[VoteLoss, ...] = ()
# The anomaly sentences the contributions bring (checkers.anomaly_text reads them).
SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {}


def _register_checker(contributed: Contributed) -> None:
    """Add a checker (a `checkers.checker.Contributed`); its name must be new.
    Only while the registry loads: the tables derived from it are read then."""
    global CLUSTER_CHECKERS, VOTE_LOSS
    name = contributed.checker.name
    if name in CHECKS:
        raise ValueError(f"checker {name!r} is registered twice")
    CHECKS[name] = contributed.checker
    if contributed.every_run:
        CLUSTER_CHECKERS = (*CLUSTER_CHECKERS, contributed.checker)
    VOTE_LOSS = (*VOTE_LOSS, *contributed.vote_loss)
    SENTENCES.update(contributed.sentences)


def _load_entry_points() -> None:
    for contributed in contributions(GROUP, Contributed):
        _register_checker(contributed)


def check_names(names: list[str]) -> None:
    """Raise ValueError (one sentence) for a checker name not in the registry."""
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown checker(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}")


def skipped_checks(run: Mapping[str, Any], plan: Plan) -> dict[str, str]:
    """Checkers of `plan` that cannot judge this run because its system leaves
    no such artefacts (run.json `artifacts`), with the reason."""
    if "artifacts" not in run:
        return {}
    have = set(run["artifacts"])
    config = run.get("config") or {}
    out = {}
    for name, options in plan.items():
        missing = CHECKS[name].needs(options) - have
        if missing:
            out[name] = (f"{config.get('db', 'this system')} leaves no "
                         + " or ".join(ARTIFACT_WORDS.get(m, m) for m in sorted(missing)))
    return out


def runnable(run: Mapping[str, Any], plan: Plan) -> Plan:
    """The part of `plan` the run's system can feed."""
    skipped = skipped_checks(run, plan)
    return {n: o for n, o in plan.items() if n not in skipped}


def ops_of(ops: list[Op], workload: str, main: str) -> list[Op]:
    """Pure: the ops a checker of `workload` judges in a run whose main
    workload is `main`: the nemesis's, and the clients' that workload issued
    (an op without a tag is the main workload's, as every op of a run made
    before runs composed workloads)."""
    return [op for op in ops
            if op.process == NEMESIS or (op.workload or main) == workload]


def judges_key(ops: list[Op], options: Options, main: str) -> bool:
    """Pure: whether a checker with `options` judges a key whose client ops
    are `ops` (a Spark key group): a checker given OPS_OF judges its
    workload's keys only, and the other workload's keys are none of its."""
    workload = options.get(OPS_OF)
    return workload is None or any(op.process != NEMESIS and (op.workload or main) == workload
                                   for op in ops)


def run_check(name: str, r: Run, options: Options) -> tuple[Verdict, float]:
    """One checker's verdict and the seconds it took; a crash is an `unknown`
    verdict naming the exception, so one broken checker never hides the others.
    With OPS_OF in `options` the checker sees that workload's ops alone, and
    its verdict names the workload (stats `workload`)."""
    workload = options.get(OPS_OF)
    if workload is not None:
        options = {k: v for k, v in options.items() if k != OPS_OF}
        main = str(config_of(r).get("workload", ""))
        r = replace(r, history=replace(r.history, ops=ops_of(r.history.ops, workload, main)))
    v, seconds = _run_check(name, r, options)
    if workload is not None:
        v["stats"] = {**v.get("stats", {}), "workload": workload}
    return v, seconds


def _run_check(name: str, r: Run, options: Options) -> tuple[Verdict, float]:
    started = time.perf_counter()
    if not any(op.process != NEMESIS for op in r.history.ops):
        # Nothing a client did: every verdict would be vacuous.
        return verdict("unknown", stats={"reason": NO_CLIENT_OPS}), 0.0
    try:
        v = CHECKS[name].fn(r, options)
    except Exception as e:  # a checker bug must not take the other verdicts down
        v = verdict("unknown", stats={"error": f"{type(e).__name__}: {e}"})
    return v, time.perf_counter() - started


def check_loaded(r: Run, plan: Plan) -> dict[str, Any]:
    """The `verdicts.json` document for one run, each checker of `plan` that
    the run can feed run in-process."""
    verdicts: dict[str, Verdict] = {}
    for name, options in runnable(r.run, plan).items():
        v, seconds = run_check(name, r, options)
        v["stats"] = {**v.get("stats", {}), "seconds": round(seconds, 3)}
        verdicts[name] = v
    document = with_skipped(merge(verdicts), r.run, plan)
    document["coverage"] = run_coverage(r.history.ops, r.events, r.run)
    return document


def with_skipped(document: dict[str, Any], run: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
    """Say in verdicts.json which checkers did not run and why."""
    skipped = skipped_checks(run, plan)
    if skipped:
        document["skipped"] = skipped
    return document


def check_run_dir(run_dir: Path, plan_for: Callable[[dict[str, Any]], Plan]) -> dict[str, Any]:
    """Check a saved run in-process and write its verdicts.json, bound to the
    history it judged (digest taken before reading it). `plan_for` reads the
    plan off run.json."""
    digest = history_digest(run_dir)
    loaded = load_run(run_dir)
    document = check_loaded(loaded, plan_for(loaded.run))
    write_verdicts(run_dir, document, digest)
    return document


def merge_key_verdicts(per_key: dict[Any, Verdict]) -> Verdict:
    """Per-key verdicts of a P-compositional checker folded into the run's verdict."""
    anomalies = []
    for key, v in per_key.items():
        for a in v.get("anomalies", []):
            anomalies.append({"key": key, **a} if "key" not in a else a)
    validity = combine([v["valid"] for v in per_key.values()]) if per_key else True
    counts = {"valid": 0, "invalid": 0, "unknown": 0}
    for v in per_key.values():
        counts["valid" if v["valid"] is True else "invalid" if v["valid"] is False
               else "unknown"] += 1
    stats: dict[str, Any] = {"keys": len(per_key), "keys_by_validity": counts}
    reasons = [(v.get("stats") or {}).get("reason") for v in per_key.values()
               if v["valid"] == "unknown"]
    if validity == "unknown":
        stats["reason"] = (f"{counts['unknown']} of {len(per_key)} key(s) undecided: "
                           f"{next((r for r in reasons if r), 'no reason given')}")
    return verdict(validity, anomalies, stats)


def rows_from_document(run_id: str, document: dict[str, Any]) -> list[dict[str, Any]]:
    """Verdict-table rows (one per checker) from a run's verdicts.json."""
    rows = []
    for name, v in (document.get("checkers") or {}).items():
        rows.append({"run": run_id, "checker": name, "key": None,
                     "valid": {True: "true", False: "false"}.get(v.get("valid"), "unknown"),
                     "anomaly_count": len(v.get("anomalies") or []),
                     "seconds": float((v.get("stats") or {}).get("seconds", 0.0)),
                     "verdict_json": json.dumps(v, default=str)})
    return rows


def overall_validity(table: Any) -> Validity:
    """The overall validity of a verdict table's `valid` column ("true"/"false"/"unknown")."""
    return combine([{"true": True, "false": False}.get(v, "unknown") for v in table["valid"]])


# Last: the checkers systems and plug-ins add join the ones above.
_load_entry_points()
