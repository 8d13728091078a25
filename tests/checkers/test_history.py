import os

import msgpack
import pytest

from checkers.history import (
    HistoryError,
    Op,
    close_open_ops,
    pack_op,
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


def test_an_op_written_but_interrupted_before_it_was_counted_still_counts(tmp_path):
    """A Ctrl-C (KeyboardInterrupt in the appending thread) can land between
    an op's write and its count: the next op must not repeat its index."""
    path = tmp_path / "history.msgpack"
    ops = sample_ops(3)
    with HistoryWriter(path) as w:
        w.append(ops[0])
        before = w._appended
        w.append(ops[1])
        w._appended = before    # the state an interrupt right after the write leaves
        for op in ops[2:]:
            w.append(op)
        assert w.count == len(ops)
    h = read_history(path)
    assert h.warnings == [] and validate(h.ops) == []
    assert [o.index for o in h.ops] == list(range(len(ops)))


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
    with pytest.raises(HistoryError, match="field 'time'") as e:
        read_history(path)
    assert (e.value.index, e.value.offset) == (1, len(msgpack.packb(good)))


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


# --- corrupt tails, bytes values, closing errors (mutants that survived) -------


def good_op_then(path, tail: bytes) -> None:
    path.write_bytes(msgpack.packb(Op(0, 1, 0, "invoke", "read").to_map()) + tail)


CLAIM_4GIB = b"\xdb\xff\xff\xff\xff"  # a str header claiming 4 GiB, its data never comes


@pytest.mark.parametrize("tail", [
    b"\x82\xa1a\xc4\x03xyz\xa1b" + CLAIM_4GIB,   # after a 3-byte bin field in a map
    b"\xdc\x00\x02\xc4\x03xyz" + CLAIM_4GIB,     # the second item of an array16
], ids=["after-a-bin-field", "inside-an-array"])
def test_a_tail_claiming_gigabytes_after_other_fields_is_corrupt_not_torn(tmp_path, tail):
    path = tmp_path / "history.msgpack"
    good_op_then(path, tail)
    with pytest.raises(HistoryError, match="a field claims 4294967295 bytes") as e:
        read_history(path)
    assert (e.value.index, e.value.offset) == (1, path.stat().st_size - len(tail))


def test_a_tail_that_only_stops_short_is_torn(tmp_path):
    path = tmp_path / "history.msgpack"
    good_op_then(path, b"\xdc\x00\x02\xc4\x03xyz\xa5ab")  # the array's str is cut
    h = read_history(path)
    assert len(h.ops) == 1 and "torn tail" in h.warnings[0]


def test_bytes_values_round_trip_as_bytes(tmp_path):
    path = tmp_path / "history.msgpack"
    ops = [Op(0, 1, 0, "invoke", "write", b"\xff\x00"), Op(1, 2, 0, "ok", "write", b"\xff\x00")]
    write(path, ops)  # the recorder's packer
    assert [o.value for o in read_history(path).ops] == [b"\xff\x00", b"\xff\x00"]
    path.write_bytes(b"".join(pack_op(o) for o in ops))  # the library's
    assert [o.value for o in read_history(path).ops] == [b"\xff\x00", b"\xff\x00"]


def test_close_open_ops_says_why_they_were_closed():
    ops = [Op(0, 0, 0, "invoke", "write", 1, key="k", node="n2")]
    [closed] = close_open_ops(ops, 99, error="nemesis-killed-client")
    assert (closed.time, closed.key, closed.node, closed.error) == (
        99, "k", "n2", "nemesis-killed-client")
    assert close_open_ops(ops, 99)[0].error == "run-ended"


def test_what_a_paused_block_keeps_joins_the_oldest_generation_and_is_still_collected():
    """The collector's next young pass must not walk what the block made (a read
    history: millions of objects), and a cycle made there is still freed by a
    full pass."""
    import gc
    import weakref

    from checkers.history import collector_paused

    class Node:
        pass

    was = gc.isenabled()
    gc.enable()
    try:
        with collector_paused():
            assert not gc.isenabled()
            kept = [[i] for i in range(1000)]
            cycle = Node()
            cycle.self = cycle  # type: ignore[attr-defined]
            gone = weakref.ref(cycle)
            del cycle
        assert gc.isenabled()
        assert gc.get_count()[0] < 100  # the block's objects are not young any more
        assert gc.get_freeze_count() == 0
        assert gc.is_tracked(kept[0]) and kept[999] == [999]
        assert gone() is not None   # a young pass does not see the cycle...
        gc.collect(0)
        assert gone() is not None
        gc.collect()                # ...a full one frees it
        assert gone() is None
    finally:
        (gc.enable if was else gc.disable)()


def test_a_paused_block_leaves_objects_the_process_froze_frozen():
    import gc

    from checkers.history import collector_paused

    was = gc.isenabled()
    gc.enable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_an_op_type_that_is_a_map_is_a_clear_error(tmp_path):
    """Found by fuzzing the whole reader against the streaming one: an
    unhashable type field escaped as a TypeError."""
    path = tmp_path / "h.msgpack"
    path.write_bytes(msgpack.packb({"index": 0, "time": 0, "process": 0, "type": {"a": 1},
                                    "f": "txn", "value": None}))
    with pytest.raises(HistoryError, match="'type'"):
        read_history(path)
