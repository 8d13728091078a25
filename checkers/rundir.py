"""Loading a run directory for the checkers: run.json, the history, each node's
replicated-log dump and event lines (layout in docs/contracts.md).

This is the edge where files become data; the checkers themselves stay pure.
It imports nothing from the harness, so a saved run can be re-checked
anywhere. Everything read is size-limited: a run directory may come from a
crashed or hostile machine.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from checkers.history import (
    History,
    HistoryError,
    collector_paused,
    open_regular,
    read_history,
)

MAX_RUN_JSON_BYTES = 16 * 1024 * 1024
MAX_DUMP_BYTES = 256 * 1024 * 1024
MAX_EVENT_LINE_BYTES = 1024 * 1024
MAX_DUMP_CONTAINER_LEN = 10_000_000

RUN_JSON = "run.json"
HISTORY = "history.msgpack"
VERDICTS_JSON = "verdicts.json"
NODES_DIR = "nodes"
LOG_DUMP = "log.msgpack"
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
NODE_LOGS = (STDOUT_LOG, STDERR_LOG)
# A node's applied state read at the end of the run (nodes.db.NodeState).
NODE_STATE = "state.msgpack"
MAX_NODE_STATE_BYTES = 64 * 1024 * 1024
# Node processes that exited without the harness killing them, a JSON object a line.
EXITS = "exits.jsonl"
MAX_EXITS_BYTES = 1024 * 1024
MAX_LOG_LINE_BYTES = 64 * 1024


_decode = json.JSONDecoder().raw_decode
_intern = sys.intern
_JSON_SPACE = " \t\n\r"
_SHORT = 24   # longest event string value shared between events


class RunDirError(HistoryError):
    """A run directory file that cannot be read: names the file and the problem."""


@dataclass
class Run:
    path: Path
    run: dict[str, Any]
    history: History
    dumps: dict[str, dict[str, Any]] = field(default_factory=dict)   # node -> log dump
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # node -> events

    @property
    def warnings(self) -> list[str]:
        return self.history.warnings


def not_a_run_dir(path: str | os.PathLike[str]) -> str | None:
    """Why `path` is not a run dir (one clause, to follow its name), or None.
    A run dir holds run.json or history.msgpack (an imported run may have
    only its history), each a regular file if present: a command that writes
    into a run dir must not take any other directory for one."""
    path = Path(path)
    if not path.is_dir():
        return "is not a directory"
    present = [name for name in (RUN_JSON, HISTORY) if os.path.lexists(path / name)]
    if not present:
        return f"is not a run dir (it has neither {RUN_JSON} nor {HISTORY})"
    for name in present:
        if not (path / name).is_file():
            return f"is not a usable run dir (its {name} is not a regular file)"
    return None


def _read_limited(path: Path, limit: int) -> bytes:
    try:
        with open_regular(path, RunDirError) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise RunDirError(path, None, None, f"cannot read: {e.strerror}") from None
    if len(data) > limit:
        raise RunDirError(path, None, None, f"larger than the {limit} byte limit")
    return data


def _not_finite(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def load_json(path: str | os.PathLike[str], limit: int = MAX_RUN_JSON_BYTES) -> dict[str, Any]:
    """A JSON object file such as run.json or verdicts.json."""
    path = Path(path)
    data = _read_limited(path, limit)
    try:
        value = json.loads(data, parse_constant=_not_finite)
    except (ValueError, RecursionError) as e:
        raise RunDirError(path, None, None, f"not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise RunDirError(path, None, None, "expected a JSON object")
    return value


def load_log_dump(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One node's replicated-log dump (`nodes/<name>/log.msgpack`)."""
    path = Path(path)
    data = _read_limited(path, MAX_DUMP_BYTES)
    try:
        dump = msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True,
                               max_str_len=MAX_DUMP_BYTES, max_bin_len=MAX_DUMP_BYTES,
                               max_array_len=MAX_DUMP_CONTAINER_LEN,
                               max_map_len=MAX_DUMP_CONTAINER_LEN, max_ext_len=0)
    except Exception as e:  # msgpack raises several unrelated types
        raise RunDirError(path, None, None, f"corrupt log dump ({type(e).__name__}: {e})") \
            from None
    if not isinstance(dump, dict):
        raise RunDirError(path, None, None, "a log dump must be a map")
    if not isinstance(dump.get("entries", []), list):
        raise RunDirError(path, None, None, "a log dump's 'entries' must be a list")
    return dump


def iter_events(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The JSON event objects in a node's stdout; other lines are ignored."""
    path = Path(path)
    with open_regular(path, RunDirError) as f:
        while True:
            line = f.readline(MAX_EVENT_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_EVENT_LINE_BYTES:
                # Skip the rest of an over-long line: it is output, not an event.
                while line and not line.endswith(b"\n"):
                    line = f.readline(MAX_EVENT_LINE_BYTES)
                continue
            if not line.lstrip().startswith(b"{"):
                continue
            # json.loads less its wrapper (a third of the time on 750k lines):
            # UTF-8 only, nothing but whitespace after the object.
            try:
                text = line.decode()
                event, end = _decode(text, len(text) - len(text.lstrip(_JSON_SPACE)))
            except (ValueError, RecursionError):
                continue
            if text[end:].strip(_JSON_SPACE):
                continue
            if event.__class__ is dict and "event" in event:
                # Every line repeats the same keys and short values (node,
                # event kind): one shared copy of each takes 60% less memory
                # (a 20-minute run's 757k events: 450 -> 180 MiB) for 30% more time.
                yield {_intern(k): _intern(v) if v.__class__ is str and len(v) <= _SHORT else v
                       for k, v in event.items()}


def node_names(run_dir: str | os.PathLike[str]) -> list[str]:
    nodes = Path(run_dir) / NODES_DIR
    if not nodes.is_dir():
        return []
    return sorted(p.name for p in nodes.iterdir() if p.is_dir())


def load_dumps(run_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """node -> log dump, for the nodes that have one.

    Replicas hold mostly the same entries: an entry equal to one already
    loaded from another node is that same object (a 5-node 20-minute run's
    dumps took 500 MiB before, a fifth of it after). Checkers never change a
    dump, so sharing is invisible to them."""
    out = {}
    seen: dict[Any, dict[str, Any]] = {}
    with collector_paused():
        for name in node_names(run_dir):
            path = Path(run_dir) / NODES_DIR / name / LOG_DUMP
            if path.exists():
                out[name] = dump = load_log_dump(path)
                _share_entries(dump["entries"] if "entries" in dump else [], seen)
    return out


def _share_entries(entries: list[Any], seen: dict[Any, dict[str, Any]]) -> None:
    """Replace each entry equal to one in `seen` (by offset) with that one.
    Only entries whose offset and epoch are ints take part: 1 == 1.0 == True,
    and a checker that skips a malformed entry must still see it malformed."""
    for i, e in enumerate(entries):
        if e.__class__ is not dict:
            continue
        offset = e.get("offset")
        if offset.__class__ is not int or e.get("epoch").__class__ is not int:
            continue
        other = seen.get(offset)
        if other is None:
            seen[offset] = e
        else:
            try:
                if other == e:
                    entries[i] = other
            except RecursionError:   # a hostile dump's nesting: keep its own copy
                pass


def load_events(run_dir: str | os.PathLike[str]) -> dict[str, list[dict[str, Any]]]:
    """node -> event lines from its stdout, for the nodes that have a stdout log."""
    out = {}
    with collector_paused():
        for name in node_names(run_dir):
            path = Path(run_dir) / NODES_DIR / name / STDOUT_LOG
            if path.exists():
                out[name] = list(iter_events(path))
    return out


def load_run(run_dir: str | os.PathLike[str]) -> Run:
    """Everything a checker may need from a run directory.

    run.json and history.msgpack must exist; node artefacts are optional
    (not every system dumps a log). A torn history tail is a warning.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(run_dir, None, None, "not a run directory")
    run = load_json(run_dir / RUN_JSON)
    history = read_history(run_dir / HISTORY)
    return Run(run_dir, run, history, load_dumps(run_dir), load_events(run_dir))


def load_node_states(run_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any] | None]:
    """node -> its applied state (`nodes/<n>/state.msgpack`), None for a node
    whose file says it did not answer; nodes without the file are left out."""
    out: dict[str, dict[str, Any] | None] = {}
    for name in node_names(run_dir):
        path = Path(run_dir) / NODES_DIR / name / NODE_STATE
        if not path.exists():
            continue
        data = _read_limited(path, MAX_NODE_STATE_BYTES)
        try:
            state = msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True,
                                    max_str_len=MAX_NODE_STATE_BYTES,
                                    max_bin_len=MAX_NODE_STATE_BYTES,
                                    max_array_len=MAX_DUMP_CONTAINER_LEN,
                                    max_map_len=MAX_DUMP_CONTAINER_LEN, max_ext_len=0)
        except Exception as e:  # msgpack raises several unrelated types
            raise RunDirError(path, None, None,
                              f"corrupt node state ({type(e).__name__}: {e})") from None
        if state is not None and not (isinstance(state, dict)
                                      and isinstance(state.get("keys", []), list)):
            raise RunDirError(path, None, None, "a node state must be a map with a 'keys' list")
        out[name] = state
    return out


def load_exits(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every recorded exit of a node process the harness did not kill."""
    out = []
    for name in node_names(run_dir):
        path = Path(run_dir) / NODES_DIR / name / EXITS
        if not path.exists():
            continue
        for line in _read_limited(path, MAX_EXITS_BYTES).decode(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue   # a torn last line: the harness died writing it
            if isinstance(record, dict):
                out.append({**record, "node": name})
    return out


def iter_node_log_lines(run_dir: str | os.PathLike[str]
                        ) -> Iterator[tuple[str, str, int, str]]:
    """(node, file name, line number from 1, text) for every line of every
    node's stdout and stderr logs; an over-long line is cut."""
    for name in node_names(run_dir):
        for log in NODE_LOGS:
            path = Path(run_dir) / NODES_DIR / name / log
            if not path.exists():
                continue
            with open(path, "rb") as f:
                number = 0
                while True:
                    line = f.readline(MAX_LOG_LINE_BYTES)
                    if not line:
                        break
                    number += 1
                    text = line.decode(errors="replace").rstrip("\n")
                    while line and not line.endswith(b"\n"):
                        line = f.readline(MAX_LOG_LINE_BYTES)   # the rest of an over-long line
                    yield name, log, number, text
