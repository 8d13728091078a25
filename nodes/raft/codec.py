"""Wire frames: a 4-byte big-endian length, then one msgpack map (docs/contracts.md).

Two kinds of failure, because they call for different reactions:
- `FrameError`: the framing itself is broken (length over the limit, stream
  ends mid-frame). The byte stream cannot be trusted any more: close it.
- `BadMessage`: the frame was read whole but its body is not a msgpack map.
  The next frame still starts at a known place: answer and keep going.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import msgpack

MAX_FRAME_BYTES = 4 * 1024 * 1024
LENGTH = struct.Struct(">I")


class FrameError(Exception):
    pass


class FrameTooLarge(FrameError):
    pass


class BadMessage(Exception):
    pass


def pack(msg: dict[str, Any]) -> bytes:
    return msgpack.packb(msg, use_bin_type=True)


def encode_frame(msg: dict[str, Any], max_bytes: int = MAX_FRAME_BYTES) -> bytes:
    body = pack(msg)
    if len(body) > max_bytes:
        raise FrameTooLarge(f"frame of {len(body)} bytes exceeds {max_bytes}")
    return LENGTH.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """The map in a frame body; BadMessage for anything else (garbage, trailing bytes)."""
    try:
        msg = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises many types for hostile input
        raise BadMessage(f"undecodable body: {type(e).__name__}") from None
    if not isinstance(msg, dict):
        raise BadMessage(f"body is a {type(msg).__name__}, not a map")
    return msg


def check_length(length: int, max_bytes: int) -> None:
    if length > max_bytes:
        raise FrameTooLarge(f"frame length {length} exceeds {max_bytes}")


async def read_frame(
    reader: asyncio.StreamReader, max_bytes: int = MAX_FRAME_BYTES
) -> bytes | None:
    """The next frame body, or None at a clean end of stream (between frames)."""
    try:
        head = await reader.readexactly(LENGTH.size)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise FrameError("stream ended inside a frame header") from None
    (length,) = LENGTH.unpack(head)
    check_length(length, max_bytes)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FrameError("stream ended inside a frame body") from None


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        buf += chunk
    return bytes(buf)


def send_frame(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.sendall(encode_frame(msg))


def recv_frame(sock: socket.socket, max_bytes: int = MAX_FRAME_BYTES) -> dict[str, Any]:
    """Blocking read of one frame; ConnectionError if the peer closes first."""
    (length,) = LENGTH.unpack(_recv_exactly(sock, LENGTH.size))
    check_length(length, max_bytes)
    return decode_body(_recv_exactly(sock, length))
