"""faultline's public API: what a team needs to test its own database.

    from faultline import System, NodeSpec, Op, ok, fail, info, clients_for, REGISTERS

The optional abilities an adapter may offer (`Leadership`, `AppliedState`,
`ChangeVoters`, ...: `ABILITIES`) are runtime-checkable Protocols
(nodes.abilities); docs/extending.md says which faults and checkers need each.

A `System` (faultline.system) bundles a DB adapter, a client per workload and
defaults; register it under the `faultline.systems` entry-point group.
docs/extending.md builds one in under 100 lines. Run it with
`faultline run --system NAME` or, from pytest, the `faultline_run` fixture
(faultline.pytest_plugin).
"""

from checkers.durable import write_atomic as write_durably
from faultline.system import (
    ARTIFACTS,
    DB,
    GO_BENIGN_LINES,
    GO_FAILURE_LINES,
    LISTS,
    LOGS,
    PYTHON_BENIGN_LINES,
    PYTHON_FAILURE_LINES,
    REGISTER_TXNS,
    REGISTERS,
    Client,
    NodeSpec,
    NodeState,
    Op,
    System,
    Timers,
    clients_for,
    workload_data,
)
from nodes.abilities import (
    ABILITIES,
    AppliedState,
    ChangeVoters,
    Leadership,
    LogGrowth,
    MembersLeaveWhenRemoved,
    NodeLogPatterns,
    NodeStatus,
    PowerCutOnAck,
    PreloadClock,
    Reformat,
    ReplicaProgress,
    StateFiles,
)
from nodes.child_python import module_argv as python_module_argv
from workloads.clients.outcome import CLIENT_OPTIONS, fail, info, ok

__all__ = ["ABILITIES", "ARTIFACTS", "CLIENT_OPTIONS", "DB", "GO_BENIGN_LINES", "GO_FAILURE_LINES",
           "LISTS", "LOGS", "PYTHON_BENIGN_LINES", "PYTHON_FAILURE_LINES", "REGISTERS",
           "REGISTER_TXNS", "AppliedState", "ChangeVoters", "Client", "Leadership", "LogGrowth",
           "MembersLeaveWhenRemoved", "NodeLogPatterns", "NodeSpec", "NodeState", "NodeStatus",
           "Op", "PowerCutOnAck", "PreloadClock", "Reformat", "ReplicaProgress", "StateFiles",
           "System", "Timers", "clients_for", "fail", "info", "ok", "python_module_argv",
           "workload_data", "write_durably"]
