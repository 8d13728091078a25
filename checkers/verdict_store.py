"""verdicts.json bound to the history it judged.

A verdict is about one history: `verdicts.json` records the SHA-256 of the
`history.msgpack` it judged, and every reader (report, gate, ls, campaign)
takes verdicts whose digest does not match the history now in the run dir
(replaced, truncated, appended to, or a verdicts.json older than digests) as
absent, saying how to re-check, never as the run's verdict.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.durable import write_atomic
from checkers.history import HistoryError, open_regular
from checkers.rundir import HISTORY, VERDICTS_JSON

DIGEST_FIELD = "history_digest"
# The history file's (size, mtime_ns) when the verdicts were written: lets
# `ls` skip re-hashing every history of a big results dir. Gate and report
# always compare the digest itself.
STAMP_FIELD = "history_stamp"
CHUNK = 1 << 20


def history_digest(run_dir: Path) -> str | None:
    """`sha256:<hex>` of the run's history file, None if it has none (or
    something that is not a regular file, which no reader reads)."""
    try:
        f = open_regular(Path(run_dir) / HISTORY)
    except HistoryError:
        return None
    import hashlib  # here: ~3 ms, which `faultline check-elle` does not need

    h = hashlib.sha256()
    with f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return f"sha256:{h.hexdigest()}"


def history_stamp(run_dir: Path) -> list[int] | None:
    try:
        st = (Path(run_dir) / HISTORY).stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def recheck_command(run_dir: Path) -> str:
    return f"faultline check --in-process {run_dir}"


def write_verdicts(run_dir: Path, document: dict[str, Any], digest: str | None = None) -> None:
    """Replace verdicts.json atomically (a reader never sees half a verdict),
    stamped with the digest of the history judged (`digest`, taken before the
    history was read, else now)."""
    run_dir = Path(run_dir)
    document[DIGEST_FIELD] = digest if digest is not None else history_digest(run_dir)
    document[STAMP_FIELD] = history_stamp(run_dir)
    write_atomic(run_dir / VERDICTS_JSON, json.dumps(document, indent=2, default=str))


@dataclass(frozen=True)
class StoredVerdicts:
    document: dict[str, Any] | None   # None: no verdict stands for this run's history
    problem: str | None               # why not, with the command that fixes it
    broken: bool = False              # verdicts.json exists but cannot be read


def read_verdicts(run_dir: Path, quick: bool = False) -> StoredVerdicts:
    """The run's verdicts if they judged the history now in the run dir.

    `quick`: a history whose size and mtime are those recorded is taken as the
    one judged without hashing it (for listings); anything else is hashed."""
    run_dir = Path(run_dir)
    path = run_dir / VERDICTS_JSON
    fix = f"check it with `{recheck_command(run_dir)}`"
    if not os.path.lexists(path):
        return StoredVerdicts(None, f"the run has no verdicts.json; {fix}")
    try:
        # (not read_bytes: a FIFO named verdicts.json would block ls, gate, report)
        with open_regular(path) as f:
            document = json.loads(f.read())
    except (OSError, ValueError, HistoryError) as e:
        return StoredVerdicts(None, f"verdicts.json is unreadable ({e}); {fix}", True)
    if not isinstance(document, dict):
        return StoredVerdicts(None, f"verdicts.json is not an object; {fix}", True)
    recorded = document.get(DIGEST_FIELD)
    if recorded is None:
        return StoredVerdicts(None, "verdicts.json does not say which history it judged; "
                                    f"re-check with `{recheck_command(run_dir)}`")
    if quick and document.get(STAMP_FIELD) is not None \
            and document.get(STAMP_FIELD) == history_stamp(run_dir):
        return StoredVerdicts(document, None)
    current = history_digest(run_dir)
    if current != recorded:
        what = "the history is gone" if current is None else "the history has changed since"
        return StoredVerdicts(None, f"verdicts.json judged another history ({what}); "
                                    f"re-check with `{recheck_command(run_dir)}`")
    return StoredVerdicts(document, None)
