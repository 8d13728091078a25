"""Reading untrusted text files with limits, and saying where a problem is.

Every reader in this package reports problems as `HistoryError` with a byte
offset; these helpers turn the file into text (or lines) and character
positions back into byte offsets and line numbers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from checkers.history import HistoryError, open_regular

# A whole-file history is parsed in memory; a bigger file is refused rather
# than allowed to exhaust the machine.
MAX_TEXT_BYTES = 512 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024


def _open(path: Path) -> BinaryIO:
    return open_regular(path)


def read_text(path: str | os.PathLike[str], limit: int = MAX_TEXT_BYTES) -> str:
    """The whole file as UTF-8 text; HistoryError if too big or not UTF-8."""
    path = Path(path)
    with _open(path) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise HistoryError(path, None, None, f"cannot read: {e.strerror}") from None
    if len(data) > limit:
        raise HistoryError(path, limit, None, f"file is larger than the {limit} byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HistoryError(path, e.start, None, "not UTF-8 text") from None


def iter_lines(path: str | os.PathLike[str], limit: int = MAX_LINE_BYTES
               ) -> Iterator[tuple[int, int, str]]:
    """(line number from 1, byte offset, text without the newline) per line."""
    path = Path(path)
    with _open(path) as f:
        offset = 0
        number = 0
        while True:
            try:
                raw = f.readline(limit + 1)
            except OSError as e:
                raise HistoryError(path, offset, None, f"cannot read: {e.strerror}") from None
            if not raw:
                return
            number += 1
            if len(raw) > limit:
                raise HistoryError(path, offset, None,
                                   f"line {number} is longer than the {limit} byte limit")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise HistoryError(path, offset + e.start, None,
                                   f"line {number} is not UTF-8 text") from None
            yield number, offset, line.rstrip("\r\n")
            offset += len(raw)


def position(text: str, char_offset: int) -> tuple[int, int]:
    """(byte offset, line number from 1) of a character offset in `text`."""
    char_offset = max(0, min(char_offset, len(text)))
    head = text[:char_offset]
    return len(head.encode("utf-8")), head.count("\n") + 1
