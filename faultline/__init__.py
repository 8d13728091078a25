"""faultline's public API: what a team needs to test its own database.

    from faultline import System, NodeSpec, Op, ok, fail, info, clients_for, REGISTERS

A `System` (faultline.system) bundles a DB adapter, a client per workload and
defaults; register it under the `faultline.systems` entry-point group.
docs/extending.md builds one in under 100 lines. Run it with
`faultline run --system NAME` or, from pytest, the `faultline_run` fixture
(faultline.pytest_plugin).
"""

from faultline.system import (
    ARTIFACTS,
    DB,
    LISTS,
    LOGS,
    REGISTER_TXNS,
    REGISTERS,
    Client,
    NodeSpec,
    Op,
    System,
    Timers,
    clients_for,
)
from workloads.clients.outcome import CLIENT_OPTIONS, fail, info, ok

__all__ = ["ARTIFACTS", "CLIENT_OPTIONS", "DB", "LISTS", "LOGS", "REGISTERS", "REGISTER_TXNS",
           "Client", "NodeSpec", "Op", "System", "Timers", "clients_for", "fail", "info", "ok"]
