"""The whole-file history reader (`checkers.history.read_whole`): on every
history it reads, the same ops as the streaming reader; on every one it
cannot vouch for, it declines (None), and `read_history` then says what the
streaming reader says, error or warning."""

import random

import msgpack
import pytest

from checkers.elle.simulate import serial_history
from checkers.history import (
    MAX_CONTAINER_LEN,
    HistoryError,
    Op,
    iter_history,
    pack_op,
    read_history,
)
from checkers.history import read_whole as read_whole_history


def read_whole(path):
    """The ops the whole reader read, or None where it declines."""
    history = read_whole_history(path)
    return None if history is None else history.ops


def write(path, ops):
    path.write_bytes(b"".join(pack_op(op) for op in ops))
    return path


def write_maps(path, maps):
    path.write_bytes(b"".join(msgpack.packb(m, use_bin_type=True) for m in maps))
    return path


def streamed(path):
    warnings = []
    return list(iter_history(path, warn=warnings.append)), warnings


def op_map(i, **fields):
    m = {"index": i, "time": i * 10, "process": 0, "type": "ok", "f": "txn", "value": None}
    m.update(fields)
    return m


def list_append(n, stale, seed=1):
    return serial_history(n, keys=4, concurrency=5, max_writes_per_key=30, p_fail=0.05,
                          p_info=0.05, p_stale=stale, rng=random.Random(seed))


@pytest.mark.parametrize("stale", [0.0, 0.2])
def test_a_list_append_history_reads_as_the_streaming_reader_reads_it(tmp_path, stale):
    path = write(tmp_path / "h.msgpack", list_append(600, stale))
    ops = read_whole(path)
    assert ops is not None
    assert (ops, []) == streamed(path)
    assert read_history(path).ops == ops and read_history(path).warnings == []


def test_an_rw_register_history_reads_as_the_streaming_reader_reads_it(tmp_path):
    rng = random.Random(3)
    ops = []
    for t in range(300):
        mops = [[rng.choice("wr"), rng.randrange(5), None] for _ in range(rng.randint(1, 4))]
        invoke = [[f, k, rng.randrange(100) if f == "w" else None] for f, k, _ in mops]
        done = [[f, k, v if f == "w" else rng.choice([None, rng.randrange(100)])]
                for f, k, v in invoke]
        ops += [Op(2 * t, 2 * t, t % 5, "invoke", "txn", invoke),
                Op(2 * t + 1, 2 * t + 1, t % 5, rng.choice(["ok", "ok", "fail", "info"]), "txn",
                   done)]
    path = write(tmp_path / "h.msgpack", ops)
    got = read_whole(path)
    assert got == ops and (got, []) == streamed(path)


def test_reads_that_are_prefixes_share_their_keys_elements(tmp_path):
    big = 10_000  # not one of the ints Python keeps made
    value = [["r", "x", [big, big + 1, big + 2]], ["r", "y", [big]]]
    ops = [Op(0, 0, 0, "invoke", "txn", [["r", "x", None]]),
           Op(1, 1, 0, "ok", "txn", [["r", "x", [big, big + 1]]]),
           Op(2, 2, 1, "invoke", "txn", [["r", "x", None], ["r", "y", None]]),
           Op(3, 3, 1, "ok", "txn", value)]
    got = read_whole(write(tmp_path / "h.msgpack", ops))
    assert got == ops
    short, long = got[1].value[0][2], got[3].value[0][2]
    assert short is not long and short[0] is long[0]   # a slice: distinct lists, shared ints


def test_a_read_that_is_no_prefix_is_decoded_as_it_is(tmp_path):
    ops = [Op(0, 0, 0, "ok", "txn", [["r", 5, [1, 2, 3]]]),
           Op(1, 1, 0, "ok", "txn", [["r", 5, [1, 9]]]),      # diverges
           Op(2, 2, 0, "ok", "txn", [["r", 5, []]]),
           Op(3, 3, 0, "ok", "txn", [["r", 5, None]]),        # a Jepsen read of nil
           Op(4, 4, 0, "ok", "txn", [["r", 6, [[1, 2], "a"]]]),  # elements not shared
           Op(5, 5, 0, "ok", "txn", [["r", 6, [[1, 2]]]])]
    got = read_whole(write(tmp_path / "h.msgpack", ops))
    assert got == ops
    assert got[5].value[0][2][0] is not got[4].value[0][2][0]


def test_every_field_and_any_other_value_reads_as_the_streaming_reader_reads_it(tmp_path):
    maps = [op_map(0, type="invoke", process="nemesis", f="partition",
                   value={"cut": [["n1", "n2"]], 3: b"\x00", "x": 1.5}),
            op_map(1, type="info", process="nemesis", f="partition", value={"noop": "none"},
                   error="timeout"),
            op_map(2, type="invoke", f="write", key=["k", 1], value=3, node="n1"),
            op_map(3, type="ok", f="write", key=["k", 1], value=3, node="n1", level="leader"),
            op_map(4, type="invoke", f="txn", value=[["w", "x", 1], ["r", "y", None]]),
            op_map(5, type="ok", f="txn", value=[["w", "x", 1], ["r", "y", 2]]),
            op_map(6, type="ok", f="txn", value=[["append", "x", 1, 2]]),   # not [f, k, v]
            op_map(7, type="ok", f="txn", value=[["append", "x", True]]),
            op_map(8, type="ok", f="txn", value=[["append", "x", "s"], ["r", 1.0, []]]),
            op_map(9, type="invoke", f="txn", value=[["r", "x", [1]]]),
            op_map(10, type="ok", f="txn")]
    path = write_maps(tmp_path / "h.msgpack", maps)
    got = read_whole(path)
    assert got is not None and (got, []) == streamed(path)
    assert got[6].value == [["append", "x", 1, 2]] and got[7].value == [["append", "x", True]]


def decline_and_same(path):
    """The whole-file reader declines and read_history says what the
    streaming reader says."""
    assert read_whole(path) is None
    try:
        expected = streamed(path)
    except HistoryError as e:
        with pytest.raises(HistoryError) as got:
            read_history(path)
        assert str(got.value) == str(e)
        return str(e)
    h = read_history(path)
    assert (h.ops, h.warnings) == expected
    return expected


def test_a_torn_tail_is_left_to_the_streaming_reader_which_warns(tmp_path):
    path = write(tmp_path / "h.msgpack", list_append(50, 0.0))
    path.write_bytes(path.read_bytes() + pack_op(Op(10_000, 0, 0, "ok", "txn", []))[:-3])
    ops, warnings = decline_and_same(path)
    assert "torn tail" in warnings[0] and len(ops) == 100


@pytest.mark.parametrize("maps, error", [
    ([op_map(0), op_map(2)], "expected 1"),
    ([op_map(0, index=True)], "'index'"),
    ([op_map(0, time=1.5)], "'time'"),
    ([op_map(0, process="p")], "'process'"),
    ([op_map(0, type="done")], "'type'"),
    ([op_map(0, level="disk")], "'level'"),
    ([op_map(0, node=3)], "'node'"),
    ([op_map(0, value=[["append", "x", float("inf")]])], "not finite"),
    ([op_map(0, value={"x": float("nan")})], "not finite"),
    ([op_map(0, f="txn", value=[["r", "x", [1] * (MAX_CONTAINER_LEN + 1)]])], "corrupt"),
    ([op_map(0, type="invoke", value=[["append", "x", 1], [1] * (MAX_CONTAINER_LEN + 1)])],
     "corrupt"),
])
def test_what_the_streaming_reader_refuses_is_declined_and_refused_alike(tmp_path, maps,
                                                                         error):
    assert error in decline_and_same(write_maps(tmp_path / "h.msgpack", maps))


def test_a_field_the_op_does_not_have_is_declined_and_ignored_alike(tmp_path):
    ops, warnings = decline_and_same(write_maps(tmp_path / "h.msgpack",
                                                [op_map(0, extra=[1, 2])]))
    assert len(ops) == 1 and warnings == []


def test_corrupt_bytes_are_declined_and_refused_alike(tmp_path):
    packed = [pack_op(op) for op in list_append(20, 0.0)]
    middle = sum(map(len, packed[:20]))   # where op 20 begins: its map header
    data = bytearray(b"".join(packed))
    data[middle] = 0xC1   # never valid msgpack
    path = tmp_path / "h.msgpack"
    path.write_bytes(bytes(data))
    assert "corrupt" in decline_and_same(path)


def test_a_history_without_txns_is_streamed(tmp_path):
    """Nothing to share: the streaming reader reads it as fast, in less memory."""
    ops = [Op(0, 0, 0, "invoke", "write", 3, key="k"), Op(1, 1, 0, "ok", "write", 3, key="k")]
    path = write(tmp_path / "h.msgpack", ops)
    assert read_whole(path) is None and read_history(path).ops == ops


def test_an_empty_history_is_no_ops(tmp_path):
    path = tmp_path / "h.msgpack"
    path.write_bytes(b"")
    assert read_history(path).ops == []


def test_an_op_the_whole_reader_takes_is_far_below_the_op_size_limit():
    """Five string fields at 4 bytes a char, a value and a key at their
    bound: under MAX_OP_BYTES, so the streaming reader would take it too."""
    from checkers import history, history_shapes
    assert 5 * 4 * history_shapes.MAX_CHARS + 2 * history._MAX_FIELD_BYTES + 1024 \
        < history.MAX_OP_BYTES


def test_reading_a_history_imports_msgspec_only_for_msgpack(tmp_path):
    """An EDN history's check (Elle's huge-scc) need not pay for msgspec."""
    import subprocess
    import sys
    code = ("import sys; import checkers.history, checkers.formats; "
            "print('msgspec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def outcome(read):
    try:
        return read()
    except HistoryError as e:
        return str(e)


def test_mutated_histories_read_as_the_streaming_reader_reads_them(tmp_path):
    """Bytes changed, dropped, inserted or cut at random (seeded): whatever
    the streaming reader makes of each file, read_history makes the same
    (ops and warnings, or the error), whether the whole reader took it or
    declined. (4,000 such files at two more seeds agreed as well.)"""
    rng = random.Random(1)
    base = b"".join(pack_op(op) for op in list_append(40, 0.2))
    path = tmp_path / "h.msgpack"
    taken = 0
    for _ in range(150):
        data = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data))
            kind = rng.random()
            if kind < 0.6:
                data[i] = rng.randrange(256)
            elif kind < 0.8:
                del data[i:i + rng.randint(1, 4)]
            else:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data))]
        path.write_bytes(bytes(data))
        got = outcome(lambda: (lambda h: (h.ops, h.warnings))(read_history(path)))
        assert got == outcome(lambda: streamed(path))
        taken += read_whole(path) is not None
    assert taken > 0   # some mutations leave a history the whole reader takes


def test_the_keys_whose_reads_are_all_prefixes_of_one_list_are_named(tmp_path):
    ops = [Op(0, 0, 0, "ok", "txn", [["r", "x", [1, 2, 3]], ["r", "y", [1, 2]]]),
           Op(1, 1, 0, "ok", "txn", [["r", "x", [1, 2]], ["r", "y", [1, 9]]]),  # y diverges
           Op(2, 2, 0, "ok", "txn", [["r", "z", [[1], 2]], ["append", "w", 1]]),  # z: lists
           Op(3, 3, 0, "ok", "txn", [["r", "x", []], ["r", "v", None]])]         # v: nil
    history = read_whole_history(write(tmp_path / "h.msgpack", ops))
    assert history is not None and history.ops == ops
    assert history.prefix_keys == {"x"}


def test_no_key_is_named_when_some_completion_was_decoded_apart(tmp_path):
    """An ok op whose value the reader did not build read by read (here one
    of another f, which `transactions` pairs with a txn invoke all the
    same): nothing is vouched for."""
    ops = [Op(0, 0, 0, "invoke", "txn", [["r", "x", None]]),
           Op(1, 1, 0, "ok", "txn", [["r", "x", [1, 2, 3]]]),
           Op(2, 2, 1, "invoke", "txn", [["r", "x", None]]),
           Op(3, 3, 1, "ok", "read", [["r", "x", [7]]])]
    history = read_whole_history(write(tmp_path / "h.msgpack", ops))
    assert history is not None and history.ops == ops
    assert history.prefix_keys is None
    ops[3] = Op(3, 3, 1, "ok", "txn", [["r", "x", [1]]])
    assert read_whole_history(write(tmp_path / "h.msgpack", ops)).prefix_keys == {"x"}


@pytest.mark.parametrize("stale, diverge", [(0.0, False), (0.2, False), (0.0, True)])
def test_the_checker_judges_alike_with_and_without_the_readers_prefix_keys(tmp_path, stale,
                                                                         diverge):
    """What the reader vouches for spares the checker's comparisons, never
    changes its verdict: on a history with stale reads (cycles), one with a
    read that no other is a prefix of (its key is not vouched for), and a
    valid one."""
    from checkers import elle

    ops = list_append(600, stale)
    read_keys = {m[1] for op in ops if op.type == "ok" for m in op.value if m[0] == "r"}
    if diverge:
        op, m = next((op, m) for op in ops if op.type == "ok" for m in op.value
                     if m[0] == "r" and len(m[2]) > 2)
        m[2] = [*m[2][:-1], 10**6]   # an element nobody appended, where another was read
        read_keys.discard(m[1])
    history = read_history(write(tmp_path / "h.msgpack", ops))
    assert history.prefix_keys is not None
    # (a stale read is an older prefix: every key is vouched for)
    assert history.prefix_keys == read_keys
    without = elle.check(history.ops)
    with_keys = elle.check(history.ops, prefix_keys=history.prefix_keys)
    for v in (without, with_keys):
        for k in ("graph_s", "cycle_search_s"):
            v["stats"].pop(k)
    assert with_keys == without
    assert without["valid"] is (not stale and not diverge)
