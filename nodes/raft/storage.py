"""Durable state of one raft node: the segmented log and the small checkpoint files.

Data dir layout:
    meta                               JSON {"version", "cluster_id"}, written once by
                                       `format` (KIP-595: the cluster id is made at format time)
    log/<base offset, 20 digits>.seg   segments of records
    quorum-state                       JSON, replaced atomically, fsynced (KIP-595)
    leader-epoch-checkpoint            JSON [[epoch, start_offset], ...], replaced atomically
    high-watermark                     JSON, written lazily: a lower bound of what is committed

Record: crc32 | payload length | offset | epoch | payload, big-endian. The crc
covers everything after itself, so a torn or bit-flipped record is detected and
recovery cuts the log there (Redpanda RFC: only what was flushed is trusted).

Threads: `append` runs on the event loop thread; `sync` may run in a worker
thread at the same time. Both are safe because an append only ever writes past
the end `sync` captured, and everything that moves or closes files (`truncate`,
segment roll, `sync`) holds one lock.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from uuid import uuid4

RECORD_HEADER = struct.Struct(">IIQQ")  # crc32, payload length, offset, epoch
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # anything longer is a corrupt length field
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
SEGMENT_SUFFIX = ".seg"

META_FILE = "meta"
QUORUM_STATE_FILE = "quorum-state"
EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
HIGH_WATERMARK_FILE = "high-watermark"
LOG_DIR = "log"


class LogRecord(NamedTuple):
    offset: int
    epoch: int
    payload: bytes


def encode_record(record: LogRecord) -> bytes:
    body = RECORD_HEADER.pack(0, len(record.payload), record.offset, record.epoch)[4:]
    crc = zlib.crc32(record.payload, zlib.crc32(body))
    return struct.pack(">I", crc) + body + record.payload


class ScanResult(NamedTuple):
    records: list[LogRecord]
    positions: list[int]  # file position of each record
    valid_bytes: int  # bytes up to the end of the last good record
    expected_next: int  # offset the next record must carry


def scan_segment(data: bytes, base_offset: int) -> ScanResult:
    """Decode records until the first torn, corrupt or out-of-sequence one."""
    records: list[LogRecord] = []
    positions: list[int] = []
    pos = 0
    expected = base_offset
    while pos + RECORD_HEADER.size <= len(data):
        crc, length, offset, epoch = RECORD_HEADER.unpack_from(data, pos)
        end = pos + RECORD_HEADER.size + length
        if length > MAX_PAYLOAD_BYTES or end > len(data) or offset != expected:
            break
        payload = data[pos + RECORD_HEADER.size : end]
        if zlib.crc32(payload, zlib.crc32(data[pos + 4 : pos + RECORD_HEADER.size])) != crc:
            break
        records.append(LogRecord(offset, epoch, payload))
        positions.append(pos)
        pos = end
        expected += 1
    return ScanResult(records, positions, pos, expected)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def list_segments(log_dir: Path) -> list[tuple[int, Path]]:
    """(base offset, path) of every well-named segment, in offset order."""
    found: list[tuple[int, Path]] = []
    if not log_dir.is_dir():
        return found
    for path in log_dir.iterdir():
        stem = path.name[: -len(SEGMENT_SUFFIX)]
        if path.name.endswith(SEGMENT_SUFFIX) and stem.isdigit():
            found.append((int(stem), path))
    return sorted(found)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomically(path: Path, data: bytes, durable: bool = True) -> None:
    """tmp + fsync + rename + dir fsync: a reader sees the old or the new file, never half."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        # Half a file (a full disk) is never read: the rename did not happen.
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def _read_json(path: Path) -> Any:
    """The decoded file, or None if it is missing or unreadable (torn, garbage)."""
    try:
        return json.loads(path.read_bytes())
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return None


# --- format: the cluster id -------------------------------------------------------


class FormatError(Exception):
    """The data dir cannot be formatted (or read) for this cluster; one sentence."""


def new_cluster_id() -> str:
    """A random cluster id, as Kafka makes them: a UUID in URL-safe base64,
    never starting with "-" (a command line would take it for an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def read_cluster_id(data_dir: Path) -> str | None:
    """The cluster id the data dir was formatted for; None if never formatted."""
    path = Path(data_dir) / META_FILE
    if not path.exists():
        return None
    doc = _read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("cluster_id"), str):
        raise FormatError(f"{path} is unreadable: the data dir's format is lost")
    return doc["cluster_id"]


def format_data_dir(data_dir: Path, cluster_id: str) -> None:
    """Write the data dir's meta file for `cluster_id` (durably). Refuses a dir
    formatted for another cluster; formatting again for the same one is a no-op."""
    data_dir = Path(data_dir)
    if not cluster_id:
        raise FormatError("a cluster id must not be empty")
    data_dir.mkdir(parents=True, exist_ok=True)
    stored = read_cluster_id(data_dir)
    if stored == cluster_id:
        return
    if stored is not None:
        raise FormatError(f"{data_dir} is already formatted for cluster {stored!r}")
    write_file_atomically(data_dir / META_FILE,
                          json.dumps({"version": 1, "cluster_id": cluster_id}).encode())


# --- quorum state ---------------------------------------------------------------

QUORUM_STATE_KEYS = ("epoch", "leader", "voted_for", "cluster_id")
# KIP-595's voter fields; optional on read (files written before they existed).
QUORUM_STATE_VOTER_KEYS = ("applied_offset", "current_voters", "target_voters")


def write_quorum_state(data_dir: Path, state: dict[str, Any]) -> None:
    doc = {"version": 1} | {k: state[k] for k in QUORUM_STATE_KEYS}
    for key in QUORUM_STATE_VOTER_KEYS:
        value = state.get(key)
        doc[key] = list(value) if isinstance(value, (tuple, list)) else value
    if state.get("abstain"):
        doc["abstain"] = True
    write_file_atomically(data_dir / QUORUM_STATE_FILE, json.dumps(doc).encode())


def _voter_list(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def read_quorum_state(data_dir: Path) -> dict[str, Any] | None:
    """{"epoch", "leader", "voted_for", "cluster_id", "applied_offset",
    "current_voters", "target_voters", "abstain"} or None when missing or invalid."""
    doc = _read_json(data_dir / QUORUM_STATE_FILE)
    if not isinstance(doc, dict) or not all(k in doc for k in QUORUM_STATE_KEYS):
        return None
    if not isinstance(doc["epoch"], int) or doc["epoch"] < 0:
        return None
    state = {k: doc[k] for k in QUORUM_STATE_KEYS}
    applied = doc.get("applied_offset", -1)
    state["applied_offset"] = applied if isinstance(applied, int) else -1
    state["current_voters"] = _voter_list(doc.get("current_voters"))
    state["target_voters"] = _voter_list(doc.get("target_voters"))
    state["abstain"] = doc.get("abstain") is True
    return state


# --- leader-epoch checkpoint and high watermark ----------------------------------


def write_epoch_checkpoint(data_dir: Path, epochs: list[tuple[int, int]]) -> None:
    doc = {"version": 1, "epochs": [[int(e), int(o)] for e, o in epochs]}
    write_file_atomically(data_dir / EPOCH_CHECKPOINT_FILE, json.dumps(doc).encode())


def read_epoch_checkpoint(data_dir: Path) -> list[tuple[int, int]]:
    doc = _read_json(data_dir / EPOCH_CHECKPOINT_FILE)
    try:
        return [(int(e), int(o)) for e, o in doc["epochs"]]
    except (TypeError, KeyError, ValueError):
        return []


def write_high_watermark(data_dir: Path, hw: int) -> None:
    # Not fsynced: a lost update only makes a later dump under-report what is
    # committed, and the HW is re-learned from the leader after a restart.
    write_file_atomically(data_dir / HIGH_WATERMARK_FILE, json.dumps({"hw": hw}).encode(), False)


def read_high_watermark(data_dir: Path) -> int:
    doc = _read_json(data_dir / HIGH_WATERMARK_FILE)
    hw = doc.get("hw") if isinstance(doc, dict) else None
    return hw if isinstance(hw, int) and hw >= 0 else 0


# --- the segmented log ------------------------------------------------------------


@dataclass
class _Segment:
    base_offset: int
    path: Path
    fd: int
    size: int
    positions: list[int] = field(default_factory=list)

    @property
    def end_offset(self) -> int:
        return self.base_offset + len(self.positions)


class Recovered(NamedTuple):
    records: list[LogRecord]
    truncated_bytes: int  # torn or corrupt tail cut off during recovery


def read_log(data_dir: Path) -> tuple[list[LogRecord], int]:
    """Read-only scan (for offline dumps): the good records and the bytes after them."""
    records: list[LogRecord] = []
    bad_bytes = 0
    expected: int | None = None
    for base, path in list_segments(data_dir / LOG_DIR):
        data = path.read_bytes()
        if bad_bytes or (expected is not None and base != expected):
            bad_bytes += len(data)
            continue
        scan = scan_segment(data, base)
        records.extend(scan.records)
        bad_bytes += len(data) - scan.valid_bytes
        expected = scan.expected_next
    return records, bad_bytes


class SegmentedLog:
    """The on-disk log. Open it with `SegmentedLog.open`, which runs recovery."""

    def __init__(self, data_dir: Path, segment_bytes: int) -> None:
        self.data_dir = data_dir
        self.log_dir = data_dir / LOG_DIR
        self.segment_bytes = segment_bytes
        self._segments: list[_Segment] = []
        self._lock = threading.Lock()
        self._flushed_end = 0
        # The bug switch `ignore-write-error` (nodes.raft.bugs): a refused write
        # counts as written, leaving a hole in the segment.
        self.ignore_write_errors = False

    @classmethod
    def open(
        cls, data_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES
    ) -> tuple[SegmentedLog, Recovered]:
        """Recover the log: keep the longest valid prefix, cut the rest durably."""
        log = cls(Path(data_dir), segment_bytes)
        log.log_dir.mkdir(parents=True, exist_ok=True)
        records: list[LogRecord] = []
        truncated = 0
        expected: int | None = None
        for base, path in list_segments(log.log_dir):
            if truncated or (expected is not None and base != expected):
                # Everything after the first bad record is untrusted.
                truncated += path.stat().st_size
                path.unlink()
                continue
            data = path.read_bytes()
            scan = scan_segment(data, base)
            fd = os.open(path, os.O_RDWR)
            if scan.valid_bytes < len(data):
                truncated += len(data) - scan.valid_bytes
                os.ftruncate(fd, scan.valid_bytes)
                os.fsync(fd)
            log._segments.append(_Segment(base, path, fd, scan.valid_bytes, scan.positions))
            records.extend(scan.records)
            expected = scan.expected_next
        if not log._segments:
            log._new_segment(0)
        if truncated:
            fsync_dir(log.log_dir)
        log._flushed_end = log.log_end
        return log, Recovered(records, truncated)

    @property
    def log_start(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end(self) -> int:
        return self._segments[-1].end_offset

    @property
    def flushed_end(self) -> int:
        return self._flushed_end

    def _new_segment(self, base_offset: int) -> None:
        path = self.log_dir / segment_name(base_offset)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._segments.append(_Segment(base_offset, path, fd, 0))
        fsync_dir(self.log_dir)

    def append(self, records: list[LogRecord]) -> None:
        """Write records at the log end (not yet durable: see `sync`)."""
        if not records:
            return
        if records[0].offset != self.log_end:
            raise ValueError(f"append at {records[0].offset}, log ends at {self.log_end}")
        active = self._segments[-1]
        if active.size >= self.segment_bytes:
            with self._lock:
                os.fsync(active.fd)  # a closed segment is never fsynced again
                self._new_segment(self.log_end)
            active = self._segments[-1]
        chunks = []
        positions = []
        pos = active.size
        for i, record in enumerate(records):
            if record.offset != records[0].offset + i:
                raise ValueError("records must have consecutive offsets")
            chunk = encode_record(record)
            chunks.append(chunk)
            positions.append(pos)
            pos += len(chunk)
        # pwrite at the tracked size: the fd's own position is not ours to trust
        # after recovery or truncation.
        view = memoryview(b"".join(chunks))
        at = active.size
        while view:
            try:
                n = os.pwrite(active.fd, view, at)
            except OSError:
                if not self.ignore_write_errors:
                    raise
                n = len(view)
            view, at = view[n:], at + n
        # Publish the new end only after the bytes are written, so a concurrent
        # `sync` never claims records it did not cover.
        active.size = pos
        active.positions.extend(positions)

    def sync(self) -> int:
        """fsync what has been appended; return the durable end offset."""
        with self._lock:
            end = self.log_end
            os.fsync(self._segments[-1].fd)
            self._flushed_end = max(self._flushed_end, end)
            return self._flushed_end

    def truncate(self, end_offset: int) -> None:
        """Durably cut the log to end at end_offset, before those offsets are reused."""
        with self._lock:
            if end_offset >= self.log_end:
                return
            if end_offset < self.log_start:
                raise ValueError(f"truncate to {end_offset} below log start {self.log_start}")
            while len(self._segments) > 1 and self._segments[-1].base_offset > end_offset:
                gone = self._segments.pop()
                os.close(gone.fd)
                gone.path.unlink()
            seg = self._segments[-1]
            keep = end_offset - seg.base_offset
            cut = seg.positions[keep] if keep < len(seg.positions) else seg.size
            os.ftruncate(seg.fd, cut)
            os.fsync(seg.fd)
            del seg.positions[keep:]
            seg.size = cut
            fsync_dir(self.log_dir)
            # Earlier segments were fsynced when rolled, and this one just was.
            self._flushed_end = end_offset

    def files(self) -> list[Path]:
        return [s.path for s in self._segments]

    def close(self) -> None:
        with self._lock:
            for seg in self._segments:
                os.close(seg.fd)
            self._segments = []
