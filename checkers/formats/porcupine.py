"""Porcupine's test-data histories (github.com/anishathalye/porcupine, test_data/).

Both formats have one event per line in real-time order, and the line is the
only clock: an op's `time` is its line number (from 1), its `index` its
position among the ops.

- `jepsen/etcd_NNN.log`: `INFO  jepsen.util - <proc> :<type> :<f> <value>` for
  one CAS register. A `:timed-out` completion (`:info`, or the rare
  `:fail :read`) carries the invoke's value and `error="timed-out"`.
- `kv/*.txt`: one EDN map per line, `{:process P, :type T, :f F, :key "K",
  :value V}`, for a multi-key string store; `f` stays get/put/append.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from checkers.formats import edn
from checkers.formats.jepsen import op_from_edn, plain
from checkers.formats.textfile import iter_lines
from checkers.history import OP_TYPES, HistoryError, Op

__all__ = ["read_etcd_log", "read_kv_log", "TIMED_OUT"]

TIMED_OUT = "timed-out"

_ETCD_LINE = re.compile(
    r"INFO\s+jepsen\.util\s+-\s+(?P<process>[0-9]{1,18})\s+:(?P<type>[a-z]+)\s+"
    r":(?P<f>[A-Za-z][A-Za-z0-9_\-]*)\s+(?P<value>.*?)\s*")


def read_etcd_log(path: str | os.PathLike[str]) -> list[Op]:
    """The ops of a Porcupine/Jepsen etcd log; HistoryError naming the line if malformed."""
    path = Path(path)
    ops: list[Op] = []
    open_invokes: dict[int, Op] = {}
    for number, offset, line in iter_lines(path):
        if not line.strip():
            continue
        m = _ETCD_LINE.fullmatch(line)
        if m is None:
            raise HistoryError(path, offset, len(ops),
                               f"line {number}: not 'INFO jepsen.util - <proc> :<type> :<f> "
                               f"<value>'")
        typ = m.group("type")
        if typ not in OP_TYPES:
            raise HistoryError(path, offset, len(ops),
                               f"line {number}: unknown op type :{typ:.40}")
        try:
            value = edn.loads(m.group("value"))
        except edn.EdnError as e:
            byte = offset + len(line[:m.start("value") + e.offset].encode("utf-8"))
            raise HistoryError(path, byte, len(ops),
                               f"line {number}: bad value: {e.reason}") from None
        process = int(m.group("process"))
        f = m.group("f")
        error = None
        if typ != "invoke" and isinstance(value, edn.Keyword) and value == TIMED_OUT:
            invoke = open_invokes.get(process)
            value = invoke.value if invoke is not None else None
            error = TIMED_OUT
        op = Op(len(ops), number, process, typ, f, plain(value), error=error)
        if typ == "invoke":
            open_invokes[process] = op
        else:
            open_invokes.pop(process, None)
        ops.append(op)
    return ops


def read_kv_log(path: str | os.PathLike[str]) -> list[Op]:
    """The ops of a Porcupine kv log; HistoryError naming the line if malformed."""
    path = Path(path)
    ops: list[Op] = []
    for number, offset, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            m = edn.loads(line)
            if not isinstance(m, dict) or "key" not in m:
                raise ValueError("expected a map with :process, :type, :f, :key and :value")
            ops.append(op_from_edn(m, len(ops), time=number))
        except edn.EdnError as e:
            # Character and byte offsets differ only with non-ASCII text.
            byte = offset + len(line[:e.offset].encode("utf-8"))
            raise HistoryError(path, byte, len(ops), f"line {number}: {e.reason}") from None
        except ValueError as e:
            raise HistoryError(path, offset, len(ops), f"line {number}: {e}") from None
    return ops
