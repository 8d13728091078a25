"""Jepsen `history.edn` files to and from our `Op`s.

A Jepsen history is either one op map per line or one vector/list of op maps
(Jepsen has written both). Keywords become strings without the colon, the
`:nemesis` process becomes "nemesis". With `independent=True` (Jepsen's
`independent` checker, one register per key) a client op's `[k v]` value is
split into `key=k, value=v`.

Elle's and Jepsen's own test histories leave fields out, so the reader fills
them in: an op without `:index` follows the one before it (indices may have
gaps, as in a filtered history, but must increase); without `:time` it gets
its position; without `:f` it is a `txn`; an invoke without `:process` is its
own process (a fresh id after every process the file names), and a
completion without `:process` completes the latest such invoke still open.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from checkers.formats import edn, edn_fast
from checkers.formats.textfile import position, read_text
from checkers.history import NEMESIS, OP_TYPES, HistoryError, Op, collector_paused

__all__ = ["read_edn_history", "write_edn_history", "op_from_edn", "plain"]


# msgpack's integer range: an op must be writable as a msgpack history.
MIN_INT = -(2**63)
MAX_INT = 2**64 - 1


def plain(value: Any) -> Any:
    """A decoded EDN value as plain msgpack-able data: keywords/symbols -> str,
    sets -> lists, map keys that msgpack cannot key a map with -> their EDN text.
    ValueError for an integer msgpack cannot hold."""
    t = type(value)
    if t is list:  # the common cases first, by exact type: this runs per value
        return [plain(v) for v in value]
    if t is edn.Keyword or t is str:
        return str(value)
    if isinstance(value, str):
        return str(value)
    if t is int:
        if not MIN_INT <= value <= MAX_INT:
            raise ValueError(f"integer {str(value)[:40]} is out of the 64-bit range")
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, frozenset):
        items = [plain(v) for v in value]
        try:
            return sorted(items)
        except TypeError:  # mixed types: any stable order will do
            return sorted(items, key=edn.dumps)
    return value


def _plain_key(key: Any) -> Any:
    if isinstance(key, str):
        return str(key)
    if key is None or isinstance(key, float):
        return key
    if isinstance(key, int):
        return plain(key)
    return edn.dumps(_thaw(key))


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if (isinstance(value, frozenset) and value
            and all(isinstance(v, tuple) and len(v) == 2 for v in value)):
        # A frozen map (edn.freeze): back to a map, whose keys are hashable
        # already. (A set of two-element vectors freezes the same way.)
        return {k: _thaw(v) for k, v in value}
    return value


def _name(value: Any, field: str) -> str:
    if isinstance(value, str):
        return str(value)
    shown = edn.dumps(_thaw(value))
    raise ValueError(f"field :{field} must be a keyword or string, not {shown!r:.40}")


# What an op without :f does: Elle's histories are all transactions.
DEFAULT_F = "txn"


def op_from_edn(m: Any, position: int, independent: bool = False,
                time: int | None = None, process_optional: bool = False,
                values_plain: bool = False) -> Op:
    """An Op from one decoded EDN op map; ValueError naming the bad field.

    `position` supplies a missing `:index` (and `:time` unless `time` is given).
    With `process_optional`, an op without `:process` gets process None, for
    the caller to assign. `values_plain`: the map's values are plain already
    (decoded by `edn_fast`), so they are taken as they are.
    """
    if not isinstance(m, dict):
        raise ValueError("an op must be a map")
    if "type" not in m:
        raise ValueError("op has no :type")
    if "process" not in m and not process_optional:
        raise ValueError("op has no :process")
    typ = m["type"]
    if type(typ) is not str:  # (exact types first: this runs per op)
        typ = _name(typ, "type")
    if typ not in OP_TYPES:
        raise ValueError(f"field :type must be one of invoke/ok/fail/info, not {typ!r:.40}")
    f = m.get("f", DEFAULT_F)
    if type(f) is not str:
        f = _name(f, "f")
    process = m.get("process")
    if type(process) is int and MIN_INT <= process <= MAX_INT:
        pass
    elif process is None and process_optional:
        pass
    elif isinstance(process, str) and process == NEMESIS:
        process = NEMESIS
    else:
        raise ValueError(f"field :process must be an integer or :nemesis, not {process!r:.40}")
    index = m.get("index", position)
    if type(index) is not int or not 0 <= index <= MAX_INT:
        raise ValueError(f"field :index must be a non-negative integer, not {index!r:.40}")
    if time is None:
        time = m.get("time", position)
        if type(time) is not int or not MIN_INT <= time <= MAX_INT:
            raise ValueError(f"field :time must be an integer, not {time!r:.40}")
    value = m.get("value")
    key = m.get("key")
    if not values_plain:
        value, key = plain(value), plain(key)
    if independent and process != NEMESIS:
        if not (isinstance(value, list) and len(value) == 2):
            raise ValueError("with independent keys a client op's :value must be [key value]")
        key, value = value
    node = m.get("node")
    if node is not None and not isinstance(node, str):
        raise ValueError(f"field :node must be a string, not {node!r:.40}")
    error = m.get("error")
    if error is not None:
        error = str(error) if isinstance(error, str) else edn.dumps(plain(error))
    # process None only with process_optional, for the caller to place at once.
    return Op(index, time, process, typ, f, value, key,  # type: ignore[arg-type]
              None if node is None else str(node), error)


def read_edn_history(path: str | os.PathLike[str], independent: bool = False) -> list[Op]:
    """The ops of a Jepsen history.edn; HistoryError (file, byte offset, op) if malformed."""
    with collector_paused():
        return _read_edn_history(path, independent)


def _read_edn_history(path: str | os.PathLike[str], independent: bool) -> list[Op]:
    path = Path(path)
    text = read_text(path)
    maps = edn_fast.op_maps(text)
    if maps is not None:
        try:
            return _ops(((0, m) for m in maps), independent, values_plain=True)
        except ValueError:
            pass  # the general reader below says where, and why
    try:
        parser = edn.Parser(text)
        parser.skip_ws()
        wrapped = parser.pos < len(text) and text[parser.pos] in "[("
        forms = edn.iter_collection(text) if wrapped else edn.iter_forms(text)
        return _ops(forms, independent)
    except _AtOffset as e:
        byte, line = position(text, e.offset)
        raise HistoryError(path, byte, e.done, f"line {line}: {e.reason}") from None


class _AtOffset(Exception):
    def __init__(self, offset: int, done: int, reason: str) -> None:
        self.offset, self.done, self.reason = offset, done, reason


def _ops(forms: Iterable[tuple[int, Any]], independent: bool, values_plain: bool = False
         ) -> list[Op]:
    """Ops from (offset, op map) pairs; _AtOffset for a malformed one (ValueError
    from the fast path's maps, which carry no offsets)."""
    ops: list[Op] = []
    offset = 0  # where the form being converted starts, for error messages
    anonymous = _AnonymousProcesses()
    try:
        last = -1  # the previous op's index
        for form_offset, form in forms:
            offset = form_offset
            op = op_from_edn(form, last + 1, independent, process_optional=True,
                             values_plain=values_plain)
            if op.index <= last:
                raise ValueError(f"field :index {op.index} does not follow the previous "
                                 f"op's {last}")
            last = op.index
            if op.process is None:
                anonymous.place(op)
            ops.append(op)
    except edn.EdnError as e:
        raise _AtOffset(e.offset, len(ops), e.reason) from None
    except ValueError as e:
        if values_plain:
            raise
        raise _AtOffset(offset, len(ops), str(e)) from None
    anonymous.name(ops)
    return ops


class _AnonymousProcesses:
    """Processes for ops that name none: each such invoke is a process of its
    own, completed by the next completion without a process (the latest such
    invoke still open). Ids are given once the file's own are all known."""

    def __init__(self) -> None:
        self.slots: list[list[Op]] = []   # per anonymous process: its invoke, completion
        self.open: list[int] = []         # slots whose invoke has no completion yet

    def place(self, op: Op) -> None:
        if op.process is not None:
            return
        if op.type == "invoke":
            self.open.append(len(self.slots))
            self.slots.append([op])
        elif not self.open:
            raise ValueError(f"a :{op.type} without :process completes no open invoke "
                             f"without one")
        else:
            self.slots[self.open.pop()].append(op)

    def name(self, ops: list[Op]) -> None:
        if not self.slots:
            return
        base = max((o.process for o in ops if type(o.process) is int), default=-1) + 1
        for i, slot in enumerate(self.slots):
            for op in slot:
                op.process = base + i


def op_to_edn(op: Op) -> str:
    """One op as an EDN map on one line, the way Jepsen writes it."""
    process = ":nemesis" if op.process == NEMESIS else str(op.process)
    parts = [f":index {op.index}", f":time {op.time}", f":type :{op.type}",
             f":process {process}", f":f {edn.keyword_or_string(op.f)}",
             f":value {edn.dumps(op.value)}"]
    if op.key is not None:
        parts.append(f":key {edn.dumps(op.key)}")
    if op.node is not None:
        parts.append(f":node {edn.dumps(op.node)}")
    if op.error is not None:
        parts.append(f":error {edn.dumps(op.error)}")
    return "{" + ", ".join(parts) + "}"


def write_edn_history(ops: Iterable[Op], path: str | os.PathLike[str]) -> None:
    """Write ops as a Jepsen history.edn, one op map per line."""
    with open(path, "w", encoding="utf-8") as f:
        for op in ops:
            f.write(op_to_edn(op))
            f.write("\n")
