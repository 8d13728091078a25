"""Length-prefixed msgpack frames over the pipes between the harness and its
client workers (multiprocessing's own pipes would pickle)."""

from __future__ import annotations

import struct
from typing import Any, BinaryIO

import msgpack

MAX_FRAME = 16 * 1024 * 1024
_LEN = struct.Struct(">I")


class FrameError(Exception):
    pass


def encode(obj: Any) -> bytes:
    body = msgpack.packb(obj, use_bin_type=True)
    return _LEN.pack(len(body)) + body


def write_frame(stream: BinaryIO, obj: Any) -> None:
    stream.write(encode(obj))
    stream.flush()


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            if buf:
                raise FrameError(f"stream ended inside a frame ({len(buf)} of {n} bytes)")
            return None
        buf += chunk
    return buf


def read_frame(stream: BinaryIO) -> Any:
    """The next frame, or None at a clean end of stream."""
    head = _read_exact(stream, _LEN.size)
    if head is None:
        return None
    (n,) = _LEN.unpack(head)
    if n > MAX_FRAME:
        raise FrameError(f"frame of {n} bytes exceeds the {MAX_FRAME} byte limit")
    body = _read_exact(stream, n)
    if body is None:
        raise FrameError("stream ended before a frame body")
    return msgpack.unpackb(body, raw=False, strict_map_key=False)


class FrameReader:
    """Incremental decoder for a non-blocking pipe: feed bytes, take whole frames."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._buf += data
        out = []
        while len(self._buf) >= _LEN.size:
            (n,) = _LEN.unpack_from(self._buf)
            if n > MAX_FRAME:
                raise FrameError(f"frame of {n} bytes exceeds the {MAX_FRAME} byte limit")
            if len(self._buf) < _LEN.size + n:
                break
            body = bytes(self._buf[_LEN.size:_LEN.size + n])
            del self._buf[:_LEN.size + n]
            out.append(msgpack.unpackb(body, raw=False, strict_map_key=False))
        return out
