"""Every history reader, fed garbage, raises HistoryError and nothing else."""

import random
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_corpus import PORCUPINE

from checkers.formats import read_any, textfile
from checkers.formats.jepsen import read_edn_history, write_edn_history
from checkers.formats.porcupine import read_etcd_log, read_kv_log
from checkers.formats.textfile import iter_lines, read_text
from checkers.history import HistoryError, Op, read_history
from harness.run.history import HistoryWriter

CORPUS = PORCUPINE


def read_edn_independent(path):
    return read_edn_history(path, independent=True)


READERS = {
    "msgpack": read_history,
    "edn": read_edn_history,
    "edn-independent": read_edn_independent,
    "porcupine-etcd": read_etcd_log,
    "porcupine-kv": read_kv_log,
    "any": read_any,
}


def sample_ops():
    return [
        Op(0, 5, 0, "invoke", "cas", [1, 2], node="n1"),
        Op(1, 9, "nemesis", "invoke", "partition", {"nodes": ["n1"], "cut": [["n1", "n2"]]}),
        Op(2, 12, 0, "ok", "cas", [1, 2], node="n1"),
        Op(3, 20, 1, "invoke", "txn", [["append", 3, 4], ["r", 3, None]]),
        Op(4, 30, 1, "info", "txn", [["append", 3, 4], ["r", 3, [4]]], error="timeout"),
        Op(5, 40, "nemesis", "info", "partition", "done"),
        Op(6, 41, 2, "invoke", "put", "x 1 y", key="7"),
    ]


def seeds(tmp_path) -> list[tuple[bytes, dict[str, int]]]:
    """Files to mutate, each with the readers that must accept it unmutated and
    how many ops they must read from it (so a reader rejecting everything
    cannot pass). Corpus excerpts, cut at an arbitrary byte, promise nothing."""
    out: list[tuple[bytes, dict[str, int]]] = []
    n = len(sample_ops())
    msgpack_path = tmp_path / "seed.msgpack"
    with HistoryWriter(msgpack_path) as w:
        for op in sample_ops():
            w.append(op)
    out.append((msgpack_path.read_bytes(), {"msgpack": n, "any": n}))
    edn_path = tmp_path / "seed.edn"
    write_edn_history(sample_ops(), edn_path)
    out.append((edn_path.read_bytes(), {"edn": n, "any": n}))
    out.append((b"[" + edn_path.read_bytes() + b"]", {"edn": n, "any": n}))
    out.append((b'{:type :invoke, :f :write, :value [7 3], :process 0}\n'
                b'{:type :ok, :f :write, :value [7 3], :process 0, :error #{:a "b"}}\n',
                {"edn": 2, "edn-independent": 2, "any": 2}))
    for name in ("jepsen/etcd_000.log", "jepsen/etcd_050.log", "kv/c01-ok.txt"):
        if (CORPUS / name).exists():
            out.append(((CORPUS / name).read_bytes()[:3000], {}))
    return out


def op_count(history) -> int:
    return len(history.ops) if hasattr(history, "ops") else len(history)


def check_all_readers(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    for name, reader in READERS.items():
        try:
            reader(path)
        except HistoryError:
            pass
        except Exception as e:  # the point of the test: report which reader leaked what
            raise AssertionError(
                f"{name} raised {type(e).__name__}: {e} on {data[:200]!r}") from e


def mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        choice = rng.random()
        pos = rng.randrange(len(buf) + 1)
        if choice < 0.3 and buf:
            buf[min(pos, len(buf) - 1)] = rng.randrange(256)
        elif choice < 0.5:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        elif choice < 0.7:
            del buf[pos:pos + rng.randint(1, 40)]
        elif choice < 0.85:
            interesting = [b"[", b"]", b"{", b"}", b"#_", b"#{", b"\\u", b'"', b":", b"nil",
                           b"\xc1", b"\xdf\xff\xff\xff\xff", b"\xdb\x7f\xff\xff\xff",
                           b"\x91" * 50, b"99999999999999999999", b"\n", b";", b"##NaN",
                           b":nemesis", b":info", b":timed-out", b"\t:ok\t"]
            buf[pos:pos] = rng.choice(interesting)
        else:
            del buf[pos:]
    return bytes(buf)


def test_seeded_mutations_of_real_files(tmp_path):
    rng = random.Random(20240611)
    path = tmp_path / "fuzz"
    for seed, accepted_by in seeds(tmp_path):
        check_all_readers(path, seed)  # the unmutated file too
        for name, count in accepted_by.items():
            assert op_count(READERS[name](path)) == count, (name, seed[:60])
        for _ in range(150):
            check_all_readers(path, mutate(rng, seed))


def test_seeded_random_bytes(tmp_path):
    rng = random.Random(7)
    path = tmp_path / "fuzz"
    for _ in range(300):
        check_all_readers(path, bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_hypothesis_bytes(tmp_path, data):
    check_all_readers(tmp_path / "fuzz", data)


EDN_ATOMS = st.sampled_from(["nil", "true", "1", "-2.5", ":invoke", ":ok", ":info", ":f",
                             ":process", ":value", ":type", ":index", ":time", ":nemesis",
                             '"s"', "sym", "#_", "#{", "[", "]", "{", "}", "(", ")", "\\a",
                             ",", ";c\n", "\n", "##Inf", "#inst", "0", "99999999999999999"])


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(EDN_ATOMS, max_size=60))
def test_hypothesis_edn_tokens(tmp_path, tokens):
    check_all_readers(tmp_path / "fuzz", " ".join(tokens).encode())


MSGPACK_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats() | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=6) | st.integers(-2**63, 2**63), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(MSGPACK_VALUES | st.fixed_dictionaries(
    {"index": st.integers(-1, 3), "time": MSGPACK_VALUES, "process": MSGPACK_VALUES,
     "type": st.sampled_from(["invoke", "ok", "x"]), "f": MSGPACK_VALUES}), max_size=5))
def test_hypothesis_msgpack_structures(tmp_path, objs):
    data = b"".join(msgpack.packb(o, use_bin_type=True) for o in objs)
    check_all_readers(tmp_path / "fuzz", data)


def test_missing_file(tmp_path):
    for reader in READERS.values():
        with pytest.raises(HistoryError):
            reader(tmp_path / "nope")
        with pytest.raises(HistoryError):
            reader(tmp_path)  # a directory


# ------------------------------------------- textfile: limits and what errors say


def test_text_reader_errors_name_the_file_and_the_os_reason(tmp_path):
    missing = tmp_path / "gone.edn"
    with pytest.raises(HistoryError) as e:
        read_text(missing)
    assert e.value.path == str(missing)
    assert e.value.reason == "cannot open: No such file or directory"
    # /proc/self/mem opens, but reading its first page fails (unmapped).
    with pytest.raises(HistoryError) as e:
        read_text("/proc/self/mem")
    assert e.value.path == "/proc/self/mem"
    assert e.value.reason == "cannot read: Input/output error"
    assert read_text(_write(tmp_path / "ok.txt", b"a\nb")) == "a\nb"


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_lines_lose_their_line_break_and_nothing_else(tmp_path):
    path = _write(tmp_path / "h.txt", b"a \t\r\n b\n\nc  ")
    assert list(iter_lines(path)) == [(1, 0, "a \t"), (2, 5, " b"), (3, 8, ""), (4, 9, "c  ")]


def test_a_line_is_read_at_most_one_byte_past_the_limit(tmp_path, monkeypatch):
    # Refusing a long line must not first read all of it (an endless line
    # would exhaust memory): each readline asks for limit + 1 bytes at most.
    path = _write(tmp_path / "long.txt", b"x" * 50 + b"\nshort\n")
    asked = []

    class Spy:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def readline(self, size=-1):
            asked.append(size)
            return self.f.readline(size)

    real_open = textfile._open
    monkeypatch.setattr(textfile, "_open", lambda p: Spy(real_open(p)))
    with pytest.raises(HistoryError, match="line 1 is longer than the 10 byte limit"):
        list(iter_lines(path, limit=10))
    assert asked == [11]
    assert [line for _, _, line in iter_lines(path, limit=60)] == ["x" * 50, "short"]
    assert set(asked) == {11, 61}


def test_a_line_that_is_not_utf8_is_named_by_file_byte_and_line(tmp_path):
    path = _write(tmp_path / "h.txt", b"ok\nab\xffc\n")
    with pytest.raises(HistoryError) as e:
        list(iter_lines(path))
    assert (e.value.path, e.value.offset, e.value.reason) == (
        str(path), 5, "line 2 is not UTF-8 text")


def test_a_file_that_is_not_utf8_is_named_by_file_and_byte(tmp_path):
    path = _write(tmp_path / "h.edn", b"ok\nab\xffc")
    with pytest.raises(HistoryError) as e:
        read_text(path)
    assert (e.value.path, e.value.offset, e.value.reason) == (str(path), 5, "not UTF-8 text")
    assert str(e.value) == f"{path} at byte 5: not UTF-8 text"


def test_a_line_read_error_names_the_file_the_line_offset_and_the_os_reason(
        tmp_path, monkeypatch):
    # The disk fails after the first line (EIO): the error says where.
    import errno
    path = _write(tmp_path / "h.txt", b"first\nsecond\n")

    class FailsOnSecondLine:
        def __init__(self, f):
            self.f, self.calls = f, 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def readline(self, size=-1):
            self.calls += 1
            if self.calls == 2:
                raise OSError(errno.EIO, "Input/output error")
            return self.f.readline(size)

    real_open = textfile._open
    monkeypatch.setattr(textfile, "_open", lambda p: FailsOnSecondLine(real_open(p)))
    lines = iter_lines(path)
    assert next(lines) == (1, 0, "first")
    with pytest.raises(HistoryError) as e:
        next(lines)
    assert (e.value.path, e.value.offset, e.value.reason) == (
        str(path), 6, "cannot read: Input/output error")
