import os

import msgpack
import pytest

from checkers.history import (
    HistoryError,
    Op,
    close_open_ops,
    pair_ops,
    read_history,
    validate,
)
from harness.run.history import HistoryWriter


def sample_ops(n):
    ops = []
    for i in range(n):
        p = i % 5
        ops.append(Op(0, 2 * i, p, "invoke", "write", i, key=f"k{p}"))
        ops.append(Op(0, 2 * i + 1, p, "ok", "write", i, key=f"k{p}", node="n1"))
    return ops


def write(path, ops):
    with HistoryWriter(path) as w:
        for op in ops:
            w.append(op)


def test_round_trip(tmp_path):
    path = tmp_path / "history.msgpack"
    ops = sample_ops(100)
    write(path, ops)
    h = read_history(path)
    assert h.warnings == []
    assert [o.to_map() for o in h.ops] == [o.to_map() for o in ops]
    assert [o.index for o in h.ops] == list(range(200))
    assert validate(h.ops) == []


def test_torn_tail_keeps_every_whole_op(tmp_path):
    path = tmp_path / "history.msgpack"
    write(path, sample_ops(10))
    size = path.stat().st_size
    os.truncate(path, size - 3)
    h = read_history(path)
    assert len(h.ops) == 19
    assert len(h.warnings) == 1
    assert "torn tail at byte" in h.warnings[0]
    whole = sum(len(msgpack.packb(o.to_map())) for o in h.ops)
    assert f"byte {whole}" in h.warnings[0]


def test_corrupt_middle_names_offset_and_index(tmp_path):
    path = tmp_path / "history.msgpack"
    write(path, sample_ops(10))
    data = bytearray(path.read_bytes())
    first = len(msgpack.packb(read_history(path).ops[0].to_map()))
    data[first] = 0xC1  # the one byte msgpack never uses
    path.write_bytes(bytes(data))
    with pytest.raises(HistoryError) as e:
        read_history(path)
    assert e.value.offset == first
    assert e.value.index == 1
    assert str(path) in str(e.value)


def test_wrong_field_type_is_a_clear_error(tmp_path):
    path = tmp_path / "history.msgpack"
    good = Op(0, 1, 0, "invoke", "read").to_map()
    bad = dict(Op(1, 2, 0, "ok", "read").to_map(), time="soon")
    path.write_bytes(msgpack.packb(good) + msgpack.packb(bad))
    with pytest.raises(HistoryError, match="field 'time'"):
        read_history(path)


def test_absurd_size_is_refused(tmp_path):
    path = tmp_path / "history.msgpack"
    # A str header claiming 4 GiB must not make the reader wait for or allocate it.
    path.write_bytes(b"\xdb\xff\xff\xff\xff" + b"x" * 10)
    with pytest.raises(HistoryError):
        read_history(path)


def test_validate_and_pairing():
    ops = [
        Op(0, 0, 0, "invoke", "write", 1),
        Op(1, 1, 1, "invoke", "read"),
        Op(2, 2, 0, "info", "write", 1),
        Op(3, 3, 0, "invoke", "read"),
        Op(4, 4, 2, "ok", "read"),
        Op(5, 5, 1, "ok", "cas"),
    ]
    problems = validate(ops)
    assert any("issues again after an info" in p for p in problems)
    assert any("no open invoke" in p for p in problems)
    assert any("does not match" in p for p in problems)
    assert any("never completed" in p for p in problems)
    pairs = pair_ops(ops[:3])
    assert pairs[0][1] is ops[2] and pairs[1][1] is None


def test_close_open_ops():
    ops = [Op(0, 0, 0, "invoke", "write", 1), Op(1, 1, 1, "invoke", "read"),
           Op(2, 2, 1, "ok", "read", None)]
    closing = close_open_ops(ops, 99)
    assert [(o.index, o.process, o.type, o.f, o.value) for o in closing] == [
        (3, 0, "info", "write", 1)]
    assert validate(ops + closing) == []
