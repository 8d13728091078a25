"""A history's list-append transactions: each `txn` invoke paired with its
completion, its micro-ops parsed and checked for shape.

Histories come from systems under test and from other people's files, so a
malformed transaction is reported (and left out), never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from checkers.history import NEMESIS, Op
from checkers.nothing_to_judge import nothing_to_judge

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
    # some key is touched by two of its micro-ops: only such a txn can read a
    # key and then write it (lost update, future read); True where not known
    repeats_key: bool = True
    # every read is a prefix of its key's longest read among the txns
    # `transactions` returned with it, so none can contradict the key's order
    # (False: not known, so checked)
    reads_prefix: bool = False


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
# a txn's micro-ops, its appends, its reads, whether it rereads and whether
# it repeats a key, as in Txn
_Parsed = tuple[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[Sequence[Any]], bool,
                bool]
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
    return mops, _NONE, [m for m in mops if m[0] == READ] if reads_known else _NONE, False, True


def _parse_mops(value: Any, reads_known: bool) -> _Parsed:
    """List-append micro-ops, and apart from them the appends and, if
    `reads_known`, the reads (what every later pass walks)."""
    plain = _plain_mops(value, reads_known)
    return plain if plain is not None else _converted_mops(value, reads_known)


def _plain_mops(value: Any, reads_known: bool) -> _Parsed | None:
    """The common case: micro-ops that need no conversion are taken as the
    history holds them (no copy of each), or None if one needs any. A read's
    elements are not looked at here: `transactions` checks them, mostly
    through each key's longest read (see `_reads_plain`)."""
    if type(value) is not list:
        return None
    appends = []
    reads = []
    for m in value:
        if type(m) is not list or len(m) != 3:
            return None
        f, k, v = m
        t = type(k)
        if t is not int and t is not str:
            return None
        if f == APPEND:
            t = type(v)
            if t is not int and t is not str:
                return None
            appends.append(m)
        elif f == READ:
            if not reads_known:
                if v is not None:
                    return None
            elif type(v) is not list:
                return None
            else:
                reads.append(m)
        else:
            return None
    # Only a txn touching some key twice can reread one.
    # (a txn that reads nothing is left out of every pass that asks)
    repeats = bool(reads) and len(value) > 1 and len({m[1] for m in value}) < len(value)
    return value, appends or _NONE, reads or _NONE, repeats and _rereads(value), repeats


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
    return (mops, appends or _NONE, reads or _NONE, _rereads(mops) if reads_known else False,
            True)


def _rereads(mops: Sequence[Sequence[Any]]) -> bool:
    touched = set()
    for f, k, _ in mops:
        if f == READ and k in touched:
            return True
        touched.add(k)
    return False


def transactions(history: Iterable[Op], registers: bool = False,
                 prefix_keys: Collection[Any] = frozenset()
                 ) -> tuple[list[Txn], list[dict[str, Any]]]:
    """The txns of a history in invoke order, and a `malformed-txn` anomaly for
    each one that could not be parsed. An invoke without a completion is info.
    `registers`: rw-register micro-ops instead of list-append ones.
    `prefix_keys`: keys every read of which in `history` is known to be a
    prefix of one list of ints and strings (`History.prefix_keys`, of these
    very ops): their reads are not compared again."""
    if registers:
        return _transactions(_txn_pairs(history), _parse_register_mops)
    pairs = _txn_pairs(history)
    txns, problems = _transactions(pairs, _parse_mops)
    if not _reads_plain(txns, prefix_keys):
        # Some read holds an element that needs converting (or refusing):
        # parse again, looking at every read's elements.
        txns, problems = _transactions(pairs, _parse_mops_strictly)
    return txns, problems


# The index a completion recorded without its invoke is given as its invoke's:
# before every op, so no txn is known to have completed before it began (as
# Elle orders such a txn: after nothing in realtime, before what follows).
NO_INVOKE = -1


def _txn_pairs(history: Iterable[Op]) -> list[tuple[Op, Op | None]]:
    """Each txn invoke with its completion; a completion with no open invoke
    (Elle's unit tests write histories of completions alone) stands for both,
    its invoke marked NO_INVOKE (see `without_invoke`)."""
    pairs: list[list[Any]] = []
    open_by_process: dict[int | str, int] = {}
    for op in history:
        if op.process == NEMESIS:
            continue
        if op.type == "invoke":
            open_by_process[op.process] = len(pairs)
            pairs.append([op, None])
            continue
        i = open_by_process.pop(op.process, None)
        if i is not None:
            pairs[i][1] = op
        else:
            pairs.append([replace(op, index=NO_INVOKE, type="invoke"), op])
    return [(inv, comp) for inv, comp in pairs if inv.f == "txn"]


def nothing_to_judge_in(history: list[Op], txns: list[Txn]) -> str | None:
    """Why a txn history leaves nothing to judge (the rule check-lin shares),
    or None: every client op failed, or no txn that may have happened was read."""
    return nothing_to_judge(history) or (
        None if any(t.status != FAIL for t in txns)
        else "no transaction that may have happened: nothing to judge")


def without_invoke(txns: list[Txn]) -> int:
    """How many txns were recorded as a completion alone."""
    return sum(1 for t in txns if t.invoke.index == NO_INVOKE)


def _transactions(pairs: list[tuple[Op, Op | None]], parse: Callable[..., _Parsed]
                  ) -> tuple[list[Txn], list[dict[str, Any]]]:
    txns: list[Txn] = []
    problems: list[dict[str, Any]] = []
    for inv, comp in pairs:
        status = comp.type if comp is not None else INFO
        try:
            if status == OK:
                mops, appends, reads, rereads, repeats = parse(comp.value, reads_known=True)
            else:
                mops, appends, reads, rereads, repeats = parse(inv.value, reads_known=False)
        except MalformedTxn as e:
            problems.append({"type": "malformed-txn", "op": inv.index,
                             "explanation": f"The txn invoked at op {inv.index} was left "
                                            f"out: {e}."})
            continue
        txns.append(Txn(len(txns), status, inv.process, inv, comp, mops, appends, reads,
                        rereads, repeats))
    return txns, problems


def _parse_mops_strictly(value: Any, reads_known: bool) -> _Parsed:
    """`_parse_mops`, but taking a txn as it is only if every element of its
    reads is hashable as it is, so it needs no conversion."""
    plain = _plain_mops(value, reads_known)
    if plain is not None:
        try:
            for _, _, r in plain[2]:
                hash(tuple(r))  # every element, in C
            return plain
        except TypeError:
            pass
    return _converted_mops(value, reads_known)


def _reads_plain(txns: list[Txn], prefix_keys: Collection[Any] = frozenset()) -> bool:
    """Whether every element every read holds is hashable as it is (the parse
    took the reads without looking at their elements). Each key's longest
    read is hashed, and a read that is a prefix of it holds nothing else:
    one comparison per read (which also marks the txns whose reads all are
    prefixes, `Txn.reads_prefix`), hashing only the reads that are not.
    Reads of `prefix_keys` are known to be prefixes of one list of ints and
    strings, so of each other (the shorter of the longer): not compared.
    False if some element is not."""
    longest: dict[Any, list] = {}
    rest = []  # the txns with a read of a key not in prefix_keys
    for t in txns:
        vouched = True
        for _, k, r in t.read_mops:
            if k in prefix_keys:
                continue
            vouched = False
            best = longest.get(k)
            if best is None or len(r) > len(best):
                longest[k] = r
        if vouched:
            t.reads_prefix = True
        else:
            rest.append(t)
    try:
        for r in longest.values():
            hash(tuple(r))
        for t in rest:
            prefix = True
            for _, k, r in t.read_mops:
                if k in prefix_keys:
                    continue
                full = longest[k]
                if r is not full and full[:len(r)] != r:
                    prefix = False
                    hash(tuple(r))
            t.reads_prefix = prefix
    except TypeError:
        return False
    return True
