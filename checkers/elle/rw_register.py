"""The Elle-style checker for rw-register histories: transactions of `[w k v]`
writes and `[r k v]` reads over registers, every value written to a key
unique, a read of nil seeing the key's initial state.

A read names the one write it saw, so wr edges come straight from the
values. The order of a key's versions is not in any read: it is inferred, as
Elle does, from sources that are each safe only under an assumption:

- initial-state (always): nil, the initial state, precedes every other value;
- wfr-keys: within a transaction, writes follow reads, so what a txn read of a
  key precedes what it then wrote to it;
- sequential-keys: each key is sequentially consistent, so along a process's
  txns the last value one txn saw or left precedes the first the next one saw
  or wrote;
- linearizable-keys: each key is linearizable, the same along realtime order.

Each version edge v1 -> v2 of key k gives ww edges from v1's writer to v2's
writer, and rw edges from every txn that read v1 to v2's writer. A source
whose inferences make a key's versions cyclic is not used for that key; the
cycle is reported (cyclic-versions), since no order of the key's versions
fits what the history says. The cycle search and the judgement against
consistency models are list-append's (`checkers.elle.check.judge_graph`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from checkers.acks import as_promised
from checkers.elle.budget import DEFAULT_MEMORY_LIMIT_MB
from checkers.elle.consistency import canonical
from checkers.elle.cycles import CycleSearch, find_cycles
from checkers.elle.explain import describe, txn_ref
from checkers.elle.graph import EdgeLists, edges_with, realtime_edges
from checkers.elle.kinds import RW, WR, WW
from checkers.elle.read_write import read_write_anomalies
from checkers.elle.txns import FAIL, OK, WRITE, Txn, nothing_to_judge_in, transactions
from checkers.history import Op, collector_paused
from checkers.verdict import Verdict, verdict

INITIAL = None   # the initial state's value: what a read of nil saw
SOURCES = ("initial-state", "wfr-keys", "sequential-keys", "linearizable-keys")


@dataclass
class Registers:
    """What each txn did to each key, seen from outside it."""

    # per txn: key -> the value its first read saw, if it read before writing (ok txns)
    ext_reads: list[dict[Any, Any]] = field(default_factory=list)
    # per txn: key -> the last value it wrote
    ext_writes: list[dict[Any, Any]] = field(default_factory=list)
    # (key, value) -> the txn (not failed) whose last write to key it was
    writer: dict[tuple[Any, Any], int] = field(default_factory=dict)
    # (key, value) -> the txn (not failed) that wrote it and then wrote key again
    intermediate: dict[tuple[Any, Any], int] = field(default_factory=dict)
    # (key, value) -> the failed txn that wrote it
    failed: dict[tuple[Any, Any], int] = field(default_factory=dict)
    # (key, value) -> the ok txns whose external read of key saw value
    readers: dict[tuple[Any, Any], list[int]] = field(default_factory=dict)

    def first(self, t: int, k: Any) -> Any:
        """The first version of k txn t interacted with."""
        r = self.ext_reads[t]
        return r[k] if k in r else self.ext_writes[t][k]

    def last(self, t: int, k: Any) -> Any:
        """The last version of k txn t interacted with (what it left)."""
        w = self.ext_writes[t]
        return w[k] if k in w else self.ext_reads[t][k]

    def keys(self, t: int) -> set[Any]:
        return self.ext_reads[t].keys() | self.ext_writes[t].keys()


def check(history: list[Op], run: dict | None = None, *, model: str = "strict-serializable",
          cycle_search_budget_s: float = 30.0, wfr_keys: bool = False,
          sequential_keys: bool = False, linearizable_keys: bool = False,
          memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
          cycle_search: CycleSearch = find_cycles) -> Verdict:
    """Judge an rw-register history against `model`. The three flags turn on
    Elle's extra version-order inference; each assumes something about the
    database (see the module's docstring). A history too big for
    `memory_limit_mb` is unknown, as in `checkers.elle.check`."""
    from checkers.elle.check import judge_graph, memory_refusal

    model = canonical(model)
    refused = memory_refusal(history, model, memory_limit_mb)
    if refused is not None:
        return refused
    with collector_paused():
        started = time.monotonic()
        txns, malformed = transactions(as_promised(history), registers=True)
        empty = nothing_to_judge_in(history, txns)
        if empty is not None:
            return verdict("unknown", list(malformed), {
                "model": model, "txns": len(txns), "reason": empty})
        regs, anomalies = summarize(txns)
        unparsed = bool(malformed) or any(a["type"] == "duplicate-write" for a in anomalies)
        anomalies = (list(malformed) + anomalies + dirty_reads(txns, regs)
                     + read_write_anomalies(txns, WRITE))
        enabled = {"initial-state": True, "wfr-keys": wfr_keys,
                   "sequential-keys": sequential_keys, "linearizable-keys": linearizable_keys}
        versions, used, cyclic = version_orders(txns, regs, [s for s in SOURCES if enabled[s]])
        anomalies += cyclic
        edges = edges_with(txns, lambda e: _data_edges(e, txns, regs, versions))
        v = judge_graph(txns, edges, anomalies, unparsed, model, cycle_search_budget_s, started,
                        cycle_search)
    v["stats"]["version_sources"] = used
    return v


def summarize(txns: list[Txn]) -> tuple[Registers, list[dict[str, Any]]]:
    """Each txn's external reads and writes, who wrote what, and the internal
    anomalies (a read that disagrees with the txn's own earlier read or write
    of the key) and duplicate writes found on the way."""
    regs = Registers()
    anomalies: list[dict[str, Any]] = []
    for t in txns:
        reads: dict[Any, Any] = {}
        writes: dict[Any, Any] = {}
        known: dict[Any, Any] = {}
        for f, k, v in t.mops:
            if f == WRITE:
                if k in writes:
                    (regs.failed if t.status == FAIL else regs.intermediate)[(k, writes[k])] = t.id
                writes[k] = v
                known[k] = v
            elif t.status == OK:
                if k in known:
                    if v != known[k]:
                        anomalies.append(_internal(t, k, v, known[k]))
                else:
                    reads[k] = v
                known[k] = v
        regs.ext_reads.append(reads)
        regs.ext_writes.append(writes)
        for k, v in writes.items():
            if t.status == FAIL:
                regs.failed[(k, v)] = t.id
                continue
            other = regs.writer.setdefault((k, v), t.id)
            if other != t.id:
                anomalies.append(_duplicate(txns[other], t, k, v))
        for k, v in reads.items():
            regs.readers.setdefault((k, v), []).append(t.id)
    return regs, anomalies


def dirty_reads(txns: list[Txn], regs: Registers) -> list[dict[str, Any]]:
    """G1a: a read of a value only a failed txn wrote; G1b: a read of a value
    its writer overwrote within the same txn."""
    out = []
    for (k, v), readers in regs.readers.items():
        if v is INITIAL:
            continue
        if (k, v) in regs.failed and (k, v) not in regs.writer:
            w = txns[regs.failed[(k, v)]]
            kind, why = "G1a", f"written by the failed txn by {describe(w)}"
        elif (k, v) in regs.intermediate:
            w = txns[regs.intermediate[(k, v)]]
            kind, why = "G1b", (f"an intermediate value of the txn by {describe(w)}, which "
                                f"wrote {k!r} again")
        else:
            continue
        for r in readers:
            if r == w.id:
                continue
            out.append({"type": kind, "key": k, "value": v, "reader": txn_ref(txns[r]),
                        "writer": txn_ref(w),
                        "explanation": (f"The txn by {describe(txns[r])} read key {k!r} = "
                                        f"{v!r}, {why}.")})
    return out


# Per key, the version pairs (v1, v2) a source infers: a dict used as an
# ordered set, so that edges (and so the cycles reported) come in the same
# order every run (a set of pairs holding None, the initial state, iterates in
# an order that varies with None's address).
Pairs = dict[Any, dict[tuple[Any, Any], None]]
Inference = Callable[[list[Txn], Registers], Pairs]


def _initial_state(txns: list[Txn], regs: Registers) -> Pairs:
    out: Pairs = {}
    for k, v in list(regs.writer) + list(regs.readers):
        if v is not INITIAL:
            out.setdefault(k, {})[(INITIAL, v)] = None
    return out


def _writes_follow_reads(txns: list[Txn], regs: Registers) -> Pairs:
    out: Pairs = {}
    for t in txns:
        if t.status != OK:
            continue
        writes = regs.ext_writes[t.id]
        for k, v in regs.ext_reads[t.id].items():
            if v is not INITIAL and k in writes and writes[k] != v:
                out.setdefault(k, {})[(v, writes[k])] = None
    return out


def _along(pairs: list[tuple[int, int]], k: Any, regs: Registers,
           out: Pairs) -> None:
    for a, b in pairs:
        v1, v2 = regs.last(a, k), regs.first(b, k)
        if v1 != v2:
            out.setdefault(k, {})[(v1, v2)] = None


def _by_key(txns: list[Txn], regs: Registers) -> dict[Any, list[Txn]]:
    touching: dict[Any, list[Txn]] = {}
    for t in txns:
        if t.status == OK:
            for k in regs.keys(t.id):
                touching.setdefault(k, []).append(t)
    return touching


def _sequential(txns: list[Txn], regs: Registers) -> Pairs:
    out: Pairs = {}
    for k, ts in _by_key(txns, regs).items():
        last: dict[Any, int] = {}
        pairs = []
        for t in ts:  # in invoke order, so in each process's order
            if t.process in last:
                pairs.append((last[t.process], t.id))
            last[t.process] = t.id
        _along(pairs, k, regs, out)
    return out


def _linearizable(txns: list[Txn], regs: Registers) -> Pairs:
    out: Pairs = {}
    for k, ts in _by_key(txns, regs).items():
        rt = EdgeLists()
        realtime_edges(rt, ts)   # realtime order among the txns on k, reduced
        _along(list(zip(rt.src, rt.dst, strict=True)), k, regs, out)
    return out


_NIL = object()


def _node(v: Any) -> Any:
    return _NIL if v is None else v


INFERENCES: dict[str, Inference] = {
    "initial-state": _initial_state, "wfr-keys": _writes_follow_reads,
    "sequential-keys": _sequential, "linearizable-keys": _linearizable,
}


def version_orders(txns: list[Txn], regs: Registers, sources: list[str]
                   ) -> tuple[dict[Any, dict[tuple[Any, Any], str]], list[str],
                              list[dict[str, Any]]]:
    """Each key's version edges (v1, v2) -> the source that inferred it; the
    sources used; and a cyclic-versions anomaly per key where a source's
    inferences made the key's versions cyclic (that source is then not used for
    that key)."""
    versions: dict[Any, dict[tuple[Any, Any], str]] = {}
    anomalies = []
    for name in sources:
        for k, new in INFERENCES[name](txns, regs).items():
            have = versions.setdefault(k, {})
            fresh = [e for e in new if e not in have]
            if not fresh:
                continue
            if name != "initial-state":  # nil before everything cannot close a cycle
                g = nx.DiGraph()   # networkx nodes cannot be None: name nil
                g.add_edges_from((_node(a), _node(b)) for a, b in [*have, *fresh])
                if not nx.is_directed_acyclic_graph(g):
                    cycle = [None if a is _NIL else a for a, _ in nx.find_cycle(g)]
                    anomalies.append({
                        "type": "cyclic-versions", "key": k, "values": cycle,
                        "sources": sorted(set(have.values()) | {name}),
                        "explanation": (f"The versions of key {k!r} are inferred to be "
                                        f"cyclic ({' < '.join(map(repr, cycle))} < "
                                        f"{cycle[0]!r}) by {name} together with "
                                        f"{', '.join(sorted(set(have.values())))}: no order "
                                        f"of its writes fits the history. {name} is not "
                                        f"used for this key."),
                    })
                    continue
            for e in fresh:
                have[e] = name
    return versions, list(sources), anomalies


def _data_edges(g: EdgeLists, txns: list[Txn], regs: Registers,
                versions: dict[Any, dict[tuple[Any, Any], str]]) -> None:
    for (k, v), readers in regs.readers.items():
        w = regs.writer.get((k, v))
        if v is INITIAL or w is None:
            continue
        for r in readers:
            g.add(w, r, WR, {"key": k, "value": v})
    for k, edges in versions.items():
        for (v1, v2), source in edges.items():
            w2 = regs.writer.get((k, v2))
            if w2 is None:
                continue
            evidence = {"key": k, "value": v1, "next": v2, "by": source}
            w1 = regs.writer.get((k, v1))
            if w1 is not None:
                g.add(w1, w2, WW, evidence)
            for r in regs.readers.get((k, v1), ()):
                g.add(r, w2, RW, evidence)


def _internal(t: Txn, k: Any, v: Any, expected: Any) -> dict[str, Any]:
    return {"type": "internal", "key": k, "read": v, "expected": expected, "txn": txn_ref(t),
            "explanation": (f"The txn by {describe(t)} read key {k!r} = {v!r}, but its own "
                            f"earlier read or write left it {expected!r}.")}


def _duplicate(a: Txn, b: Txn, k: Any, v: Any) -> dict[str, Any]:
    return {"type": "duplicate-write", "key": k, "value": v, "txns": [txn_ref(a), txn_ref(b)],
            "explanation": (f"Key {k!r} was set to {v!r} by the txn by {describe(a)} and by "
                            f"the txn by {describe(b)}; values must be unique per key to "
                            f"tell which write a read saw, so this history cannot be "
                            f"judged.")}
