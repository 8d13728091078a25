import asyncio
import os
import socket

import msgpack
import pytest

from nodes.raft import codec


def frames_from(data: bytes, max_bytes=codec.MAX_FRAME_BYTES):
    """Read frames with the asyncio reader from a fixed byte stream."""

    async def run():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        out = []
        while True:
            body = await codec.read_frame(reader, max_bytes)
            if body is None:
                return out
            out.append(body)

    return asyncio.run(run())


def test_round_trip_many_frames():
    msgs = [{"kind": "client", "id": i, "value": b"\x00" * i, "s": "é"} for i in range(20)]
    data = b"".join(codec.encode_frame(m) for m in msgs)
    assert [codec.decode_body(b) for b in frames_from(data)] == msgs


def test_oversize_frame_is_refused_on_both_sides():
    with pytest.raises(codec.FrameTooLarge):
        codec.encode_frame({"v": b"x" * 100}, max_bytes=50)
    head = codec.LENGTH.pack(codec.MAX_FRAME_BYTES + 1)
    with pytest.raises(codec.FrameTooLarge):
        frames_from(head + b"x" * 10)


def test_truncated_stream_is_a_frame_error_but_clean_eof_is_not():
    frame = codec.encode_frame({"a": 1})
    assert frames_from(b"") == []
    with pytest.raises(codec.FrameError):
        frames_from(frame[:2])
    with pytest.raises(codec.FrameError):
        frames_from(frame + frame[:-1])


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\xc1",  # never-used msgpack byte
        msgpack.packb([1, 2, 3]),
        msgpack.packb("a string"),
        msgpack.packb({"a": 1}) + b"trailing",
        b"\x91" * 100_000 + b"\x90",  # nesting deeper than the unpacker allows
        b"\x81\x91\x01\x02",  # a map keyed by an (unhashable) list
    ],
)
def test_bad_bodies_are_bad_messages(body):
    with pytest.raises(codec.BadMessage):
        codec.decode_body(body)


def test_random_garbage_never_raises_anything_else():
    rng = __import__("random").Random(7)
    for _ in range(2000):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40)))
        try:
            assert isinstance(codec.decode_body(body), dict)
        except codec.BadMessage:
            pass


def test_blocking_socket_helpers():
    a, b = socket.socketpair()
    with a, b:
        codec.send_frame(a, {"id": 1, "payload": os.urandom(100_000)})
        assert codec.recv_frame(b)["id"] == 1
        a.sendall(codec.LENGTH.pack(codec.MAX_FRAME_BYTES + 1))
        with pytest.raises(codec.FrameTooLarge):
            codec.recv_frame(b)
        a.close()
        with pytest.raises(ConnectionError):
            codec.recv_frame(b)
