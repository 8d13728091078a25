"""Turning a request's fate into a completion op.

The one rule that matters: `fail` only when the request certainly did not
take effect, `info` whenever it might have. A wrong `fail` is a false anomaly.
"""

from __future__ import annotations

from typing import Any

from checkers.history import Op

# --client-option keys clients share: a client class that reads them lists them
# in its OPTIONS with its own (`CLIENT_OPTIONS | {...}`); a key it does not list
# is refused before the run starts.
CLIENT_OPTIONS = {"op_timeout": "positive-number", "connect_timeout": "positive-number",
                  "follow_leader": "bool"}


def completion(invoke: Op, typ: str, value: Any = None, node: str | None = None,
               error: str | None = None) -> Op:
    return Op(invoke.index, invoke.time, invoke.process, typ, invoke.f,
              invoke.value if value is None and typ != "ok" else value, invoke.key,
              node or invoke.node, error)


def ok(invoke: Op, value: Any, node: str | None) -> Op:
    return completion(invoke, "ok", value, node)


def fail(invoke: Op, error: str, node: str | None = None) -> Op:
    return completion(invoke, "fail", None, node, error)


def info(invoke: Op, error: str, node: str | None = None) -> Op:
    return completion(invoke, "info", None, node, error)
