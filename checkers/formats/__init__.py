"""Readers for histories written by us (msgpack) and by others (Jepsen EDN,
Porcupine's test data), all into `checkers.history.Op`.

Every reader raises only `checkers.history.HistoryError` on bad input.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from checkers.history import History, HistoryError, open_regular, read_history

FORMATS = ("msgpack", "edn", "porcupine-etcd", "porcupine-kv")

_SNIFF_BYTES = 4096
_ETCD_START = re.compile(rb"\s*INFO\s+jepsen\.util\s+-\s")
_KV_START = re.compile(rb'\s*\{:process [0-9]+, :type :[a-z]+, :f :[a-z]+, :key "')
_EDN_START = re.compile(rb"\s*[\[({;#]")


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of a history file, judged by its first bytes, then its name."""
    path = Path(path)
    with open_regular(path) as f:
        head = f.read(_SNIFF_BYTES)
    if _ETCD_START.match(head):
        return "porcupine-etcd"
    if _KV_START.match(head):
        return "porcupine-kv"
    if _EDN_START.match(head):
        return "edn"
    suffix = path.suffix.lower()
    if suffix == ".edn":
        return "edn"
    if suffix == ".log" and not head:
        return "porcupine-etcd"
    # A msgpack history starts with a map header; an empty one is an empty history.
    if not head or head[0] in range(0x80, 0x90) or head[0] in (0xDE, 0xDF):
        return "msgpack"
    raise HistoryError(path, 0, None,
                       "unknown history format (expected msgpack, edn, porcupine-etcd "
                       "or porcupine-kv)")


def read_any(path: str | os.PathLike[str], fmt: str | None = None,
             independent: bool = False) -> History:
    """Read a history in any supported format (`fmt` None: detect it)."""
    if fmt is None:
        fmt = detect_format(path)
    if fmt == "msgpack":
        return read_history(path)
    # Each reader imported only for its own format.
    if fmt == "edn":
        from checkers.formats.jepsen import read_edn_history
        return History(read_edn_history(path, independent=independent))
    if fmt == "porcupine-etcd":
        from checkers.formats.porcupine import read_etcd_log
        return History(read_etcd_log(path))
    if fmt == "porcupine-kv":
        from checkers.formats.porcupine import read_kv_log
        return History(read_kv_log(path))
    raise ValueError(f"unknown history format {fmt!r}; expected one of {', '.join(FORMATS)}")
