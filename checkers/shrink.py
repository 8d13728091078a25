"""Shrinking an invalid history: the smallest history we can find that the
same checker still calls invalid for the same reason.

Pure: a history and a judge (ops -> verdict) in, a smaller history out. The
unit of removal is an op group, a client op's invoke with its completion (a
completion alone is removed with its invoke, never apart). Two passes:

1. The anomaly's window. Drop the keys (and with them the processes) the
   anomaly does not involve, then keep only what it names: for a
   linearizability counterexample, the op that cannot be placed, the ops the
   search placed before it, the op that overwrote its state, and every op
   overlapping one of those; for an Elle cycle, the cycle's txns and, for each
   key they touch, the txns that fix its version order (the reads of it).
   Each cut is kept only if the judge still finds the anomaly.
2. Delta debugging (Zeller's ddmin) over the groups left, each candidate
   re-judged, within a budget of judge calls.

"The same reason": the verdict is invalid and names an anomaly of the
original's kind (for a linearizability anomaly, on the same key).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from checkers.history import NEMESIS, Op
from checkers.models import Model
from checkers.verdict import Verdict

Judge = Callable[[list[Op]], Verdict]
# Per group, the groups one of which must stay while it stays: the writers of
# the value it read. Without them a smaller history would fail for another
# reason (a read of a value nothing wrote).
Provenance = dict[int, frozenset[int]]
Progress = Callable[[str], None]
# Judge calls the delta-debugging pass may make (each is one check).
DEFAULT_MAX_CHECKS = 2000
# Anomaly types that say the checker could not finish, not what is wrong.
INCONCLUSIVE = frozenset({"search-incomplete", "cycle-search-timeout", "cycle-exists",
                          "ill-formed-history", "malformed-txn"})


class ShrinkRefused(ValueError):
    """One sentence: why this history cannot be shrunk."""


@dataclass(frozen=True)
class Target:
    """What the shrunk history must still show: an anomaly of this type (on this key)."""

    kind: str
    key: Hashable = None
    keyed: bool = False      # whether the key must match (linearizability's anomalies)
    # The conclusive anomaly kinds the original shows: a smaller history
    # showing a kind beyond these fails for another reason too.
    allowed: frozenset[str] = frozenset()
    # A linearizability counterexample's op that cannot be placed (its
    # invoke's index in the original history): the smaller one must fail at
    # the same op, not at another that lost what it read from.
    op: int | None = None
    # An Elle cycle's txns (their invokes' indices in the original): the
    # smaller history must show a cycle of the kind through one of these
    # (Elle reports one cycle a component, not always the same one).
    cycle: frozenset[int] = frozenset()

    def text(self) -> str:
        return f"{self.kind}" + (f" on key {self.key!r}" if self.keyed else "")


@dataclass
class Shrunk:
    ops: list[Op]                     # the small history, re-indexed from 0
    origin: list[int]                 # its ops' indices in the original history
    verdict: Verdict                  # the judge's verdict on `ops`
    target: Target
    ops_before: int                   # client ops (invoke + completion groups) before
    ops_after: int
    events_before: int                # history events (every op, nemesis's too)
    events_after: int
    checks: int                       # judge calls made
    steps: list[str] = field(default_factory=list)   # what each pass kept, in order
    budget_hit: bool = False          # ddmin stopped at its budget: maybe not minimal

    @property
    def ratio(self) -> float:
        return self.ops_after / self.ops_before if self.ops_before else 1.0


def target_of(verdict: Verdict) -> Target:
    """The anomaly a shrink keeps: the verdict's first conclusive one."""
    if verdict.get("valid") is not False:
        word = {True: "valid", "unknown": "unknown"}.get(verdict.get("valid"), "not invalid")
        reason = (verdict.get("stats") or {}).get("reason")
        raise ShrinkRefused(f"the history is {word}" + (f" ({reason})" if reason else "")
                            + ": there is no anomaly to keep while shrinking")
    kinds = _kinds(verdict)
    for a in verdict.get("anomalies") or ():
        if a.get("type") not in INCONCLUSIVE:
            keyed = a.get("type") == "nonlinearizable"
            op = (a.get("op") or {}).get("index") if keyed else None
            return Target(str(a["type"]), _hashable(a.get("key")) if keyed else None, keyed,
                          kinds, op if isinstance(op, int) else None, _cycle_of(a))
    raise ShrinkRefused("the verdict is invalid but names no anomaly a smaller history "
                        "could be checked for")


def shows(verdict: Verdict, target: Target, origin: list[int] | None = None) -> bool:
    """Pure: the verdict is invalid with an anomaly of the target's kind (and
    key, and failing op: `origin` maps the judged history's indices to the
    original's), and with no conclusive kind the original did not show."""
    if verdict.get("valid") is not False:
        return False
    if target.allowed and not _kinds(verdict) <= target.allowed:
        return False
    return any(a.get("type") == target.kind
               and (not target.keyed or _hashable(a.get("key")) == target.key)
               and _same_op(a, target, origin)
               for a in verdict.get("anomalies") or ())


def _cycle_of(anomaly: dict[str, Any]) -> frozenset[int]:
    return frozenset(t["invoke"] for t in anomaly.get("cycle") or ()
                     if isinstance(t, dict) and isinstance(t.get("invoke"), int))


def _same_op(anomaly: dict[str, Any], target: Target, origin: list[int] | None) -> bool:
    def at(i: int) -> int:
        return origin[i] if origin is not None and 0 <= i < len(origin) else i
    if target.cycle:
        cycle = _cycle_of(anomaly)
        return bool({at(i) for i in cycle} & target.cycle)
    if target.op is None:
        return True
    i = (anomaly.get("op") or {}).get("index")
    if not isinstance(i, int):
        return False
    return at(i) == target.op


def _kinds(verdict: Verdict) -> frozenset[str]:
    return frozenset(str(a.get("type")) for a in verdict.get("anomalies") or ()
                     if a.get("type") not in INCONCLUSIVE)


def _hashable(x: Any) -> Hashable:
    if isinstance(x, list):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    return x


def groups(ops: list[Op]) -> list[list[int]]:
    """Pure: positions of each client op's invoke and completion, in invoke
    order (a completion with no open invoke is a group on its own)."""
    out: list[list[int]] = []
    open_: dict[Any, list[int]] = {}
    for i, op in enumerate(ops):
        if op.process == NEMESIS:
            continue
        if op.type == "invoke":
            g = [i]
            open_[op.process] = g
            out.append(g)
        else:
            if op.process not in open_:
                out.append([i])
            else:
                open_.pop(op.process).append(i)
    return out


def renumbered(ops: Iterable[Op]) -> list[Op]:
    """The ops with indices 0, 1, ... (a history file's reader requires them)."""
    return [replace(op, index=i) for i, op in enumerate(ops)]


class _Search:
    """The original history, the judge, and the count of judge calls."""

    def __init__(self, ops: list[Op], judge: Judge, target: Target, progress: Progress,
                 provenance: Provenance):
        self.provenance = provenance
        self.ops = ops
        self.judge = judge
        self.target = target
        self.progress = progress
        self.checks = 0
        self.groups = groups(ops)

    def history(self, kept: Iterable[int]) -> list[Op]:
        """The client ops of the kept groups, in history order, original indices."""
        return [self.ops[p] for p in sorted(p for g in kept for p in self.groups[g])]

    def holds(self, kept: list[int]) -> bool:
        if not kept or not closed(kept, self.provenance):
            return False
        history = self.history(kept)
        self.checks += 1
        return shows(self.judge(renumbered(history)), self.target,
                     [op.index for op in history])


def shrink(ops: list[Op], judge: Judge, verdict: Verdict | None = None, *,
           provenance: Callable[[list[Op], list[list[int]]], Provenance] | None = None,
           max_checks: int = DEFAULT_MAX_CHECKS,
           progress: Progress | None = None) -> Shrunk:
    """The smallest history found that `judge` still calls invalid for the
    reason it calls `ops` invalid. `verdict`: the judge's verdict on `ops`
    (judged here if not given). `provenance`: what each op group needs kept
    with it (`lin_provenance`). Raises ShrinkRefused for a history that is
    not invalid."""
    say = progress or (lambda s: None)
    if verdict is None:
        verdict = judge(ops)
    target = target_of(verdict)
    gs = groups(ops)
    s = _Search(ops, judge, target, say, provenance(ops, gs) if provenance else {})
    kept = list(range(len(s.groups)))
    if not s.groups:
        raise ShrinkRefused("the history has no client ops to shrink")
    steps = []
    anomaly = next(a for a in verdict["anomalies"] if a.get("type") == target.kind
                   and (not target.keyed or _hashable(a.get("key")) == target.key))
    for name, cut in window_cuts(ops, s.groups, anomaly, target):
        cut = closure(cut, s.provenance)
        candidate = [g for g in kept if g in cut]
        if len(candidate) < len(kept) and s.holds(candidate):
            steps.append(f"{name}: {len(kept)} -> {len(candidate)} ops")
            say(steps[-1])
            kept = candidate
        else:
            say(f"{name}: not kept (the anomaly needs more)")
    before_dd = len(kept)
    kept, hit = ddmin(kept, s.holds, max_checks, say)
    steps.append(f"delta debugging: {before_dd} -> {len(kept)} ops"
                 + (" (budget reached)" if hit else ""))
    history = s.history(kept)
    final = judge(renumbered(history))
    s.checks += 1
    # Only a judge that is not deterministic can change its mind here.
    if not shows(final, target, [op.index for op in history]):
        raise ShrinkRefused("the judge's verdict on the shrunk history changed between two "
                            "checks of it: the checker is not deterministic here")
    return Shrunk(renumbered(history), [op.index for op in history], final, target,
                  len(s.groups), len(kept), len(ops), len(history), s.checks, steps, hit)


def closed(kept: Iterable[int], provenance: Provenance) -> bool:
    """Pure: every kept group that needs a writer keeps one."""
    have = set(kept)
    return all(provenance[g] & have for g in have if g in provenance)


def closure(kept: set[int], provenance: Provenance) -> set[int]:
    """Pure: `kept` with every writer a kept group may need."""
    out, todo = set(kept), list(kept)
    while todo:
        for w in provenance.get(todo.pop(), ()):
            if w not in out:
                out.add(w)
                todo.append(w)
    return out


def lin_provenance(model: Model) -> Callable[[list[Op], list[list[int]]], Provenance]:
    """For a linearizability model: each op group that needs one state (a
    read of v, a cas from v, taken or maybe taken) needs one of the groups
    producing v on its key, when any does and v is not the initial state."""
    from checkers.models import NO_STATE, ModelError

    def provenance(ops: list[Op], gs: list[list[int]]) -> Provenance:
        needs, producers = {}, defaultdict(set)
        for n, g in enumerate(gs):
            inv = ops[g[0]]
            done = ops[g[1]] if len(g) > 1 else None
            if inv.type != "invoke":
                continue
            try:
                it = model.interpret(inv, done)
            except ModelError:
                continue
            if it is None:
                continue
            part = _hashable(model.partition_key(inv))
            need, made = model.needs(it[0]), model.produces(it[0])
            if need is NO_STATE:
                # a cas that may have happened: if it did, from this state
                need = model.changes_from(it[0])
            if need is not NO_STATE and need != model.init():
                needs[n] = (part, _hashable(need))
            try:
                producers[(part, _hashable(made))].add(n)
            except TypeError:
                continue
        return {n: frozenset(producers[k] - {n}) for n, k in needs.items()
                if producers.get(k, set()) - {n}}
    return provenance


def window_cuts(ops: list[Op], gs: list[list[int]], anomaly: dict[str, Any],
                target: Target) -> list[tuple[str, set[int]]]:
    """Pure: the cuts pass 1 tries, in order, each the set of groups it keeps."""
    by_index = {ops[g[0]].index: n for n, g in enumerate(gs)}
    cuts = []
    key_of = [_group_keys(ops, g) for g in gs]
    if target.keyed:
        cuts.append((f"key {target.key!r} only",
                     {n for n, ks in enumerate(key_of) if target.key in ks}))
    named = {by_index[i] for i in named_indices(anomaly) if i in by_index}
    if not named:
        return cuts
    if anomaly.get("cycle") is not None:
        keys = set().union(*(key_of[n] for n in named))
        longest: dict[Hashable, tuple[int, int]] = {}
        readers = set()
        for n, g in enumerate(gs):
            for k, length in _reads(ops[g[-1]]).items():
                if k in keys:
                    readers.add(n)
                    if length > longest.get(k, (-1, -1))[0]:
                        longest[k] = (length, n)
        fixers = {n for _, n in longest.values()}
        span = [_span(gs[n]) for n in named]
        cuts.append(("the cycle's txns and the longest read of each of their keys",
                     named | fixers))
        cuts.append(("the cycle's txns, the longest reads and the txns they overlap",
                     named | fixers | {n for n, g in enumerate(gs)
                                       if any(_overlaps(_span(g), s) for s in span)}))
        cuts.append(("the cycle's txns and the reads ordering their keys",
                     named | readers))
        cuts.append(("the txns touching the cycle's keys",
                     {n for n, ks in enumerate(key_of) if ks & keys}))
    else:
        span = [_span(gs[n]) for n in named]
        cuts.append(("the counterexample's ops and those they overlap",
                     {n for n, g in enumerate(gs)
                      if n in named or any(_overlaps(_span(g), s) for s in span)}))
        last = max(e for _, e in span)
        cuts.append(("the ops invoked before the counterexample's last one returned",
                     {n for n, g in enumerate(gs) if g[0] <= last}))
    return cuts


def named_indices(anomaly: dict[str, Any]) -> set[int]:
    """Pure: the history indices an anomaly names: a linearizability
    counterexample's op, placed prefix, overwriter and concurrent ops (their
    invokes); an Elle cycle's txns (their invokes)."""
    out: set[int] = set()
    for field_ in ("op", "overwritten_by"):
        if isinstance(anomaly.get(field_), dict) and isinstance(anomaly[field_].get("index"), int):
            out.add(anomaly[field_]["index"])
    for field_ in ("linearized", "concurrent"):
        for o in anomaly.get(field_) or ():
            if isinstance(o, dict) and isinstance(o.get("index"), int):
                out.add(o["index"])
    for t in anomaly.get("cycle") or ():
        if isinstance(t, dict) and isinstance(t.get("invoke"), int):
            out.add(t["invoke"])
    return out


def _span(g: list[int]) -> tuple[int, float]:
    return g[0], (g[-1] if len(g) > 1 else float("inf"))


def _overlaps(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _mops(op: Op) -> list[Any]:
    v = op.value
    return v if isinstance(v, list) and all(isinstance(m, list) and len(m) >= 2 for m in v) \
        else []


def _group_keys(ops: list[Op], g: list[int]) -> set[Hashable]:
    """The keys a group acts on: its op's key, or its txn's micro-ops' keys."""
    keys: set[Hashable] = set()
    for p in g:
        op = ops[p]
        if op.key is not None:
            keys.add(_hashable(op.key))
        keys.update(_hashable(m[1]) for m in _mops(op))
    return keys or {None}


def _reads(completion: Op) -> dict[Hashable, int]:
    """Keys an ok txn read (a read micro-op with a value), with how many
    versions the read saw (a list's length; 1 for a register's value)."""
    if completion.type != "ok":
        return {}
    out: dict[Hashable, int] = {}
    for m in _mops(completion):
        if m[0] in ("r", "read") and len(m) > 2 and m[2] is not None:
            n = len(m[2]) if isinstance(m[2], list) else 1
            k = _hashable(m[1])
            out[k] = max(out.get(k, 0), n)
    return out


def ddmin(items: list[int], holds: Callable[[list[int]], bool], max_checks: int,
          say: Progress, unit: str = "ops") -> tuple[list[int], bool]:
    """Zeller's ddmin: a 1-minimal sublist of `items` on which `holds` is true
    (it is on `items`), within `max_checks` calls; and whether the budget ran out."""
    checks = 0
    n = 2
    while len(items) >= 2:
        size = len(items) / n
        chunks = [items[round(i * size):round((i + 1) * size)] for i in range(n)]
        reduced = False
        for i in range(len(chunks)):
            if checks >= max_checks:
                return items, True
            complement = [x for j, c in enumerate(chunks) if j != i for x in c]
            checks += 1
            if holds(complement):
                items, n, reduced = complement, max(n - 1, 2), True
                say(f"delta debugging: {len(items)} {unit} left ({checks} candidates tried)")
                break
        if reduced:
            continue
        if n >= len(items):
            break
        n = min(len(items), n * 2)
    return items, False
