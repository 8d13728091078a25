"""Which checkers judge a run, and running them in-process.

One registry serves `faultline run` (in-process, at the end of a run) and
`faultline check` (Spark), so a run gets the same verdict either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.history import NEMESIS, History, Op, client_ops
from checkers.rundir import Run, load_dumps, load_events, load_json, load_run
from checkers.stats import NO_CLIENT_OPS
from checkers.verdict import Verdict, combine, merge, verdict
from harness.verdict_store import history_digest, write_verdicts  # noqa: F401 (re-export)
from workloads.registry import WORKLOADS


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


def lin_model(run: dict[str, Any]) -> str:
    config = run.get("config") or {}
    if config.get("lin_model"):
        return str(config["lin_model"])
    workload = WORKLOADS.get(config.get("workload", ""))
    return getattr(workload, "LIN_MODEL", "cas-register")


def _linearizability(r: Run) -> Verdict:
    from checkers import linearizability
    opts = config_of(r).get("lin_options") or {}
    return linearizability.check(client_ops(r.history.ops), r.run,
                                 model=lin_model(r.run), **opts)


def _stats(r: Run) -> Verdict:
    from checkers import stats
    return stats.check(r.history.ops, r.run)


def _elle(r: Run) -> Verdict:
    from checkers import elle
    return elle.check(client_ops(r.history.ops), r.run,
                      model=config_of(r).get("consistency_model", "strict-serializable"))


def _rw_register(r: Run) -> Verdict:
    from checkers.elle import rw_register
    config = config_of(r)
    return rw_register.check(client_ops(r.history.ops), r.run,
                             model=config.get("consistency_model", "strict-serializable"),
                             **WORKLOADS["rw-register"].elle_options(config))


def _durability(r: Run) -> Verdict:
    from checkers import durability
    return durability.check(r.history.ops, r.dumps or None,
                            config_of(r).get("workload", "register"))


def _divergence(r: Run) -> Verdict:
    from checkers import divergence
    if not r.dumps:
        return verdict("unknown", stats={"reason": "no node log dumps in the run"})
    return divergence.check(r.dumps, r.events or None)


def _elections(r: Run) -> Verdict:
    from checkers import elections
    if not r.events:
        return verdict("unknown", stats={"reason": "no node event logs in the run"})
    return elections.check(r.events)


def _invariants(r: Run) -> Verdict:
    from checkers import invariants
    if not r.events:
        return verdict("unknown", stats={"reason": "no node event logs in the run"})
    return invariants.check(r.history.ops, r.events, r.run)


def _availability(r: Run) -> Verdict:
    from checkers import availability
    return availability.check(r.history.ops, r.events or None, r.run,
                              config_of(r).get("thresholds"))


@dataclass(frozen=True)
class CheckSpec:
    name: str
    # "key": P-compositional, may be run per (run, key) group; "run": needs the whole run.
    scope: str
    fn: Callable[[Run], Verdict]
    # Which inputs the checker reads besides the history (for loaders that can skip I/O).
    needs_node_files: bool = False


CHECKS: dict[str, CheckSpec] = {c.name: c for c in [
    CheckSpec("stats", "run", _stats),
    CheckSpec("linearizability", "key", _linearizability),
    CheckSpec("elle", "run", _elle),
    CheckSpec("rw-register", "run", _rw_register),
    CheckSpec("durability", "run", _durability, needs_node_files=True),
    CheckSpec("divergence", "run", _divergence, needs_node_files=True),
    CheckSpec("elections", "run", _elections, needs_node_files=True),
    CheckSpec("invariants", "run", _invariants, needs_node_files=True),
    CheckSpec("availability", "run", _availability, needs_node_files=True),
]}


# What each checker needs from the nodes, beyond the history. Durability can
# judge list-append and log histories from their reads alone; for registers
# only the committed log shows whether an acknowledged write survived.
NODE_NEEDS: dict[str, Callable[[dict[str, Any]], set[str]]] = {
    "divergence": lambda config: {"log_dump"},
    "elections": lambda config: {"events"},
    "invariants": lambda config: {"events"},
    "durability": lambda config: ({"log_dump"} if config.get("workload") in ("register", "kv")
                                  else set()),
}


def skipped_checks(run: dict[str, Any], names: list[str]) -> dict[str, str]:
    """Checkers that cannot judge this run because its system leaves no such
    artefacts (run.json `artifacts`, from the DB adapter), with the reason."""
    if "artifacts" not in run:
        return {}
    have = set(run["artifacts"])
    config = run.get("config") or {}
    out = {}
    for name in names:
        missing = NODE_NEEDS.get(name, lambda c: set())(config) - have
        if missing:
            out[name] = (f"{config.get('db', 'this system')} leaves no "
                         f"{' or '.join(sorted(missing)).replace('_', ' ')}s")
    return out


def requested_checks(run: dict[str, Any]) -> list[str]:
    """The checkers a run asked for (run.json `config.checkers`), else its workload's."""
    config = run.get("config") or {}
    names = config.get("checkers")
    if names is None:
        workload = WORKLOADS.get(config.get("workload", ""))
        names = workload.checker_names(config) if workload else ["linearizability"]
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown checker(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    return list(names)


def checks_for(run: dict[str, Any]) -> list[str]:
    """The checkers that will judge a run: those requested that its system can feed."""
    names = requested_checks(run)
    skipped = skipped_checks(run, names)
    return [n for n in names if n not in skipped]


def run_check(name: str, r: Run) -> tuple[Verdict, float]:
    """One checker's verdict and the seconds it took; a crash is an `unknown`
    verdict naming the exception, so one broken checker never hides the others."""
    started = time.perf_counter()
    if not any(op.process != NEMESIS for op in r.history.ops):
        # Nothing a client did: every verdict would be vacuous.
        return verdict("unknown", stats={"reason": NO_CLIENT_OPS}), 0.0
    try:
        v = CHECKS[name].fn(r)
    except Exception as e:  # a checker bug must not take the other verdicts down
        v = verdict("unknown", stats={"error": f"{type(e).__name__}: {e}"})
    return v, time.perf_counter() - started


def check_loaded(r: Run, names: list[str] | None = None) -> dict[str, Any]:
    """The `verdicts.json` document for one run, each checker run in-process."""
    verdicts: dict[str, Verdict] = {}
    for name in names if names is not None else checks_for(r.run):
        v, seconds = run_check(name, r)
        v["stats"] = {**v.get("stats", {}), "seconds": round(seconds, 3)}
        verdicts[name] = v
    return with_skipped(merge(verdicts), r.run)


def with_skipped(document: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """Say in verdicts.json which checkers did not run and why."""
    skipped = skipped_checks(run, requested_checks(run))
    if skipped:
        document["skipped"] = skipped
    return document


def check_run_dir(run_dir: Path) -> dict[str, Any]:
    """Check a saved run in-process and write its verdicts.json, bound to the
    history it judged (digest taken before reading it)."""
    digest = history_digest(run_dir)
    document = check_loaded(load_run(run_dir))
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
        counts[{True: "valid", False: "invalid"}.get(v["valid"], "unknown")] += 1
    return verdict(validity, anomalies, {"keys": len(per_key), "keys_by_validity": counts})


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


def overall_validity(table: Any) -> bool | str:
    """The overall validity of a verdict table's `valid` column ("true"/"false"/"unknown")."""
    return combine([{"true": True, "false": False}.get(v, "unknown") for v in table["valid"]])
