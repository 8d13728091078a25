"""The history contract: the Op type, a streaming size-limited reader, and the
helpers every checker needs (pairing, validation, closing open ops).

Histories are untrusted data: a crashed harness leaves a torn tail, a broken
disk leaves garbage. The reader reports both precisely and never lets a
msgpack exception escape.
"""

from __future__ import annotations

import gc
import math
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack

OP_TYPES = frozenset({"invoke", "ok", "fail", "info"})
COMPLETION_TYPES = frozenset({"ok", "fail", "info"})
NEMESIS = "nemesis"
# A fault's result carries this key (with the reason) when it changed nothing:
# a partition shape cutting no link, a kill of nodes already down. The history
# and the executed schedule record it; nothing may count it as a fault.
NOOP = "noop"
# What an acknowledgement promised (Redpanda's recovery RFC's
# consistency levels): "quorum" - on a majority's disks; "leader" - appended
# by the leader only; "none" - sent. Only a quorum ack may never be lost; an
# ok completion without a level is a quorum ack.
QUORUM = "quorum"
LEVELS = (QUORUM, "leader", "none")

# Limits for one op on disk. An op is small; anything bigger is corruption or
# an attack, and must not make the reader allocate gigabytes.
MAX_OP_BYTES = 16 * 1024 * 1024
MAX_CONTAINER_LEN = 1_000_000
READ_CHUNK = 1 << 16


class HistoryError(Exception):
    """A history that cannot be read: names the file, byte offset and op index."""

    def __init__(self, path: str | os.PathLike[str], offset: int | None, index: int | None,
                 reason: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.index = index
        self.reason = reason
        where = []
        if offset is not None:
            where.append(f"byte {offset}")
        if index is not None:
            where.append(f"op {index}")
        at = f" at {', '.join(where)}" if where else ""
        super().__init__(f"{self.path}{at}: {reason}")


def open_regular(path: str | os.PathLike[str],
                 error: type[HistoryError] | None = None) -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file; else
    `error` (HistoryError by default). Opened without blocking, then looked
    at (not looked at, then opened: a swap in between defeats that), since
    opening a FIFO to read waits for a writer, forever if none comes."""
    error = error or HistoryError
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise error(path, None, None, f"cannot open: {e.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(path, None, None, f"not a regular file (a {_file_kind(mode)})")
        # Reads of a regular file never block; the flag is dropped all the same
        # so the file object behaves as open() would have made it.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


@dataclass(slots=True)
class Op:
    index: int
    time: int
    process: int | str
    type: str
    f: str
    value: Any = None
    key: Any = None
    node: str | None = None
    error: str | None = None
    level: str | None = None  # a completion's consistency level, when not quorum
    # The workload that issued it, when a run composes several
    # (workloads.companion); None: the run's main workload.
    workload: str | None = None

    def to_map(self) -> dict[str, Any]:
        m: dict[str, Any] = {
            "index": self.index,
            "time": self.time,
            "process": self.process,
            "type": self.type,
            "f": self.f,
            "value": self.value,
        }
        if self.key is not None:
            m["key"] = self.key
        if self.node is not None:
            m["node"] = self.node
        if self.error is not None:
            m["error"] = self.error
        if self.level is not None:
            m["level"] = self.level
        if self.workload is not None:
            m["workload"] = self.workload
        return m

    @classmethod
    def from_map(cls, m: Any) -> Op:
        """Build an Op from a decoded map, raising ValueError naming the bad field."""
        if not isinstance(m, dict):
            raise ValueError(f"an op must be a map, not {type(m).__name__}")
        try:
            index = m["index"]
            time = m["time"]
            process = m["process"]
            typ = m["type"]
            f = m["f"]
        except KeyError as e:
            raise ValueError(f"op has no field {e.args[0]!r}") from None
        if type(index) is not int or index < 0:
            raise ValueError(f"field 'index' must be a non-negative int, not {index!r:.40}")
        if type(time) is not int:
            raise ValueError(f"field 'time' must be an int, not {time!r:.40}")
        if not (type(process) is int or process == NEMESIS):
            raise ValueError(f"field 'process' must be an int or 'nemesis', not {process!r:.40}")
        if type(typ) is not str or typ not in OP_TYPES:  # (a map is unhashable)
            raise ValueError(f"field 'type' must be one of invoke/ok/fail/info, not {typ!r:.40}")
        if type(f) is not str:
            raise ValueError(f"field 'f' must be a string, not {f!r:.40}")
        node = m.get("node")
        if node is not None and type(node) is not str:
            raise ValueError(f"field 'node' must be a string, not {node!r:.40}")
        error = m.get("error")
        if error is not None and type(error) is not str:
            raise ValueError(f"field 'error' must be a string, not {error!r:.40}")
        level = m.get("level")
        if level is not None and level not in LEVELS:
            raise ValueError(f"field 'level' must be one of {'/'.join(LEVELS)}, not {level!r:.40}")
        workload = m.get("workload")
        if workload is not None and type(workload) is not str:
            raise ValueError(f"field 'workload' must be a string, not {workload!r:.40}")
        return cls(index, time, process, typ, f, m.get("value"), m.get("key"), node, error,
                   level, workload)

    def completes(self, invoke: Op) -> bool:
        return self.process == invoke.process and self.f == invoke.f


@dataclass
class History:
    ops: list[Op]
    warnings: list[str] = field(default_factory=list)
    # Keys every ok txn read of which, as `read_whole` built these ops, is a
    # prefix of one list of ints and strings (None: nothing known). Two
    # prefixes of one list are prefixes of each other by length, so the
    # list-append checker need not compare those reads element by element
    # again (`checkers.elle.check`'s `prefix_keys`). True of these very ops
    # only, as read.
    prefix_keys: frozenset | None = None


def _unpacker() -> msgpack.Unpacker:
    return msgpack.Unpacker(
        raw=False,
        strict_map_key=False,
        use_list=True,
        max_buffer_size=MAX_OP_BYTES + READ_CHUNK,
        max_str_len=MAX_OP_BYTES,
        max_bin_len=MAX_OP_BYTES,
        max_array_len=MAX_CONTAINER_LEN,
        max_map_len=MAX_CONTAINER_LEN,
        max_ext_len=0,
    )


def iter_history(path: str | os.PathLike[str],
                 warn: Callable[[str], None] | None = None) -> Iterator[Op]:
    """Yield the ops of a msgpack history file in order.

    A torn tail (bytes at the end that do not make a whole op) is passed to
    `warn` with its byte offset; every whole op before it is still yielded.
    """
    path = Path(path)
    unpacker = _unpacker()
    index = 0
    start = 0
    fed = 0            # bytes fed to the unpacker so far
    tail = b""         # the last bytes of the previous chunk: a float split across two
    suspects: deque[int] = deque()   # offsets where a non-finite float may start
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        while True:
            chunk = f.read(READ_CHUNK)
            if not chunk:
                break
            scanned = tail + chunk
            for pattern in _NON_FINITE_FLOATS:
                suspects.extend(fed - len(tail) + m.start() for m in pattern.finditer(scanned))
            if len(suspects) > 1:
                suspects = deque(sorted(suspects))
            tail = chunk[-_NON_FINITE_TAIL:]
            fed += len(chunk)
            try:
                unpacker.feed(chunk)
            except msgpack.BufferFull:
                raise HistoryError(path, start, index,
                                   f"op larger than the {MAX_OP_BYTES} byte limit") from None
            while True:
                try:
                    obj = unpacker.unpack()
                except msgpack.OutOfData:
                    break
                except Exception as e:  # msgpack raises several unrelated types
                    raise HistoryError(path, start, index,
                                       f"corrupt data ({type(e).__name__}: {e})") from None
                end = unpacker.tell()
                try:
                    op = Op.from_map(obj)
                except ValueError as e:
                    raise HistoryError(path, start, index, str(e)) from None
                if op.index != index:
                    raise HistoryError(path, start, index,
                                       f"op says index {op.index}, expected {index}")
                while suspects and suspects[0] < start:
                    suspects.popleft()
                if suspects and suspects[0] < end:
                    bad = non_finite_in(obj)
                    if bad is not None:
                        raise HistoryError(path, start, index,
                                           f"a number that is not finite ({bad}): no checker "
                                           "can judge it")
                yield op
                index += 1
                start = end
    if start < size:
        f_tail = _oversize_claim(path, start)
        if f_tail is not None:
            raise HistoryError(path, start, index, f_tail)
    if start < size and warn is not None:
        warn(f"{path}: torn tail at byte {start}: {size - start} trailing bytes after "
             f"{index} whole ops were ignored")


# msgpack's float 64 (0xcb) and float 32 (0xca) of an infinity or a NaN: the
# exponent all ones. Bytes that only look like one (inside a string, an int)
# cost a walk over that op's values, nothing else; an op without them none.
# Two patterns, each led by its literal byte, which the regex engine finds
# at memchr's pace: one pattern with both alternatives tries every position
# (1M ops read 15% slower instead of 5%).
_NON_FINITE_FLOATS = (re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]"),
                      re.compile(rb"\xca[\x7f\xff][\x80-\xff]"))
_NON_FINITE_TAIL = 2


def non_finite_in(value: Any) -> float | None:
    """The first inf or nan in a decoded value (its lists and maps looked
    into, keys too), or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if v.__class__ is float:
            if not math.isfinite(v):
                return v
        elif v.__class__ is list or v.__class__ is tuple:
            stack.extend(v)
        elif v.__class__ is dict:
            stack.extend(v)
            stack.extend(v.values())
    return None


_FIXED_WIDTH = {0xC0: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4,
                0xCF: 8, 0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8, 0xD4: 2, 0xD5: 3, 0xD6: 5,
                0xD7: 9, 0xD8: 17}
_BYTES_LEN = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}  # bin, str: len width
_EXT_LEN = {0xC7: 1, 0xC8: 2, 0xC9: 4}
_CONTAINER_LEN = {0xDC: (2, 1), 0xDD: (4, 1), 0xDE: (2, 2), 0xDF: (4, 2)}  # width, items per


def _oversize_claim(path: Path, offset: int) -> str | None:
    """Why the bytes after `offset` are corrupt rather than torn, or None.

    msgpack only enforces its size limits once the data has arrived, so a
    header claiming gigabytes at the end of a file looks like a torn write.
    Walking the headers of the tail tells the two apart.
    """
    with open_regular(path) as f:
        f.seek(offset)
        buf = f.read(MAX_OP_BYTES + 1)
    pos, pending = 0, 1
    while pending and pos < len(buf):
        b = buf[pos]
        pending -= 1
        pos += 1
        if b <= 0x7F or b >= 0xE0:
            continue
        if 0x80 <= b <= 0x8F:
            pending += 2 * (b & 0x0F)
        elif 0x90 <= b <= 0x9F:
            pending += b & 0x0F
        elif 0xA0 <= b <= 0xBF:
            pos += b & 0x1F
        elif b == 0xC1:
            return "corrupt data (byte 0xc1 is never valid msgpack)"
        elif b in _FIXED_WIDTH:
            pos += _FIXED_WIDTH[b]
        elif b in _BYTES_LEN or b in _EXT_LEN:
            width = _BYTES_LEN.get(b) or _EXT_LEN[b]
            n = int.from_bytes(buf[pos:pos + width], "big")
            if pos + width <= len(buf) and n > MAX_OP_BYTES:
                return f"a field claims {n} bytes, over the {MAX_OP_BYTES} byte limit"
            pos += width + n + (1 if b in _EXT_LEN else 0)
        else:
            width, per = _CONTAINER_LEN[b]
            n = int.from_bytes(buf[pos:pos + width], "big")
            if pos + width <= len(buf) and n > MAX_CONTAINER_LEN:
                return f"a container claims {n} items, over the {MAX_CONTAINER_LEN} limit"
            pos += width
            pending += per * n
    return None


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a block that makes millions of
    small acyclic objects (reading a history, checking one): its passes over
    them cost a quarter to two thirds of such a block's time (measured by
    bench/elle.py), and they free nothing.

    At the end, what the block made and kept joins the oldest generation
    (unless the process keeps objects frozen, which are left as they are):
    left in the youngest, the collector's first pass after the block would
    walk every one of them, a read history's every element included (on a
    100k-txn list-append history a seventh to a fifth of reading and checking
    it in one process, bench/elle.py --compare). They are still collected, by
    full passes only."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()    # every tracked object to the permanent generation...
                gc.unfreeze()  # ...and back, into the oldest: no pass walks them
            gc.enable()


# --- the whole-file reader --------------------------------------------------
# `read_history` reads a history the harness wrote whole: the same ops as
# `iter_history` yields, or None where it cannot vouch for that, and then
# the file is streamed (with that reader's errors and warnings).
#
# Why: a list-append history's reads repeat their key's earlier elements (a
# 100k-txn history holds ~15M of them in 74 MB), and decoding each into an
# int object is most of reading it. Here each read's bytes are compared with
# its key's longest read's: msgpack is self-delimiting and deterministic to
# decode, so a read whose element bytes are a prefix of the longest's holds
# the same elements, and is built as a slice of the longest's decoded list
# (its ints, immutable, shared, not made again). Any other read is decoded.
#
# Everything is decoded by msgpack with the streaming reader's options, but
# what msgspec decodes into a typed shape (an op's fields; a list-append
# txn's micro-ops), which takes only what msgpack decodes the same way.
# Anything else declines: a torn tail, corrupt bytes, an op near a limit, a
# field of another type or an unknown one, a non-finite float, a file over
# MAX_FILE_BYTES; and a history whose first MiB is not mostly txns (few
# reads to share: streamed faster, and in less memory).

# The file is held whole while its ops are built (its bytes, not its decoded
# objects: ~5x less): past this the streaming reader reads it in chunks.
MAX_FILE_BYTES = 512 * 1024 * 1024
# Ops near MAX_OP_BYTES are left to the streaming reader, which says exactly
# whether they are over: here an op's value and key may take a quarter of it
# each (its strings `history_shapes.MAX_CHARS` each).
_MAX_FIELD_BYTES = MAX_OP_BYTES // 4
_INDEX_KEY = b"\xa5index"  # how `pack_op` writes an op's first key
_TXN_F = b"\xa1f\xa3txn"    # and a txn's "f"
_READ_F = re.compile(b"\xa1r")  # and a read's "r"
_SNIFF_BYTES = 1 << 20     # what is looked at to tell a txn history
_HEADER = 5                # msgpack's array 32 header
_LEVELS = frozenset((None, *LEVELS))

_UNPACK = dict(raw=False, strict_map_key=False, use_list=True, max_str_len=MAX_OP_BYTES,
               max_bin_len=MAX_OP_BYTES, max_array_len=MAX_CONTAINER_LEN,
               max_map_len=MAX_CONTAINER_LEN, max_ext_len=0)


class _Decline(Exception):
    """This reader cannot vouch for the result: the streaming one reads it."""


def read_whole(path: str | os.PathLike[str]) -> History | None:
    """The ops of a msgpack history, as `iter_history` yields them, with
    `History.prefix_keys`, or None: this reader declines and the caller
    streams the file."""
    buf = whole_buffer(path)
    if buf is None:
        return None
    # imported here: an EDN history's check (Elle's huge-scc: 0.5 s in all)
    # need not pay for msgspec's import
    from checkers import history_shapes as shapes
    try:
        return _ops(buf, shapes)
    except _Decline:
        return None


def whole_buffer(path: str | os.PathLike[str]) -> bytearray | None:
    """A msgpack history's bytes after room for the array header that
    `decode_whole` writes, or None: not a file `read_whole` reads (empty,
    over MAX_FILE_BYTES, not mostly txns, or changing size while read)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if not 0 < size <= MAX_FILE_BYTES:
            return None
        # One buffer, the file after room for the array header that makes
        # its ops one msgpack array: no copy of it is ever made (msgspec's
        # raw fields point into it).
        buf = bytearray(_HEADER + size)
        view = memoryview(buf)
        fd = f.fileno()
        got = os.readv(fd, [view[_HEADER:_HEADER + min(size, _SNIFF_BYTES)]])
        head = bytes(view[_HEADER:_HEADER + got])
        # Mostly txns, or the reads shared do not pay for decoding each other
        # op's fields apart (a history of a quarter txns: a third slower)
        if 2 * head.count(_TXN_F) < head.count(_INDEX_KEY):
            return None
        while got < size:
            n = os.readv(fd, [view[_HEADER + got:]])
            if not n:
                break
            got += n
        view.release()
        if got < size or os.read(fd, 1):
            return None  # the file changed size while read
    return buf


def _ops(buf: bytearray, shapes: Any) -> History:
    envelopes = _envelopes(buf, shapes.ENVELOPES)
    ops: list[Op] = []
    append = ops.append
    oks: list[tuple[Op, list]] = []   # ok txns and their micro-ops, reads left as bytes
    op_types, levels, limit = OP_TYPES, _LEVELS, _MAX_FIELD_BYTES
    done, flat, has_read = shapes.MOPS, shapes.SCALAR_MOPS, _READ_F.search
    scalar_reads = False  # reads seen to hold scalars (rw-register): flat first
    unvouched = False
    for i, e in enumerate(envelopes):
        process, typ, f, raw, key = e.process, e.type, e.f, e.value, e.key
        if (e.index != i or typ not in op_types or e.level not in levels
                or (process.__class__ is str and process != NEMESIS)):
            raise _Decline
        if len(raw) > limit:
            raise _Decline
        op = Op(i, e.time, process, typ, f, None, _unpack(key) if key else None, e.node,
                e.error, e.level, e.workload)
        append(op)
        if not raw:
            continue
        # (a value of at most MAX_CONTAINER_LEN bytes holds no container
        # over that limit: no need to count its items)
        if f == "txn" and len(raw) <= MAX_CONTAINER_LEN:
            # Micro-ops of scalars alone (an invoke's, an ok txn's that read
            # nothing, or read registers) decode straight into their lists.
            if typ != "ok" or scalar_reads or not has_read(raw):
                try:
                    op.value = flat.decode(raw)
                    continue
                except Exception:  # noqa: S110 - not of scalars alone: decoded below
                    pass
            if typ == "ok":
                try:
                    mops = done.decode(raw)
                except Exception:  # not a list-append txn's
                    mops = None
                if mops is not None:
                    oks.append((op, mops))
                    continue
                if not scalar_reads:
                    try:  # an rw-register txn's: so are the next ones, likely
                        op.value = flat.decode(raw)
                        scalar_reads = True
                        continue
                    except Exception:  # noqa: S110 - decoded as msgpack decodes it
                        pass
        op.value = _unpack(raw)
        # a completion whose reads `_ok_values` did not build (one may be
        # paired with a txn invoke whatever its f): no read is vouched for
        unvouched |= typ == "ok"
    del envelopes
    prefix_keys = _ok_values(oks, shapes.Append)
    return History(ops, prefix_keys=None if unvouched else prefix_keys)


def decode_whole(buf: bytearray, decoder: Any) -> list[Any] | None:
    """`whole_buffer`'s ops decoded by `decoder` (a msgspec decoder of a
    list of op shapes), or None if they do not all fit its shape."""
    try:
        return _envelopes(buf, decoder)
    except _Decline:
        return None


def _envelopes(buf: bytearray, decoder: Any) -> list[Any]:
    """Every op's fields, decoded as one array whose length is the last op's
    index + 1: found from the file's end, and proven by the decode (an array
    of the wrong length leaves bytes over or runs out)."""
    at = buf.rfind(_INDEX_KEY, _HEADER)
    if at < 0:
        raise _Decline
    at += len(_INDEX_KEY)
    try:
        last = msgpack.unpackb(buf[at:at + 9], max_ext_len=0)
    except msgpack.ExtraData as e:
        last = e.unpacked
    except Exception:
        raise _Decline from None
    if last.__class__ is not int or not 0 <= last < 0xFFFFFFFF:
        raise _Decline
    buf[0] = 0xDD  # array 32
    buf[1:_HEADER] = (last + 1).to_bytes(4, "big")
    try:
        return decoder.decode(buf)
    except Exception:  # msgspec's errors, and UnicodeDecodeError
        raise _Decline from None


def _unpack(raw: Any) -> Any:
    if len(raw) > _MAX_FIELD_BYTES:
        raise _Decline
    try:
        value = msgpack.unpackb(raw, **_UNPACK)
    except Exception:
        raise _Decline from None
    # Only what msgpack decodes here can hold a float (msgspec's typed fields
    # take none); the streaming reader refuses an op with an inf or a nan.
    if (value.__class__ not in _SHAREABLE and any(p.search(raw) for p in _NON_FINITE_FLOATS)
            and non_finite_in(value) is not None):
        raise _Decline
    return value


def _array_body(raw: bytes) -> tuple[int, int] | None:
    """A msgpack array's length and where its elements begin, or None if
    `raw` is not an array."""
    b = raw[0]
    if 0x90 <= b <= 0x9F:
        return b & 0x0F, 1
    if b == 0xDC:
        return int.from_bytes(raw[1:3], "big"), 3
    if b == 0xDD:
        return int.from_bytes(raw[1:5], "big"), 5
    return None


_SHAREABLE = (int, str)  # immutable: a read may share them with another


def _ok_values(oks: list[tuple[Op, list]], is_append: Any) -> frozenset:
    """Each ok txn's micro-ops as [f, k, v] lists, its reads built from their
    key's longest read where their bytes are a prefix of it; and the keys
    every read of which was (see `History.prefix_keys`)."""
    longest: dict[Any, Any] = {}
    for _, mops in oks:
        for m in mops:
            if m.__class__ is not is_append and len(m.v) > len(longest.get(m.k, b"")):
                longest[m.k] = m.v
    refs: dict[Any, tuple[bytes, int, list]] = {}
    for k, raw in longest.items():
        whole = bytes(raw)
        body = _array_body(whole)
        decoded = _unpack(whole)
        if (body is not None and decoded.__class__ is list
                and all(e.__class__ in _SHAREABLE for e in decoded)):
            refs[k] = (whole, body[1], decoded)
    no_ref: tuple[bytes, int, list] = (b"", 0, [])
    not_prefix: set[Any] = set()
    for op, mops in oks:
        value = []
        for m in mops:
            if m.__class__ is is_append:
                value.append(["append", m.k, m.v])
                continue
            k = m.k
            whole, start, decoded = refs.get(k, no_ref)
            raw = memoryview(m.v)
            b = raw[0]   # the array's header: its length, where its elements begin
            if b == 0xDC:
                n, at = raw[1] << 8 | raw[2], 3
            elif 0x90 <= b <= 0x9F:
                n, at = b & 0x0F, 1
            elif b == 0xDD:
                n, at = int.from_bytes(raw[1:5], "big"), 5
            else:
                n, at = -1, 0
            if 0 <= n <= len(decoded) and whole.startswith(raw[at:], start):
                value.append(["r", k, decoded[:n]])
            else:
                value.append(["r", k, _unpack(raw)])
                not_prefix.add(k)
        op.value = value
    return frozenset(refs.keys() - not_prefix)


def read_history(path: str | os.PathLike[str]) -> History:
    """Every op of a msgpack history, and the warnings of reading it (a torn
    tail). A history mostly of txns is read whole (`read_whole`: the same
    ops; a list-append one's reads share their elements, so in half the
    memory); any other file, or one that reader declines, is streamed by
    `iter_history`, which reports what is wrong with it."""
    warnings: list[str] = []
    with collector_paused():
        whole = read_whole(path)
        if whole is not None:
            return whole
        ops = list(iter_history(path, warn=warnings.append))
    return History(ops, warnings)


def pack_op(op: Op) -> bytes:
    return msgpack.packb(op.to_map(), use_bin_type=True)


# --- helpers every checker needs -------------------------------------------


def pair_ops(ops: Iterable[Op]) -> list[tuple[Op, Op | None]]:
    """Each invoke with its completion (None if it never completed), in invoke order.

    Assumes a valid history; see `validate` for the rules.
    """
    pairs: list[list[Any]] = []
    open_by_process: dict[int | str, int] = {}
    for op in ops:
        if op.type == "invoke":
            open_by_process[op.process] = len(pairs)
            pairs.append([op, None])
        else:
            i = open_by_process.pop(op.process, None)
            if i is not None:
                pairs[i][1] = op
    return [(a, b) for a, b in pairs]


def validate(ops: Iterable[Op]) -> list[str]:
    """Problems that make a history ill-formed; an empty list means well-formed."""
    problems: list[str] = []
    open_ops: dict[int | str, Op] = {}
    retired: set[int | str] = set()
    # Indices may skip (a filtered Jepsen history) but never go back.
    expected_index = 0
    for op in ops:
        if op.index < expected_index:
            problems.append(f"op {op.index}: index out of order (expected {expected_index} "
                            f"or more)")
        expected_index = max(expected_index, op.index + 1)
        p = op.process
        if op.type == "invoke":
            if p in open_ops:
                problems.append(f"op {op.index}: process {p} invokes while op "
                                f"{open_ops[p].index} is still open")
            if p in retired and p != NEMESIS:
                problems.append(f"op {op.index}: process {p} issues again after an info")
            open_ops[p] = op
        else:
            inv = open_ops.pop(p, None)
            if inv is None:
                problems.append(f"op {op.index}: {op.type} by process {p} with no open invoke")
                continue
            if op.f != inv.f:
                problems.append(f"op {op.index}: completion f {op.f!r} does not match invoke "
                                f"{inv.index}'s f {inv.f!r}")
            if op.type == "info":
                retired.add(p)
    for p, inv in open_ops.items():
        problems.append(f"op {inv.index}: process {p}'s invoke never completed")
    return problems


def close_open_ops(ops: list[Op], time: int, error: str = "run-ended") -> list[Op]:
    """Info completions for every op still open, as the recorder adds at a run's end."""
    open_ops: dict[int | str, Op] = {}
    for op in ops:
        if op.type == "invoke":
            open_ops[op.process] = op
        else:
            open_ops.pop(op.process, None)
    next_index = ops[-1].index + 1 if ops else 0
    out = []
    for inv in sorted(open_ops.values(), key=lambda o: o.index):
        out.append(Op(next_index, time, inv.process, "info", inv.f, inv.value, inv.key,
                      inv.node, error, workload=inv.workload))
        next_index += 1
    return out


def client_ops(ops: Iterable[Op]) -> list[Op]:
    return [op for op in ops if op.process != NEMESIS]


def noop_reason(value: Any) -> str | None:
    """Why a nemesis op's result changed nothing, or None if it acted."""
    return str(value[NOOP]) if isinstance(value, dict) and value.get(NOOP) else None


def read_txn_ops(path: str | os.PathLike[str]) -> list[Any] | None:
    """A list-append history's txn ops, every key and element an int, as
    `history_shapes.TXN_OPS` decodes them (for `checkers.elle.fast`; each
    op's index its place in the file), its nemesis ops left out; or None
    when it is not one, or not a file `read_whole` reads."""
    buf = whole_buffer(path)
    if buf is None:
        return None
    from checkers import history_shapes as shapes
    ops = decode_whole(buf, shapes.TXN_OPS)
    if ops is not None:
        return ops
    anys = decode_whole(buf, shapes.ANY_OPS)
    return None if anys is None else _txn_ops(anys, shapes)


def _txn_ops(anys: list[Any], shapes: Any) -> list[Any] | None:
    """The client ops of `anys` as TXN_OPS decodes them, each nemesis op's
    value decoded as the reader decodes it (refusing what it refuses), or
    None: some op is neither a txn nor a nemesis op, or does not decode."""
    kinds = {"invoke": (shapes.TxnInvoke, shapes.UNREAD_MOPS.decode),
             "ok": (shapes.TxnOk, shapes.OK_MOPS.decode),
             "fail": (shapes.TxnFail, shapes.UNREAD_MOPS.decode),
             "info": (shapes.TxnInfo, shapes.UNREAD_MOPS.decode)}
    out = []
    try:
        for i, op in enumerate(anys):
            if op.index != i:
                return None
            if op.process == NEMESIS:
                if op.value:
                    _unpack(op.value)
                continue
            if op.process.__class__ is not int or op.f != "txn":
                return None
            cls, decode = kinds[op.type]
            out.append(cls(index=i, time=op.time, process=op.process, f="txn",
                           value=decode(op.value), node=op.node, error=op.error))
    except _Decline:
        return None
    except Exception:  # msgspec's errors: not a list-append txn's value
        return None
    return out
