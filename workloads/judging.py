"""What judges a run: the checkers its workload names and each one's options,
read off run.json (so a saved run is judged as it was when it ran)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkers.registry import (
    CHECKS,
    CLUSTER_CHECKERS,
    COMPANIONS,
    DURABILITY,
    LINEARIZABILITY,
    NODE_STATE,
    OPS_OF,
    READ_COMMIT_POINT,
    STATS,
    Plan,
    check_names,
)
from workloads.contract import CheckerOptions, Workload
from workloads.registry import WORKLOADS


def default_checkers(workload_name: str) -> list[str]:
    """A workload's checkers: the stats, its own, then those that judge the nodes.
    A history of no known workload (an imported one) is judged for linearizability."""
    workload = WORKLOADS.get(workload_name)
    if workload is None:
        return [LINEARIZABILITY.name]
    return [c.name for c in (STATS, *workload.CHECKERS, *CLUSTER_CHECKERS)]


def plan_for(run: Mapping[str, Any]) -> Plan:
    """name -> options for every checker the run asked for (run.json
    `config.checkers`), else its workload's. Options: the workload's defaults
    (durability's data type among them), overridden by what the config sets."""
    config = run.get("config") or {}
    names = config.get("checkers")
    if names is None:
        names = default_checkers(config.get("workload", ""))
    check_names(list(names))
    workload = WORKLOADS.get(config.get("workload", ""))
    defaults = workload_defaults(workload, config)
    plan = {n: {**defaults.get(n, {}), **CHECKS[n].from_config(config)} for n in names}
    companion = WORKLOADS.get(config.get("companion") or "")
    if companion is None or workload is None:
        return plan
    return with_companion(plan, workload, companion, config)


def with_companion(plan: Plan, main: Workload, companion: Workload,
                   config: Mapping[str, Any]) -> Plan:
    """A run with a companion workload (workloads.companion): every checker
    of `plan` judges the main workload's ops, and the companion's own
    checkers its ops; one of those the plan already has (durability, which
    judges the main workload's data type) is left to the main workload. A
    checker that judges every workload's ops itself (node-state) is told the
    companion's data type instead."""
    out = {n: {**o, COMPANIONS: {companion.NAME: companion.DATA}} if CHECKS[n].every_workload
           else {**o, OPS_OF: main.NAME} for n, o in plan.items()}
    defaults = workload_defaults(companion, config)
    for c in companion.CHECKERS:
        if c.name not in out:
            out[c.name] = {**defaults.get(c.name, {}), **c.from_config(config),
                           OPS_OF: companion.NAME}
    return out


def workload_defaults(workload: Workload | None, config: Mapping[str, Any]
                      ) -> dict[str, dict[str, Any]]:
    """Checker options a workload implies: what its ops act on, for the
    checkers that read a history by its data type, and its own defaults."""
    if workload is None:
        return {}
    own = workload.checker_options(config) if isinstance(workload, CheckerOptions) else {}
    return {DURABILITY.name: {"data": workload.DATA}, NODE_STATE.name: {"data": workload.DATA},
            READ_COMMIT_POINT.name: {"data": workload.DATA}, **own}
