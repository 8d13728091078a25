"""A history's list-append transactions: each `txn` invoke paired with its
completion, its micro-ops parsed and checked for shape.

Histories come from systems under test and from other people's files, so a
malformed transaction is reported (and left out), never a crash.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from checkers.history import NEMESIS, Op, pair_ops

APPEND = "append"
READ = "r"
WRITE = "w"   # rw-register: set a key to a value

OK, INFO, FAIL = "ok", "info", "fail"


@dataclass(slots=True)
class Txn:
    """One transaction. `mops` are (f, key, value) triples: an append's value is the
    element; a read's value is the list read for ok txns (the history's own
    list when its elements are plain, so checking does not copy every read)
    and None otherwise (an info or failed txn's reads are unknown)."""

    id: int
    status: str
    process: int | str
    invoke: Op
    completion: Op | None
    # (f, key, value) each; the history's own [f, key, value] lists where
    # they need no conversion
    mops: Sequence[Sequence[Any]]
    # its appends and, for an ok txn, its reads (the same micro-ops as in
    # `mops`): every pass over the history wants one or the other
    append_mops: Sequence[Sequence[Any]] = ()
    read_mops: Sequence[Sequence[Any]] = ()
    # an ok txn that reads a key it read or appended before: only such a txn
    # can contradict itself (an internal anomaly)
    rereads: bool = False


class MalformedTxn(ValueError):
    pass


def _hashable(x: Any, what: str) -> Any:
    if isinstance(x, list):  # EDN vectors and msgpack arrays arrive as lists
        x = tuple(_hashable(e, what) for e in x)
    if not isinstance(x, Hashable):
        raise MalformedTxn(f"{what} {x!r:.60} cannot be compared")
    return x


def _elements(v: list | tuple) -> list:
    try:
        hash(tuple(v))  # hashes every element in C: the fast path for reads of scalars
        return v if type(v) is list else list(v)
    except TypeError:
        return [_hashable(e, "element read") for e in v]


_SCALARS = (int, str)
# a txn's micro-ops, its appends, its reads and whether it rereads, as in Txn
_Parsed = tuple[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[Sequence[Any]], bool]
_NONE: tuple = ()


def _parse_register_mops(value: Any, reads_known: bool) -> _Parsed:
    """rw-register micro-ops: [w k v] and [r k v], where a read of nil saw the
    initial state."""
    if not isinstance(value, (list, tuple)):
        raise MalformedTxn(f"a txn value must be a list of micro-ops, not {value!r:.60}")
    mops = []
    for m in value:
        if not isinstance(m, (list, tuple)) or len(m) != 3:
            raise MalformedTxn(f"micro-op {m!r:.60} is not [f, key, value]")
        f, k, v = m
        k = k if type(k) in _SCALARS else _hashable(k, "key")
        if f == WRITE:
            if v is None:
                raise MalformedTxn(f"a write of key {k!r:.40} of nil, the initial state")
            mops.append((WRITE, k, v if type(v) in _SCALARS else _hashable(v, "written value")))
        elif f == READ:
            known = reads_known and v is not None
            mops.append((READ, k, (v if type(v) in _SCALARS else _hashable(v, "value read"))
                         if known else None))
        else:
            raise MalformedTxn(f"micro-op kind {f!r:.40} is neither w nor r")
    return mops, _NONE, [m for m in mops if m[0] == READ] if reads_known else _NONE, False


def _parse_mops(value: Any, reads_known: bool) -> _Parsed:
    """List-append micro-ops, and apart from them the appends and, if
    `reads_known`, the reads (what every later pass walks)."""
    plain = _plain_mops(value, reads_known)
    return plain if plain is not None else _converted_mops(value, reads_known)


def _plain_mops(value: Any, reads_known: bool) -> _Parsed | None:
    """The common case: micro-ops that need no conversion are taken as the
    history holds them (no copy of each), or None if one needs any."""
    if type(value) is not list:
        return None
    appends = []
    reads = []
    touched: set | None = set() if reads_known and len(value) > 1 else None
    rereads = False
    for m in value:
        if type(m) is not list:
            return None
        try:
            f, k, v = m
        except ValueError:  # not three long
            return None
        t = type(k)
        if t is not int and t is not str:
            return None
        if touched is not None:
            if f == READ and k in touched:
                rereads = True
            touched.add(k)
        if f == APPEND:
            t = type(v)
            if t is not int and t is not str:
                return None
            appends.append(m)
        elif f == READ:
            if not reads_known:
                if v is not None:
                    return None
                continue
            if type(v) is not list:
                return None
            try:
                hash(tuple(v))  # every element, in C
            except TypeError:
                return None
            reads.append(m)
        else:
            return None
    return value, appends or _NONE, reads or _NONE, rereads


def _converted_mops(value: Any, reads_known: bool) -> _Parsed:
    if not isinstance(value, (list, tuple)):
        raise MalformedTxn(f"a txn value must be a list of micro-ops, not {value!r:.60}")
    mops = []
    appends: list[tuple[str, Any, Any]] = []
    reads: list[tuple[str, Any, Any]] = []
    for m in value:
        if (type(m) is not list and not isinstance(m, (list, tuple))) or len(m) != 3:
            raise MalformedTxn(f"micro-op {m!r:.60} is not [f, key, value]")
        f, k, v = m
        # ints and strings, the usual keys and elements, need no conversion
        if type(k) not in _SCALARS:
            k = _hashable(k, "key")
        if f == APPEND:
            if type(v) not in _SCALARS:
                v = _hashable(v, "appended element")
            mop = (APPEND, k, v)
            mops.append(mop)
            appends.append(mop)
        elif f == READ:
            if not reads_known:
                mops.append((READ, k, None))
                continue
            if v is None:  # a key never written reads as nil in Jepsen
                v = []
            elif isinstance(v, (list, tuple)):
                v = _elements(v)
            else:
                raise MalformedTxn(f"read of key {k!r:.40} returned {v!r:.60}, not a list")
            mop = (READ, k, v)
            mops.append(mop)
            reads.append(mop)
        else:
            raise MalformedTxn(f"micro-op kind {f!r:.40} is neither append nor r")
    # most txns only append or only read: no empty list for the other
    return mops, appends or _NONE, reads or _NONE, _rereads(mops) if reads_known else False


def _rereads(mops: Sequence[Sequence[Any]]) -> bool:
    touched = set()
    for f, k, _ in mops:
        if f == READ and k in touched:
            return True
        touched.add(k)
    return False


def transactions(history: Iterable[Op], registers: bool = False
                 ) -> tuple[list[Txn], list[dict[str, Any]]]:
    """The txns of a history in invoke order, and a `malformed-txn` anomaly for
    each one that could not be parsed. An invoke without a completion is info.
    `registers`: rw-register micro-ops instead of list-append ones."""
    parse = _parse_register_mops if registers else _parse_mops
    txns: list[Txn] = []
    problems: list[dict[str, Any]] = []
    for inv, comp in pair_ops(history):
        if inv.process == NEMESIS or inv.f != "txn":
            continue
        status = comp.type if comp is not None else INFO
        try:
            if status == OK:
                mops, appends, reads, rereads = parse(comp.value, reads_known=True)
            else:
                mops, appends, reads, rereads = parse(inv.value, reads_known=False)
        except MalformedTxn as e:
            problems.append({"type": "malformed-txn", "op": inv.index,
                             "explanation": f"The txn invoked at op {inv.index} was left "
                                            f"out: {e}."})
            continue
        txns.append(Txn(len(txns), status, inv.process, inv, comp, mops, appends, reads,
                        rereads))
    return txns, problems
