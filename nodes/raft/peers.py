"""Outbound links to the other voters.

Each link owns one TCP connection to a peer's listen port, (re)connected on
demand. Raft tolerates lost messages, so a link behaves like a lossy network:
while a peer is unreachable its messages are dropped, never queued up to be
delivered stale after a partition heals.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from typing import Any

from nodes.raft import codec

MAX_QUEUED = 10_000
RECONNECT_DELAY_S = 0.05
CONNECT_TIMEOUT_S = 1.0
# A partition drops packets silently: the kernel keeps accepting our frames
# into the send buffer and retransmits them with exponential back-off, so
# after the heal the link could stay mute for many seconds and then deliver
# stale messages. Unacknowledged data for this long kills the connection
# instead, and the next message reconnects at once.
UNACKED_TIMEOUT_MS = 1000


def fit_to_frame(msg: dict[str, Any], max_bytes: int = codec.MAX_FRAME_BYTES) -> bytes | None:
    """Encode a peer message; a fetch response too large for one frame sends a
    prefix of its entries (a follower simply fetches the rest next)."""
    while True:
        try:
            return codec.encode_frame(msg, max_bytes)
        except codec.FrameTooLarge:
            entries = msg.get("entries")
            if msg.get("type") != "fetch_response" or not entries or len(entries) == 1:
                return None
            msg = msg | {"entries": entries[: len(entries) // 2]}


class PeerLink:
    def __init__(self, name: str, host: str, port: int, source_host: str) -> None:
        self.name = name
        self.host = host
        self.port = port
        # Connect from our own listen address: partitions are rules on addresses.
        self.source_host = source_host
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(MAX_QUEUED)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def send(self, msg: dict[str, Any]) -> None:
        frame = fit_to_frame(msg | {"kind": "peer"})
        if frame is None:
            print(f"dropping unsendable {msg.get('type')} to {self.name}", file=sys.stderr)
            return
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(frame)

    def _drop_queued(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port, local_addr=(self.source_host, 0)),
                    CONNECT_TIMEOUT_S,
                )
            except OSError:  # TimeoutError is an OSError
                self._drop_queued()
                await asyncio.sleep(RECONNECT_DELAY_S)
                continue
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, UNACKED_TIMEOUT_MS)
            drain_replies = asyncio.get_running_loop().create_task(self._discard(reader))
            try:
                await self._pump(first, writer)
            except OSError:  # TimeoutError is an OSError
                self._drop_queued()
            finally:
                drain_replies.cancel()
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def _pump(self, first: bytes, writer: asyncio.StreamWriter) -> None:
        frame = first
        while True:
            batch = [frame]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            writer.write(b"".join(batch))
            await writer.drain()
            frame = await self._queue.get()
            if writer.is_closing():
                raise ConnectionError("peer closed the connection")

    @staticmethod
    async def _discard(reader: asyncio.StreamReader) -> None:
        # Peers answer over their own links; this only notices a closed socket.
        with contextlib.suppress(OSError):
            while await reader.read(65536):
                pass

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
