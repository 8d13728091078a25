"""The replicated state: a key-value map and named append-only logs.

`apply` is deterministic in the committed command alone, so every replica that
applies the same log prefix holds the same state and would give the same
answers. No I/O here; the server feeds it committed entries in offset order.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    ok: bool
    value: Any = None
    error: str | None = None  # set when not ok; every error here is definite


OK = Outcome(True)


class StateMachine:
    def __init__(self) -> None:
        self.kv: dict[Any, Any] = {}
        self.logs: dict[str, list[Any]] = {}

    def apply(self, command: dict[str, Any]) -> Outcome:
        """Apply one committed command. Never raises: a malformed command that
        made it into the log (a bug, a newer node) changes nothing."""
        handler = _COMMANDS.get(command.get("op"))  # type: ignore[arg-type]
        if handler is None:
            return Outcome(False, error="bad_command")
        try:
            return handler(self, command)
        except (KeyError, TypeError, ValueError):
            return Outcome(False, error="bad_command")

    def query(self, request: dict[str, Any]) -> Outcome:
        """Answer a read (`get`, log `read`) against the state as it is now; the
        server calls this right after applying the read's barrier entry."""
        op = request.get("op")
        if op == "get":
            return Outcome(True, copy.deepcopy(self.kv.get(request["key"])))
        if op == "read":
            return Outcome(True, self.read_log(request["log"], request["from"], request["count"]))
        return Outcome(False, error="bad_command")

    def read_log(self, name: str, start: int, count: int) -> list[list[Any]]:
        entries = self.logs.get(name, [])
        end = min(len(entries), start + count)
        return [[i, copy.deepcopy(entries[i])] for i in range(start, end)]

    def _put(self, c: dict[str, Any]) -> Outcome:
        self.kv[c["key"]] = c["value"]
        return OK

    def _cas(self, c: dict[str, Any]) -> Outcome:
        if self.kv.get(c["key"]) != c["expect"]:
            return Outcome(False, error="cas_mismatch")
        self.kv[c["key"]] = c["value"]
        return OK

    def _txn(self, c: dict[str, Any]) -> Outcome:
        ops = c["ops"]
        # Check every append target first so a txn applies entirely or not at all.
        # list-append micro-ops: append, r (a key's list, [] if absent);
        # rw-register ones: w (set), get (the value, None if absent).
        for f, key, _ in ops:
            if f in ("append", "r") and not isinstance(self.kv.get(key, []), list):
                return Outcome(False, error="type_mismatch")
            if f not in TXN_MICRO_OPS:
                return Outcome(False, error="bad_command")
        result = []
        for f, key, value in ops:
            if f == "append":
                self.kv.setdefault(key, []).append(value)
                result.append([f, key, value])
            elif f == "w":
                self.kv[key] = value
                result.append([f, key, value])
            elif f == "get":
                result.append([f, key, copy.deepcopy(self.kv.get(key))])
            else:
                result.append([f, key, list(copy.deepcopy(self.kv.get(key, [])))])
        return Outcome(True, result)

    def _append(self, c: dict[str, Any]) -> Outcome:
        entries = self.logs.setdefault(c["log"], [])
        entries.append(c["value"])
        return Outcome(True, len(entries) - 1)

    def _no_effect(self, c: dict[str, Any]) -> Outcome:
        return OK


TXN_MICRO_OPS = ("append", "r", "w", "get")

_COMMANDS = {
    "put": StateMachine._put,
    "cas": StateMachine._cas,
    "txn": StateMachine._txn,
    "append": StateMachine._append,
    "read_barrier": StateMachine._no_effect,
    "leader_change": StateMachine._no_effect,
    "voters": StateMachine._no_effect,  # a KIP-853 VotersRecord: the core's business
}
