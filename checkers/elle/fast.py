"""The list-append checker's fast path: a clean history judged from columns,
without an `Op` or a `Txn` per op.

`checkers.elle.check` builds ~200k `Op`s and ~100k `Txn`s for a 100k-txn
history, and every pass over them costs ~0.02-0.04 s on this interpreter
(docs/benchmarks.md, issue 29). Here a history's txn ops (its nemesis ops
left out, as `check` leaves them), typed as `history_shapes.TXN_OPS`
decodes them (every micro-op decoded but an ok txn's reads, left as
bytes), are paired and their micro-ops put in flat columns; each read's
length comes from its header and its bytes are compared with its key's
longest read's (a read is a prefix of it or the path gives up); the
version orders, the checks and the dependency edges are array operations.

It may only say what `check` would say, so it answers only for a history
`check` finds no anomaly in, and gives up (None: judge it the long way,
which builds the counterexamples) at the first doubt: a completion without
its invoke, a process invoking twice, a read that is not a prefix of its
key's longest (incompatible order, non-int elements), an element appended
twice or by nobody, a failed txn's element read (G1a, dirty update), a read
ending in another txn's intermediate append (G1b), an internal
inconsistency, a lost update or a future read (the txns touching a key twice
are judged by the object path's own functions), duplicate elements, nothing
ordered, a history over the memory budget, or a cycle. The verdict is the
one `check` returns, stats and edge counts included (timings aside):
tests/checkers/test_elle_fast.py holds them equal.

Cycles: a txn's place in a candidate order starts at its invoke's index and
a realtime barrier's at its completion's, which satisfies every realtime and
process edge; the data edges that point backwards push their targets up,
edge by edge, for a few rounds. Keys that increase along every edge prove
the graph acyclic; otherwise the strongly connected components decide (by
scipy, imported only then: ~0.2 s that a clean history does not pay).
"""

from __future__ import annotations

import time
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

from checkers.elle.budget import DEFAULT_MEMORY_LIMIT_MB, HistorySize, over_budget
from checkers.elle.consistency import boundary, canonical, models_report
from checkers.elle.graph import scc_labels
from checkers.elle.kinds import KIND_NAMES, PROCESS, REALTIME, RW, WR, WW
from checkers.elle.txns import FAIL, INFO, OK
from checkers.history import MAX_CONTAINER_LEN, collector_paused
from checkers.verdict import Verdict, verdict

# Rounds of pushing targets of backward edges up before the components decide.
ORDER_ROUNDS = 64
# A push: far below the gap between two ops' indices, so a chain of pushes
# stays inside its gap (exact in a float64 for indices below 2**32).
_STEP = 2.0 ** -20
# Past these an op may be near the reader's limits (checkers.history:
# MAX_OP_BYTES, and MAX_CONTAINER_LEN items, which a value of as many bytes
# cannot hold): such a history is left to the object path.
_MAX_MOPS = 10_000
_MAX_VALUE_BYTES = MAX_CONTAINER_LEN
_NIL = b"\xc0"
_CODES = {INFO: 0, FAIL: 1, OK: 2}


class _Doubt(Exception):
    """The fast path cannot vouch for the verdict: `check` decides."""


def fast_check(ops: Sequence[Any], model: str = "strict-serializable",
               memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
               leave: list[Any] | None = None) -> Verdict | None:
    """`checkers.elle.check`'s verdict on the history whose txn ops these
    are (as `checkers.history.read_txn_ops` reads them: typed as
    `history_shapes.TXN_OPS` decodes them, indices ascending, nemesis ops
    left out), if it finds no anomaly; else None.
    `leave`: where it leaves its decoded micro-ops instead of freeing them
    on return, for a caller about to end the process (as `check`'s)."""
    started = time.monotonic()
    model = canonical(model)
    with collector_paused():
        try:
            return _fast(ops, model, memory_limit_mb, started,
                         [] if leave is None else leave)
        except _Doubt:
            return None


def _fast(ops: Sequence[Any], model: str, memory_limit_mb: int | None,
          started: float, leave: list[Any]) -> Verdict:
    import msgspec
    import numpy as np

    from checkers import history_shapes as shapes

    if not ops:
        raise _Doubt
    # --- pairing: each invoke with its process's next completion ---------
    invoke_cls, ok_cls = shapes.TxnInvoke, shapes.TxnOk
    status_of = {ok_cls: OK, shapes.TxnFail: FAIL, shapes.TxnInfo: INFO}
    open_by: dict[int, int] = {}
    inv_index: list[int] = []
    comp_index: list[int] = []
    status: list[str] = []
    codes = bytearray()  # per txn: 0 info, 1 fail, 2 ok
    process: list[int] = []
    values: list[Any] = []  # an ok txn's micro-ops, any other's invoke's
    mops_count = 0
    big = _MAX_MOPS
    last = -1
    for op in ops:
        i = op.index
        if i <= last:
            raise _Doubt
        last = i
        p = op.process
        if op.__class__ is invoke_cls:
            if p in open_by:
                raise _Doubt
            open_by[p] = len(status)
            inv_index.append(i)
            comp_index.append(-1)
            status.append(INFO)
            codes.append(0)
            process.append(p)
            values.append(op.value)
            size = len(op.value)
            mops_count += size
            if size > big:
                raise _Doubt  # an op that may be over the reader's limits
            continue
        j = open_by.pop(p, None)
        if j is None:
            raise _Doubt  # a completion without its invoke: the long way warns
        comp_index[j] = i
        s = status[j] = status_of[op.__class__]
        codes[j] = _CODES[s]
        if s == OK:
            values[j] = op.value
            if len(op.value) > big:
                raise _Doubt
    n = len(status)
    if over_budget(HistorySize(n, mops_count), memory_limit_mb) is not None:
        raise _Doubt
    if all(s == FAIL for s in status):
        raise _Doubt  # nothing to judge
    # --- micro-ops into columns --------------------------------------------
    append_cls = shapes.TxnAppend
    # (C arrays of int64: numpy views them without a conversion per item)
    a_txn, a_key, a_elem, r_txn, r_key, r_bytes = (array("q") for _ in range(6))
    r_raw: list[Any] = []
    longest: dict[int, Any] = {}
    leave.append(values)
    try:
        for tid in range(n):
            if codes[tid] == 2:   # ok: its reads are known
                for m in values[tid]:
                    if m.__class__ is append_cls:
                        a_txn.append(tid)
                        a_key.append(m.k)
                        a_elem.append(m.v)
                    else:
                        k, v = m.k, m.v
                        r_txn.append(tid)
                        r_key.append(k)
                        r_raw.append(v)
                        size = len(v)
                        r_bytes.append(size)
                        best = longest.get(k)
                        if best is None or size > len(best):
                            longest[k] = v
            else:
                for m in values[tid]:
                    if m.__class__ is append_cls:
                        a_txn.append(tid)
                        a_key.append(m.k)
                        a_elem.append(m.v)
    except OverflowError:  # an int beyond 64 bits
        raise _Doubt from None
    # An ok txn's value is at most 26 bytes a micro-op ([f k v] of an append
    # with 64-bit ints) plus its reads' bytes: under _MAX_VALUE_BYTES, every
    # op is inside the streaming reader's limits.
    if r_bytes and _max_value_bytes(np, r_txn, r_bytes, n) + 26 * _MAX_MOPS > _MAX_VALUE_BYTES:
        raise _Doubt
    # --- version orders: each key's longest read, every read a prefix -----
    ints = shapes.INTS.decode
    orders: dict[int, list[int]] = {}
    refs: dict[int, tuple[bytes, int]] = {}
    try:
        for k, raw in longest.items():
            whole = bytes(raw)
            # a read of nil: of a key never appended to, as `check` takes it
            order = ints(whole) if whole != _NIL else []
            if len(set(order)) != len(order):
                raise _Doubt  # duplicate elements
            orders[k] = order
            refs[k] = (whole, _header(whole)[1] if order else 0)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise _Doubt from None
    r_len = array("q")
    for k, raw in zip(r_key, r_raw, strict=True):
        whole, start = refs[k]
        view = memoryview(raw)
        b = view[0]
        if b == 0xDC:   # (the usual headers inline: a call per read costs)
            count, at = view[1] << 8 | view[2], 3
        elif 0x90 <= b <= 0x9F:
            count, at = b & 0x0F, 1
        elif b == 0xC0:  # nil: nothing read
            r_len.append(0)
            continue
        else:
            count, at = _header(view)
        if not whole.startswith(view[at:], start):
            raise _Doubt  # not a prefix of the key's longest read
        r_len.append(count)
    leave.append(r_raw)
    try:
        return _judge(np, n, status, codes, process, inv_index, comp_index, a_txn, a_key, a_elem,
                      r_txn, r_key, r_len, orders, values, append_cls, model, started)
    except OverflowError:  # an int beyond 64 bits
        raise _Doubt from None


def _max_value_bytes(np: Any, txns: array, sizes: array, n: int) -> int:
    """The most bytes of reads one txn holds."""
    per_txn = np.bincount(np.frombuffer(txns, dtype=np.int64),
                          weights=np.frombuffer(sizes, dtype=np.int64), minlength=n)
    return int(per_txn.max())


def _header(raw: Any) -> tuple[int, int]:
    """A msgpack array's length and where its elements begin."""
    b = raw[0]
    if 0x90 <= b <= 0x9F:
        return b & 0x0F, 1
    if b == 0xDC:
        return raw[1] << 8 | raw[2], 3
    if b == 0xDD:
        return int.from_bytes(raw[1:5], "big"), 5
    raise _Doubt  # not a list (a read of nil, say)


def _judge(np: Any, n: int, status: list[str], codes: bytearray, process: list[int],
           inv_index: list[int], comp_index: list[int], a_txn: array, a_key: array,
           a_elem: array, r_txn: array, r_key: array, r_len: array,
           orders: dict[int, list[int]], txn_mops: list[Any], append_cls: type, model: str,
           started: float) -> Verdict:
    i64 = np.int64
    st = np.frombuffer(codes, dtype=np.uint8)
    is_ok, is_fail = st == 2, st == 1
    # --- keys and elements as codes: (key, element) as one int64 ----------
    o_keys = list(orders)
    o_sizes = np.array([len(orders[k]) for k in o_keys], dtype=i64)
    o_key_raw = np.repeat(np.array(o_keys, dtype=i64), o_sizes)
    o_elem_raw = np.fromiter((e for k in o_keys for e in orders[k]), dtype=i64,
                             count=int(o_sizes.sum()))
    a_key_raw = np.frombuffer(a_key, dtype=i64)
    a_elem_raw = np.frombuffer(a_elem, dtype=i64)
    all_keys = np.concatenate([a_key_raw, o_key_raw])
    all_elems = np.concatenate([a_elem_raw, o_elem_raw])
    if (all_keys.size and 0 <= all_keys.min() and all_keys.max() < 2 ** 31
            and 0 <= all_elems.min() and all_elems.max() < 2 ** 32):
        pairs = (all_keys << 32) | all_elems
    else:  # ranks instead (np.unique: dearer)
        key_inv = np.unique(all_keys, return_inverse=True)[1].astype(i64)
        elems, elem_inv = np.unique(all_elems, return_inverse=True)
        pairs = key_inv * len(elems) + elem_inv
    na = len(a_key)
    a_code, o_code = pairs[:na], pairs[na:]
    a_tx = np.frombuffer(a_txn, dtype=i64)
    # Every element appended once (else `check` keeps the first writer).
    a_sort = np.argsort(a_code, kind="stable")
    a_sorted = a_code[a_sort]
    if na > 1 and (a_sorted[1:] == a_sorted[:-1]).any():
        raise _Doubt
    # The writer of each element of each order: someone, and not a failed txn
    # (a read of a failed txn's element is G1a; it in an order, dirty too).
    atc = np.minimum(np.searchsorted(a_sorted, o_code), max(na - 1, 0))
    if len(o_code) and (na == 0 or (a_sorted[atc] != o_code).any()):
        raise _Doubt  # an element read that nobody appended
    o_writer = a_tx[a_sort[atc]] if len(o_code) else np.zeros(0, dtype=i64)
    if is_fail[o_writer].any():
        raise _Doubt
    # Each append's place in the orders' flat array, or -1: not read.
    a_place = np.full(na, -1, dtype=i64)
    if len(o_code):
        a_place[a_sort[atc]] = np.arange(len(o_code), dtype=i64)
    o_base = np.concatenate([[0], np.cumsum(o_sizes)])[:-1].astype(i64)
    base_of = dict(zip(o_keys, o_base.tolist(), strict=True))
    size_of = dict(zip(o_keys, o_sizes.tolist(), strict=True))
    # Unread appends of ok txns: after the key's order, in append order.
    unread_rows = np.flatnonzero((a_place < 0) & is_ok[a_tx])
    unread: dict[int, list[int]] = {}   # key -> its unread appends' writers, in order
    for k, w in zip(a_key_raw[unread_rows].tolist(), a_tx[unread_rows].tolist(), strict=True):
        unread.setdefault(k, []).append(w)
    writer_list = o_writer.tolist()

    def writer(k: int, j: int) -> int:   # of the j-th element of k's order
        return writer_list[base_of[k] + j]

    # Txns touching some key twice (what intermediate appends, internal
    # consistency, lost updates and future reads need): a (txn, key) pair
    # among their appends and known reads more than once.
    rt = np.frombuffer(r_txn, dtype=i64)
    rk = np.frombuffer(r_key, dtype=i64)
    touched = np.concatenate([a_tx, rt])
    touched_keys = np.concatenate([a_key_raw, rk])
    multi_ids = _repeated_txns(np, touched, touched_keys)
    first_reads = np.searchsorted(rt, multi_ids).tolist()
    first_appends = np.searchsorted(a_tx, multi_ids).tolist()
    multi = [(t, txn_mops[t], r, a) for t, r, a
             in zip(multi_ids.tolist(), first_reads, first_appends, strict=True)]
    intermediate = _judge_multi(multi, append_cls, status, r_len, a_place.tolist(), base_of)
    # --- reads: what each saw last (wr) and missed next (rw) ---------------
    rl = np.frombuffer(r_len, dtype=i64)
    by_key = np.argsort(np.array(o_keys, dtype=i64))
    at_key = by_key[np.searchsorted(np.array(o_keys, dtype=i64)[by_key], rk)] if len(rk) else rk
    r_base = o_base[at_key]
    r_size = o_sizes[at_key]
    last_at = np.maximum(r_base + rl - 1, 0)
    wr = np.where(rl > 0, o_writer[last_at] if len(o_writer) else -1, -1)
    next_at = np.minimum(r_base + rl, max(len(o_writer) - 1, 0))
    rw = np.where(rl < r_size, o_writer[next_at] if len(o_writer) else -1, -1)
    has_unread = np.isin(rk, np.array(list(unread), dtype=i64))
    own = wr == rt
    # G1b: a read ending (before its own appends) in an intermediate append
    if intermediate:
        inter = np.array([base_of[k] + j for k, j in intermediate], dtype=i64)
        ends_inter = np.isin(last_at, inter) & (rl > 0)
    else:
        ends_inter = np.zeros(len(rt), dtype=bool)
    exact = own | ((rw < 0) & has_unread)
    ww_src: list[Any] = []
    ww_dst: list[Any] = []
    wr_src: list[Any] = []
    wr_dst: list[Any] = []
    rw_src: list[Any] = []
    rw_dst: list[Any] = []
    for i in np.flatnonzero(exact | ends_inter).tolist():
        tid, k, end = r_txn[i], r_key[i], r_len[i]
        while end and writer(k, end - 1) == tid:
            end -= 1
        if end and (k, end - 1) in intermediate:
            raise _Doubt  # G1b
        if not exact[i]:
            continue
        # `graph._read_edges` of a read whose key has an order, every
        # element of it live
        if end:
            wr_src.append(writer(k, end - 1))
            wr_dst.append(tid)
        if end < size_of[k]:
            w = writer(k, end)
            if w != tid:
                rw_src.append(tid)
                rw_dst.append(w)
            continue
        for w in unread.get(k, ()):
            if w != tid:
                rw_src.append(tid)
                rw_dst.append(w)
    sel = ~exact & (wr >= 0)
    wr_src.append(wr[sel])
    wr_dst.append(rt[sel])
    sel = ~exact & (rw >= 0) & (rw != rt)
    rw_src.append(rt[sel])
    rw_dst.append(rw[sel])
    # --- ww: consecutive writers of each order, then its unread appends ----
    same_key = np.repeat(np.arange(len(o_keys)), o_sizes)
    step = (same_key[1:] == same_key[:-1]) & (o_writer[1:] != o_writer[:-1])
    ww_src.append(o_writer[:-1][step])
    ww_dst.append(o_writer[1:][step])
    for k, ws in unread.items():
        if size_of.get(k):
            last_w = writer(k, size_of[k] - 1)
            for w in ws:
                if w != last_w:
                    ww_src.append(last_w)
                    ww_dst.append(w)
    # --- process and realtime order ------------------------------------------
    live = np.flatnonzero(~is_fail)
    procs = np.array(process, dtype=i64)[live]
    by_proc = np.argsort(procs, kind="stable")
    same = procs[by_proc][1:] == procs[by_proc][:-1]
    p_src, p_dst = live[by_proc][:-1][same], live[by_proc][1:][same]
    done = np.flatnonzero(is_ok)
    completions = np.array(comp_index, dtype=i64)[done]
    by_comp = np.argsort(completions, kind="stable")
    completions, done = completions[by_comp], done[by_comp]
    barriers = n + np.arange(len(done), dtype=i64)
    invokes = np.array(inv_index, dtype=i64)[live]
    before = np.searchsorted(completions, invokes, side="left")
    after = before > 0
    t_src = np.concatenate([done, barriers[:-1], n + before[after] - 1])
    t_dst = np.concatenate([barriers, barriers[1:], live[after]])
    n_nodes = n + len(done)
    data = {WW: (ww_src, ww_dst), WR: (wr_src, wr_dst), RW: (rw_src, rw_dst)}
    flat: dict[int, tuple[Any, Any]] = {}
    for kind, (s, d) in data.items():
        flat[kind] = (_cat(np, s), _cat(np, d))
    per_kind = {kind: _distinct(np, s * n_nodes + d) for kind, (s, d) in flat.items()}
    per_kind[PROCESS] = len(p_src)
    per_kind[REALTIME] = len(t_src)
    if not any(per_kind[k] for k in (WW, WR, RW, PROCESS)):
        raise _Doubt  # maybe nothing ordered: the long way says
    src = np.concatenate([*(s for s, _ in flat.values()), p_src, t_src])
    dst = np.concatenate([*(d for _, d in flat.values()), p_dst, t_dst])
    # (a txn's key from halfway between its invoke and completion: more
    # rounds, 10 against 7 on the 100k bench history)
    if not _acyclic(np, src, dst, np.array(inv_index, dtype=np.float64),
                    completions.astype(np.float64)):
        labels = scc_labels(n_nodes, src.astype(np.int32), dst.astype(np.int32))[:n]
        if (np.bincount(labels) > 1).any():
            raise _Doubt
    models = models_report(set(), set())
    lattice = boundary(models)
    stats: dict[str, Any] = {
        "model": model,
        "txns": n,
        "txn_status": dict(Counter(status)),
        "edges": {name: per_kind[bit] for bit, name in KIND_NAMES.items() if per_kind[bit]},
        "cyclic_components": 0,
        "largest_component": 0,
        "anomaly_counts": {},
        "models": models,
        "not": lattice["not"],
        "also_not": lattice["also_not"],
        "possible": lattice["possible"],
        "graph_s": round(time.monotonic() - started, 3),
        "warnings": [],
        "cycle_search_s": 0.0,
    }
    return verdict(models[model]["valid"], [], stats)


def _repeated_txns(np: Any, txns: Any, keys: Any) -> Any:
    """The txns, ascending, that appear with one key more than once in the
    rows (txns[i], keys[i])."""
    if not txns.size:
        return txns
    if 0 <= keys.min() and keys.max() < 2 ** 31:
        pairs = np.sort((txns << 31) | keys)
        return np.unique(pairs[1:][pairs[1:] == pairs[:-1]] >> 31)
    order = np.lexsort((keys, txns))
    t, k = txns[order], keys[order]
    return np.unique(t[1:][(t[1:] == t[:-1]) & (k[1:] == k[:-1])])


def _distinct(np: Any, codes: Any) -> int:
    if not codes.size:
        return 0
    codes = np.sort(codes)
    return int(np.count_nonzero(codes[1:] != codes[:-1])) + 1


def _judge_multi(multi: list[tuple[int, list[Any], int, int]], append_cls: type,
                 status: list[str], r_len: list[int], a_place: list[int],
                 base_of: dict[int, int]) -> set[tuple[int, int]]:
    """The txns touching a key twice: their intermediate appends that were
    read, as (key, place in its order); and for the ok ones, the checks of
    `internal`, of `read_write` (future reads) and of lost updates, from
    places in the orders (every read is its key's order up to its length):
    doubt on any finding."""
    intermediate: set[tuple[int, int]] = set()
    versions: set[tuple[int, int]] = set()   # (key, length read) before an append
    for tid, mops, r, a in multi:
        last: dict[int, int] = {}
        if status[tid] != OK:
            for m in mops:
                if m.__class__ is append_cls:
                    if m.k in last and last[m.k] >= 0:
                        intermediate.add((m.k, last[m.k] - base_of[m.k]))
                    last[m.k] = a_place[a]
                    a += 1
            continue
        known: dict[int, tuple[int, list[int]]] = {}  # key -> length read, own appends since
        unread: dict[int, list[int]] = {}   # key -> own appends before any read of it
        reads: dict[int, list[int]] = {}    # key -> lengths read
        wrote: set[int] = set()
        for m in mops:
            k = m.k
            if m.__class__ is append_cls:
                p = a_place[a]
                a += 1
                if k in last and last[k] >= 0:
                    intermediate.add((k, last[k] - base_of[k]))
                last[k] = p
                if k in known:
                    known[k][1].append(p)
                else:
                    unread.setdefault(k, []).append(p)
                seen = reads.get(k)
                if seen is None:
                    wrote.add(k)
                    continue
                if k not in wrote:
                    wrote.add(k)
                    if (k, seen[0]) in versions:
                        raise _Doubt  # lost update
                    versions.add((k, seen[0]))
                if p >= 0 and any(p - base_of[k] < length for length in seen):
                    raise _Doubt  # future read
                continue
            length = r_len[r]
            r += 1
            reads.setdefault(k, []).append(length)
            start = base_of[k]
            if k in known:
                had, own = known[k]
                if length != had + len(own) or any(
                        q != start + had + i for i, q in enumerate(own)):
                    raise _Doubt  # internal
            else:
                mine = unread.get(k)
                if mine and (length < len(mine) or any(
                        q != start + length - len(mine) + i for i, q in enumerate(mine))):
                    raise _Doubt  # internal
            known[k] = (length, [])
    return intermediate


def _cat(np: Any, parts: list[Any]) -> Any:
    """Arrays and single ints as one int64 array (the ints first)."""
    ints = [p for p in parts if p.__class__ is int]
    arrays = [p for p in parts if p.__class__ is not int]
    return np.concatenate([np.array(ints, dtype=np.int64), *arrays])


def _acyclic(np: Any, src: Any, dst: Any, starts: Any, completions: Any) -> bool:
    """Whether keys increasing along every edge were found (see the module's
    docstring): proof that the graph has no cycle. False: not found."""
    key = np.concatenate([starts, completions])
    back = np.flatnonzero(key[src] >= key[dst])
    for _ in range(ORDER_ROUNDS):
        if not back.size:
            return True
        np.maximum.at(key, dst[back], key[src[back]] + _STEP)
        # Keys only grow: an edge whose source kept its key still holds, so
        # only those from the nodes just pushed can point backwards now.
        moved = np.zeros(len(key), dtype=bool)
        moved[dst[back]] = True
        maybe = np.flatnonzero(moved[src])
        back = maybe[key[src[maybe]] >= key[dst[maybe]]]
    return not back.size
