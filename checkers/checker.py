"""What a checker is to the registry (checkers.registry), apart from the
registry itself: a system's or a plug-in's checkers module imports this, and
the registry loads those modules through its entry points, so neither
imports the other back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checkers.rundir import Run
from checkers.verdict import Verdict
from nodes.events import VoteLoss

Options = Mapping[str, Any]
# What a checker may need from the nodes besides the history (run.json
# `artifacts`, from the system's DB adapter).
LOG_DUMP, EVENTS = "log_dump", "events"
# What the harness leaves for every system besides: each node's applied state
# (adapters with `nodes.db.AppliedState`), its output logs with the patterns
# that judge them, and the exits no kill caused.
APPLIED_STATE, NODE_LOGS, NODE_EXITS = "applied_state", "node_logs", "node_exits"
# Each artefact as a skip reason says it ("leaves no event lines").
ARTIFACT_WORDS = {LOG_DUMP: "log dumps", EVENTS: "event lines", APPLIED_STATE: "applied states",
                  NODE_LOGS: "node logs", NODE_EXITS: "node exit records"}
# A plan's option naming the workload whose ops a checker judges, in a run
# that composes a companion workload with its main one (workloads.companion):
# the run step gives the checker those ops alone (and the nemesis's) and
# names the workload in its verdict; the checker itself never sees it.
OPS_OF = "ops_of"
# A plan's option for a checker that judges every workload's ops itself
# (`Checker.every_workload`): the companion workloads' data types by name,
# from the workload registry (the ops tell which workload issued them).
COMPANIONS = "companions"
# Between a companion workload's name and its own key: the namespace of its
# keys that are not integers (no main workload's key enters it: register `r0`).
COMPANION_SEPARATOR = ":"


def companion_key(workload: str, key: Any) -> Any:
    """The key a companion `workload`'s own `key` has in the store and the
    history. An integer key (a transaction workload's: 0, 1, ...) stays an
    integer, a negative one (-1, -2, ...), so a store that keys its tables by
    integer serves it; the main workloads' integer keys are never negative.
    Any other key is `<workload>:<key>`."""
    if isinstance(key, int) and not isinstance(key, bool):
        return -key - 1
    return f"{workload}{COMPANION_SEPARATOR}{'' if key is None else key}"


def is_companion_key(workload: str, key: Any) -> bool:
    """Whether `key`, as the history or a node's state (by string) names it,
    is one `companion_key(workload, ...)` makes."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key < 0
    if not isinstance(key, str):
        return False
    return key.startswith(f"{workload}{COMPANION_SEPARATOR}") or (
        key.startswith("-") and key[1:].isdigit())


def _nothing(options: Options) -> frozenset[str]:
    return frozenset()


@dataclass(frozen=True)
class Checker:
    """A checker in the registry.

    scope: "key": P-compositional, may run per (run, key) group; "run": needs the whole run.
    fn: the checker, `(run, options) -> Verdict`.
    from_config: its options read off run.json's config (what a user set);
        a workload's defaults come underneath (`workloads.judging`).
    needs: the node artefacts it cannot judge without, given its options.
    needs_node_files: whether it reads node dumps or events at all (loaders skip the I/O).
    every_workload: in a run with a companion workload, it sees every
        workload's ops and is told their data types (option COMPANIONS),
        instead of seeing one workload's ops (OPS_OF).
    """

    name: str
    scope: str
    fn: Callable[[Run, Options], Verdict]
    from_config: Callable[[Mapping[str, Any]], dict[str, Any]] = field(
        default=lambda config: {})
    needs: Callable[[Options], frozenset[str]] = _nothing
    needs_node_files: bool = False
    every_workload: bool = False


@dataclass(frozen=True)
class Contributed:
    """A checker a system or plug-in adds. `every_run`: every workload's run
    gets it, among the cluster checkers (skipped, with the reason, where the
    run's system leaves none of what it `needs`); otherwise only a run that
    names it (run.json `config.checkers`) does."""

    checker: Checker
    every_run: bool = False
    # The lines of its system's vocabulary by which a voter says it may not
    # vote (divergence's convergence excuse, nodes.events.VoteLoss).
    vote_loss: tuple[VoteLoss, ...] = ()
    # Its anomaly kinds in one sentence each (checkers.anomaly_text), by type.
    sentences: Mapping[str, Callable[[dict[str, Any]], str]] = field(default_factory=dict)
