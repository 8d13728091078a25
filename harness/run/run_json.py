"""Writing a run's run.json, and its final state even on a full disk.

A run whose results dir fills up must still end `error` with the reason, not
stay `running` (which readers take for a crash). The full document is written
atomically (`checkers.durable`); if that fails, a small one (who, what, the
state and why) is tried the same way, and then in place over run.json's own
blocks, which needs no free space on most filesystems. If even that fails,
stderr says so.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from checkers.durable import write_atomic
from checkers.rundir import RUN_JSON
from harness.run.state import ERROR

# What the small final run.json keeps: enough for `ls`, gate, resume and
# `clean` to say what the run was and how it ended.
SMALL_FIELDS = ("run_id", "status", "error", "start_wall", "end_wall", "harness", "host",
                "campaign", "replay_of", "config")
ERROR_CHARS = 500


def write_run_json(run_dir: Path, doc: dict[str, Any]) -> None:
    write_atomic(run_dir / RUN_JSON, json.dumps(doc, indent=2, default=str))


def small_final_doc(doc: dict[str, Any], failure: OSError, with_config: bool = True
                    ) -> dict[str, Any]:
    """Pure: the state a run ends in when its results could not all be written."""
    small = {k: doc[k] for k in SMALL_FIELDS if k in doc and (with_config or k != "config")}
    reason = f"writing the run's results failed: {failure}"
    if doc.get("error"):
        reason += f" (after: {doc['error']})"
    small.update(status=ERROR, error=reason[:ERROR_CHARS], run_json="truncated: the disk "
                 "was full or failing; the rest of the run's record was not written")
    return small


def overwrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite `path` with `data` no longer than it, in its own blocks."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        if len(data) > os.fstat(fd).st_size:
            raise OSError(f"{path}: the final state ({len(data)} bytes) is longer than the "
                          "file it would overwrite")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def write_final_run_json(run_dir: Path, doc: dict[str, Any], stream: TextIO) -> OSError | None:
    """Write the run's last run.json; on failure make it say `error` and why,
    by the first way that works. Returns the failure of the full write, if any
    (`doc` is then updated to the state recorded)."""
    try:
        write_run_json(run_dir, doc)
        return None
    except OSError as e:
        failure = e
    path = run_dir / RUN_JSON
    small = small_final_doc(doc, failure)
    tries: list[Callable[[], object]] = [functools.partial(write_run_json, run_dir, small)]
    for with_config in (True, False):
        data = json.dumps(small_final_doc(doc, failure, with_config), default=str).encode()
        tries.append(functools.partial(overwrite_in_place, path, data))
    last: OSError = failure
    for attempt in tries:
        try:
            attempt()
        except OSError as e:
            last = e
            continue
        doc.update(status=small["status"], error=small["error"])
        return failure
    print(f"faultline: could not record the run's final state in {path} ({failure}; then "
          f"{last}): it still says what it said before", file=stream, flush=True)
    doc.update(status=small["status"], error=small["error"])
    return failure
