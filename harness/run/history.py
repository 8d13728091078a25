"""Writing histories: one msgpack op at a time, flushed, fsynced on a bound."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

import msgpack

from checkers.history import Op

__all__ = ["HistoryWriter", "Op"]


class HistoryWriter:
    """Appends ops to `history.msgpack`, assigning their index.

    Each op reaches the OS as it is appended (an unbuffered write), so a
    harness crash loses at most a torn tail; fsync runs at most every
    `fsync_interval` seconds and at close, so a machine crash loses a bounded
    window rather than costing an fsync per op.
    """

    def __init__(self, path: str | os.PathLike[str], fsync_interval: float = 0.2) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._packer = msgpack.Packer(use_bin_type=True)
        self._fsync_interval = fsync_interval
        self._last_fsync = time.monotonic()
        # (ops appended, the file's end after them), replaced in one
        # assignment: an interrupt (Ctrl-C's KeyboardInterrupt in the thread
        # appending) can land between any two statements, so two fields
        # could disagree; see `append`.
        self._appended = (0, os.lseek(self._fd, 0, os.SEEK_END))

    @property
    def count(self) -> int:
        return self._appended[0]

    def append(self, op: Op) -> Op:
        if self._fd < 0:
            raise ValueError(f"{self.path}: history writer is closed")
        count, end = self._appended
        at = os.lseek(self._fd, 0, os.SEEK_END)
        if at != end:
            # The last append's op reached the file, but an interrupt came
            # before it was counted: it counts, or this op would repeat its
            # index (seen: a Ctrl-C'd run whose history did not read back).
            count, end = count + 1, at
        op.index = count
        data = self._packer.pack(op.to_map())
        size = len(data)
        while data:
            data = data[os.write(self._fd, data):]
        self._appended = (count + 1, end + size)
        now = time.monotonic()
        if now - self._last_fsync >= self._fsync_interval:
            os.fsync(self._fd)
            self._last_fsync = now
        return op

    def close(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
