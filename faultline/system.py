"""The one extension point: a `System` says everything faultline needs to test a database.

A team tests its own database from its own repository: it writes a DB adapter
(the `nodes.db.DB` protocol: set up a node's files, the argv that starts it,
when it is ready, who leads, where its data files are, what it dumps for the
checkers), one client class per workload it supports, and a `System` that
bundles them; it registers that object under the `faultline.systems` entry-point
group (or names it with `--system package.module:NAME`). It never edits faultline.

Process control is the harness's, the same for every system, because it is what
a machine does to a process: a node is *started* by running `argv` in its own
network namespace, *killed* with SIGKILL to its whole process tree, *paused*
with SIGSTOP to that tree and *resumed* with SIGCONT; *stopped* at teardown the
same way as killed. A system whose node is several processes (a server and its
sentinel) starts them from one parent, so they live and die together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from checkers.datatypes import LISTS, LOGS, REGISTER_TXNS, REGISTERS
from checkers.history import Op
from nodes.db import DB, GENERIC_TIMERS, NodeSpec, NodeState, Timers
from nodes.events import EventKind
from nodes.log_patterns import (
    GO_BENIGN_LINES,
    GO_FAILURE_LINES,
    PYTHON_BENIGN_LINES,
    PYTHON_FAILURE_LINES,
)

__all__ = ["ARTIFACTS", "GO_BENIGN_LINES", "GO_FAILURE_LINES", "LISTS", "LOGS",
           "PYTHON_BENIGN_LINES", "PYTHON_FAILURE_LINES", "REGISTERS", "REGISTER_TXNS",
           "Client", "DB", "NodeSpec", "NodeState", "Op",
           "System", "Timers", "clients_for", "workload_data"]

# What a node can leave for the checkers besides the history: "log_dump"
# (nodes/<n>/log.msgpack, judged by divergence/durability) and "events" (JSON
# event lines on stdout, judged by elections/invariants). A checker needing an
# artefact a system does not leave says "unknown", never "valid".
ARTIFACTS = frozenset({"log_dump", "events"})


class Client(Protocol):
    """One client per worker process, one op open at a time. `invoke` turns an
    invoke op into the system's request and its answer into an ok / fail / info
    completion (`workloads.clients.outcome`); it never raises for a request
    that may have taken effect (that is an info); an exception out of it is
    a bug in the client and ends the run as a harness error (255). `DATA`: the data types
    whose ops it carries out (REGISTERS, LISTS, REGISTER_TXNS, LOGS)."""

    # Read-only (a property here), so a class's own `DATA = (REGISTERS,)` fits.
    @property
    def DATA(self) -> tuple[str, ...]: ...

    def __init__(self, workload: str, nodes: dict[str, tuple[str, int]],
                 options: dict[str, Any]) -> None: ...

    def invoke(self, op: Op) -> Op: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class System:
    """A system under test.

    name: what `--system`/`--db` and run.json call it.
    db: makes the DB adapter (called once per run, in the harness process).
    clients: workload name -> client class; the workloads this system supports
        (`clients_for(client)`: every workload its client's DATA covers).
    node_defaults: node options a run uses unless `--node-option` says otherwise.
    node_options: --node-option keys the adapter reads, with their kind
        (`workloads.options.OPTION_KINDS`: "int", "bool", "string", ...). An
        adapter class may also have `check_options(options)` (raises
        ValueError) for what its nodes would refuse at start, checked before
        a run starts.
    check_bugs: validates `--bug` switches (raises ValueError); None: the
        system has no bug switches and `--bug` is refused.
    description: one line for `--help`.
    timers: the system's failover and recovery bounds from a run's node
        options (`nodes.db.Timers`); availability and convergence judge by
        them. Default: generic, slow bounds.
    events: the kinds of event line its nodes write (its vocabulary, built on
        nodes.events), which docs/contracts.md lists; none by default.
    """

    name: str
    db: Callable[[], DB]
    clients: Mapping[str, type]
    node_defaults: Mapping[str, Any] = field(default_factory=dict)
    node_options: Mapping[str, str] | None = None
    check_bugs: Callable[[list[str]], None] | None = None
    description: str = ""
    timers: Callable[[Mapping[str, Any]], Timers] = lambda options: GENERIC_TIMERS
    events: tuple[EventKind, ...] = ()

    @property
    def workloads(self) -> list[str]:
        return sorted(self.clients)

    def client_class(self, workload: str) -> type:
        try:
            return self.clients[workload]
        except KeyError:
            raise ValueError(f"system {self.name!r} has no client for workload {workload!r}; "
                             f"it supports {', '.join(self.workloads)}") from None


def clients_for(client: type[Client]) -> dict[str, type]:
    """A System's `clients` for one client class: every workload whose data
    type (checkers.datatypes) is in the class's `DATA`, so a new workload of
    a type it serves needs no edit here or in the system."""
    from workloads.registry import WORKLOADS
    data = cast(tuple[str, ...], client.DATA)   # the class attribute the property stands for
    return {name: client for name, workload in sorted(WORKLOADS.items()) if workload.DATA in data}


def workload_data(workload: str) -> str:
    """The data type (checkers.datatypes: REGISTERS, LISTS, ...) a workload's
    ops act on: how a client serving several types tells which one a run
    asked of it. KeyError for a workload faultline does not know."""
    from workloads.registry import WORKLOADS
    return WORKLOADS[workload].DATA
