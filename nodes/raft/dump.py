"""Offline dump of a node's replicated log (format in docs/contracts.md).

Reads the data dir without changing it: a torn tail is left for the node's
own recovery to cut, and simply not listed here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgpack

from nodes.raft import storage


def decode_payload(payload: bytes) -> Any:
    try:
        command = msgpack.unpackb(payload, raw=False)
    except Exception:
        return None
    return command if isinstance(command, dict) else None


def build_dump(data_dir: Path, node: str) -> dict[str, Any]:
    records, _ = storage.read_log(data_dir)
    state = storage.read_quorum_state(data_dir)
    hw = storage.read_high_watermark(data_dir)
    segments = storage.list_segments(data_dir / storage.LOG_DIR)
    log_start = segments[0][0] if segments else 0
    return {
        "node": node,
        "log_start_offset": log_start,
        "log_end_offset": records[-1].offset + 1 if records else log_start,
        "high_watermark": hw,
        "epoch": state["epoch"] if state else 0,
        "epochs": [list(pair) for pair in storage.read_epoch_checkpoint(data_dir)],
        "entries": [
            {
                "offset": r.offset,
                "epoch": r.epoch,
                # The persisted HW is a lower bound of what this node knew was committed.
                "committed": r.offset < hw,
                "digest": hashlib.sha256(r.payload).hexdigest()[:16],
                "payload": decode_payload(r.payload),
            }
            for r in records
        ],
    }


def write_dump(data_dir: Path, out: Path, node: str | None = None) -> None:
    dump = build_dump(Path(data_dir), node or Path(data_dir).name)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    storage.write_file_atomically(out, msgpack.packb(dump, use_bin_type=True))
