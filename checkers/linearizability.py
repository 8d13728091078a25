"""Linearizability checking: Wing & Gong's search with Lowe's memoization.

Per partition (key), determinate ops are call/return entries in a doubly
linked list in history order. The search repeatedly linearizes a call that
comes before the first return in the list (i.e. one whose real-time
predecessors are all linearized), steps the model, and backtracks when the
first return is reached with nothing left to try. A configuration is the
linearized set (a Python int bitset) plus the model state; configurations
already explored are cached so each is explored once.

Indeterminate (`info`) ops have their return at +infinity: they never block
anything and the search succeeds once every determinate op is placed. They
are kept out of the linked list and tried only after the determinate
candidates, and three rules keep them from blowing up the search (each
follows from "an info op may also never happen"):

- an info op that does not change the state is never linearized;
- a configuration is pruned if one with the same determinate set and state
  but a subset of the info ops was already seen (dominance);
- right after an info op X, the next op must behave differently than it
  would have without X; otherwise X could be dropped, which dominates.

Two more rules come from what the model can say about a call in advance
(they decide long single-register histories that the plain search cannot):

- greedy: a det call that can never change the state (a read, a failed cas)
  and is legal now is linearized at once, as the only move from there: any
  solution can be reordered to start with it;
- once-produced states: when every call names the state it produces (unique
  written values), a state produced once never comes back, so leaving it while
  a det call that needs it is unplaced is a dead end. A search stuck on this
  names that call (typically a stale read) and the op that had to overwrite.

Each rule is a function of `checkers.lin_rules` with its statement and its
own tests; the loop below calls them where they cut.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from checkers.acks import as_promised
from checkers.history import NEMESIS, Op, collector_paused
from checkers.lin_rules import (
    NONE,
    covered,
    first_return_hopeless,
    info_by_state,
    info_classes,
    read_first,
    sticky_states,
    strands_readers,
    undone_by_last_info,
)
from checkers.models import (
    DET,
    MODELS,
    NO_STATE,
    Call,
    Model,
    ModelError,
    get_model,
)
from checkers.verdict import Validity, Verdict, verdict

__all__ = ["MODELS", "Budget", "KeyResult", "LinOp", "check", "check_ops", "prepare"]

# How often (in search steps) the clock and memory estimate are looked at.
BUDGET_EVERY = 2048
# Bytes per cache entry besides the bitsets: dict slot, key tuple, ints, list.
# Measured: 1.7M entries of a 103k-op register search took 720 MiB of RSS.
ENTRY_OVERHEAD = 340
# Ops of the longest prefix kept in an anomaly; the HTML view needs no more.
PREFIX_KEEP = 60
SKIPPED = "not finished: another key was already found not linearizable"
_BY_INVOKE = attrgetter("invoke_pos")


@dataclass
class Budget:
    """Limits for a whole check: a wall-clock deadline and a memory estimate."""

    deadline: float | None = None          # time.monotonic() value
    memory_limit_bytes: int | None = None

    @classmethod
    def of(cls, time_limit: float | None, memory_limit_mb: int | None) -> Budget:
        return cls(None if time_limit is None else time.monotonic() + time_limit,
                   None if memory_limit_mb is None else memory_limit_mb * 1024 * 1024)


@dataclass(slots=True)
class LinOp:
    """One client operation as the search sees it."""

    id: int
    call: Call
    det: bool
    invoke_pos: int
    return_pos: float               # position in the history; inf for info ops
    invoke: Op
    completion: Op | None

    def summary(self, model: Model) -> dict[str, Any]:
        c = self.completion
        return {"index": self.invoke.index, "process": self.invoke.process,
                "f": self.invoke.f, "value": self.invoke.value,
                "type": c.type if c is not None else "info",
                "result": c.value if c is not None else None,
                "invoke_time": self.invoke.time,
                "complete_time": c.time if c is not None else None,
                "det": self.det, "what": model.describe(self.call)}


@dataclass
class KeyResult:
    key: Hashable
    valid: Validity
    ops: list[LinOp]
    reason: str | None = None
    linearized: list[int] = field(default_factory=list)   # op ids, longest prefix found
    failing: int | None = None                             # op id that cannot be placed
    state: Hashable = None                                 # state before `failing`
    # The op that had to leave `state` for good before `failing` could run.
    overwritten_by: int | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    def concurrent(self) -> list[int]:
        """Ops whose windows overlap the failing op's."""
        if self.failing is None:
            return []
        f = self.ops[self.failing]
        return [o.id for o in self.ops
                if o.id != f.id and o.invoke_pos < f.return_pos and f.invoke_pos < o.return_pos]


def prepare(history: list[Op], model: Model) -> dict[Hashable, list[LinOp]]:
    """Pair invokes with completions and split into the model's partitions.

    Positions in the list are the real-time order (the recorder appends in
    the order things happened). Raises ModelError on an ill-formed history.
    """
    # One slot per invoke, in invoke order: [invoke pos, invoke, completion pos, completion].
    open_ops: dict[Any, list] = {}
    slots: list[list] = []
    invoke = "invoke"
    for pos, op in enumerate(history):
        p = op.process
        if p == NEMESIS:
            continue
        if op.type == invoke:
            if p in open_ops:
                raise ModelError(f"op {op.index}: process {p} invokes while "
                                 f"op {open_ops[p][1].index} is still open")
            slot = [pos, op, None, None]
            open_ops[p] = slot
            slots.append(slot)
            continue
        slot = open_ops.pop(p, None)
        if slot is None:
            raise ModelError(f"op {op.index}: {op.type} by process {p} "
                             "with no open invoke")
        slot[2] = pos
        slot[3] = op

    parts: dict[Hashable, list[LinOp]] = {}
    interpret, partition_key = model.interpret, model.partition_key
    inf = float("inf")
    for ipos, inv, cpos, comp in slots:
        meaning = interpret(inv, comp)
        if meaning is None:
            continue
        call, kind = meaning
        det = kind == DET
        k = partition_key(inv)
        part = parts.get(k)
        if part is None:
            part = parts[k] = []
        part.append(LinOp(len(part), call, det, ipos, cpos if det else inf, inv, comp))
    return parts


def _promote_witnessed(model: Model, det: list[LinOp], info: list[LinOp]
                       ) -> tuple[list[LinOp], list[LinOp]]:
    """Info ops the model knows took effect become determinate ops whose
    return is the first return of an op that saw them. An info op may land
    anywhere after its invoke, so every one still open multiplies the
    configurations; one pinned down this way costs what a completed op costs.
    An op seen before it was even invoked stays info: the search refutes it."""
    witnessed = model.witnessed([o.call for o in det], [o.call for o in info])
    promoted, rest = [], []
    for o, w in zip(info, witnessed, strict=True):
        if w is None:
            rest.append(o)
            continue
        call, seers = w
        deadline = min(det[j].return_pos for j in seers)
        if deadline < o.invoke_pos:
            rest.append(o)
        else:
            promoted.append(replace(o, call=call, return_pos=deadline))
    if not promoted:
        return det, info
    return sorted(det + promoted, key=_BY_INVOKE), rest


class _Job:
    """One partition's search, advanced a slice at a time."""

    def __init__(self, ops: list[LinOp], model: Model, budget: Budget,
                 key: Hashable) -> None:
        self.ops, self.model, self.key = ops, model, key
        self.seconds = 0.0
        det_ops = [o for o in ops if o.det]
        info_all = sorted([o for o in ops if not o.det], key=_BY_INVOKE)
        self.n_info = len(info_all)
        det_ops, info_all = _promote_witnessed(model, det_ops, info_all)
        self.n_witnessed = self.n_info - len(info_all)
        keep = model.relevant_infos([o.call for o in det_ops], [o.call for o in info_all])
        info_ops = [o for o, k in zip(info_all, keep, strict=True) if k]
        self.search = _Search(model, det_ops, info_ops, budget)
        self.slices = self.search.run()
        self.reason: str | None = None
        self.done = False

    def advance(self) -> bool:
        """Run one slice; False once the answer is in (or the budget ran out)."""
        started = time.monotonic()
        try:
            next(self.slices)
        except StopIteration:
            self.done = True
        self.seconds += time.monotonic() - started
        if not self.done:
            self.reason = self.search.budget_problem()
            if self.reason is not None:
                self.stop(self.reason)
        return not self.done

    def stop(self, reason: str) -> None:
        if self.done:
            return
        self.slices.close()
        self.search.valid = "unknown"
        self.reason = reason
        self.done = True

    def result(self) -> KeyResult:
        search = self.search
        valid = search.valid
        stats = {"ops": len(self.ops), "determinate": len(search.det),
                 "indeterminate": self.n_info, "indeterminate_witnessed": self.n_witnessed,
                 "indeterminate_searched": len(search.info),
                 "steps": search.steps, "configurations": search.entries,
                 "memory_estimate_bytes": search.memory,
                 "forced": search.forced, "sticky_pruned": search.sticky_pruned,
                 "max_linearized": search.best_depth, "seconds": round(self.seconds, 6)}
        r = KeyResult(self.key, valid, self.ops, self.reason, stats=stats)
        if valid is not True:
            r.linearized = [o.id for o in search.best_path()]
            r.state = search.best_state
            if search.best_stale is not None:
                r.failing = search.best_stale.id
                r.overwritten_by = search.best_blocker.id
            elif search.best_blocker is not None:
                r.failing = search.best_blocker.id
        return r


def check_ops(ops: list[LinOp], model: Model, budget: Budget | None = None,
              key: Hashable = None) -> KeyResult:
    """Decide whether one partition's ops are linearizable under `model`."""
    job = _Job(ops, model, budget or Budget(), key)
    while job.advance():
        pass
    return job.result()


def entry_list(det: list[LinOp]) -> tuple[list[float], list[int], list[int]]:
    """The det ops' calls and returns as a doubly linked list in history order:
    op i's call is entry 2i, its return 2i+1, and entry 2n a head sentinel.
    Returns each entry's position and the `nxt` and `prv` links (-1 ends)."""
    n = len(det)
    head = 2 * n
    entry_pos = [0.0] * (2 * n)
    entry_pos[0::2] = [o.invoke_pos for o in det]
    entry_pos[1::2] = [o.return_pos for o in det]
    # Ties (a witnessed info op's deadline is its seer's return) keep entry order.
    events = sorted(range(2 * n), key=entry_pos.__getitem__)
    nxt = [0] * (2 * n + 1)
    prv = [0] * (2 * n + 1)
    last = head
    for e in events:
        nxt[last] = e
        prv[e] = last
        last = e
    nxt[last] = -1
    return entry_pos, nxt, prv


def readers_of(need: list[Hashable]) -> tuple[dict[Hashable, int], dict[Hashable, list[int]]]:
    """For rule 2: how many det calls need each once-produced state, and which."""
    pending: dict[Hashable, int] = {}
    readers: dict[Hashable, list[int]] = {}
    for j, s in enumerate(need):
        if s is not NONE:
            pending[s] = pending.get(s, 0) + 1
            readers.setdefault(s, []).append(j)
    return pending, readers


class _Search:
    """The iterative WGL search over one partition. Frames form a linked
    stack (kind, index, previous state, first-return position, parent), so
    remembering the deepest point costs one reference."""

    def __init__(self, model: Model, det: list[LinOp], info: list[LinOp],
                 budget: Budget) -> None:
        self.model = model
        self.det = det
        self.info = info
        self.budget = budget
        self.steps = 0
        self.entries = 0
        self.best_depth = 0
        self.best_frame: tuple | None = None
        self.best_state: Hashable = model.init()
        self.best_blocker: LinOp | None = None
        self.best_stale: LinOp | None = None
        self._readers_of: dict[Hashable, list[int]] = {}   # det calls needing a sticky state
        self._calls: list[Call] = []
        self._det_resets: list[bool] | None = None    # model.resets of each call, for _hopeless
        self._info_resets: list[bool] = []
        self.memory = 0
        self.forced = 0           # det calls placed by the greedy rule
        self.sticky_pruned = 0    # moves cut because they left a state for good too early
        self.valid: Validity = "unknown"

    def run(self) -> Iterator[None]:
        """The search as a generator: it yields every BUDGET_EVERY steps so a
        driver can check the budget and interleave partitions, and leaves its
        answer in `self.valid`."""
        model, det, info = self.model, self.det, self.info
        step = model.step
        n = len(det)
        if n == 0:
            self.valid = True
            return
        head = 2 * n
        entry_pos, nxt, prv = entry_list(det)
        calls, info_calls = model.canonical([o.call for o in det], [o.call for o in info])
        members, cls = info_classes(info_calls)                      # rule 5
        used = [0] * len(members)
        anywhere, by_state = info_by_state(model, info_calls, members)  # rule 6
        candidates_of: dict[Hashable, list[int]] = {}
        info_pos = [o.invoke_pos for o in info]
        info_bits = [1 << i for i in range(len(info))]
        n_info = len(info)
        dead_end = model.dead_end if type(model).dead_end is not Model.dead_end else None
        # Rule 1 (reads first) needs to know which calls never change the state.
        mutates, raw_need, produces = model.facts(calls)
        greedy = not all(mutates)
        # For those, the one state they are legal in, if there is one: the
        # scan then compares instead of stepping the model.
        legal_in = [NO_STATE if m else s for s, m in zip(raw_need, mutates, strict=True)]
        # Rule 2: states that never come back once left, and how many det calls
        # that need each are still to be placed.
        sticky = sticky_states(model.init(), produces + model.facts(info_calls)[2])
        need = [s if s is not NO_STATE and s in sticky else NONE for s in raw_need]
        pending, self._readers_of = readers_of(need)
        self._calls = calls
        self._record_best(0, None, model.init(), nxt, head, 0, 0)

        # The set of linearized det ops is kept as (low, win): ops below `low`
        # are all in it, op `low` is not, and `win` holds the ops from `low`
        # on, bit 0 for `low`. The search linearizes roughly in call order, so
        # `win` stays as narrow as the concurrency while a plain bitset would
        # grow to the history's length, and every key hashed and kept with it.
        # (low, win, state) -> info sets seen there, for configs reached by a
        # det op; `chained` the same keyed also by the state before an info op.
        cache: dict[tuple[int, int, Hashable], list[int]] = {}
        chained: dict[tuple[int, int, Hashable, Hashable], list[int]] = {}
        state = model.init()
        low = 0
        win = 0
        iset = 0
        depth = 0
        # Frames: (kind, index, state before, first return, parent, chain_prev,
        # info candidate position); kind 0 a det op, 1 an info op, 2 a det op
        # forced by the greedy rule.
        top: tuple | None = None      # the frame that reached the current config
        chain_prev: Any = NONE       # state before the last op, if that op was info
        entry = nxt[head]
        mode = _NEW
        scanned = False
        i = 0
        ns: Hashable = None
        kind = 0
        ip = 0
        first_ret = 0.0
        steps = 0
        budget_at = BUDGET_EVERY
        info_bytes = n_info // 8
        memory = 0

        # The rules as locals: the loop calls them at every config.
        _read_first = read_first(nxt, mutates, legal_in, step, calls)
        _covered, _strands, _undone = covered, strands_readers, undone_by_last_info
        while True:
            steps += 1
            if steps >= budget_at:
                budget_at += BUDGET_EVERY
                self.steps, self.entries = steps, len(cache) + len(chained)
                self.memory = memory
                if depth > self.best_depth:
                    self._record_best(depth, top, state, nxt, head, low, win)
                yield
            if mode == _NEW:
                entry = nxt[head]
                scanned = False
                mode = _DET
                if greedy and chain_prev is NONE:
                    first = _read_first(entry, state)
                    if first is not None:                                  # rule 1
                        i, ns = first
                        kind, mode = 2, _PUSH
                        self.forced += 1
                    scanned = True
            if mode == _DET:
                if entry & 1 == 0:
                    i = entry >> 1
                    if scanned and not mutates[i]:
                        entry = nxt[entry]     # the scan found it illegal here
                        continue
                    call = calls[i]
                    ok, ns = step(state, call)
                    if ok and ns != state and state in pending and _strands(
                            pending, state, need[i]):                      # rule 2
                        ok = False
                        self.sticky_pruned += 1
                    if ok and (chain_prev is NONE
                               or not _undone(step, chain_prev, call, (ok, ns))):
                        kind, mode = 0, _PUSH                              # rule 3
                    else:
                        entry = nxt[entry]
                        continue
                else:
                    # The first return: nothing after it may go first. Try info ops.
                    mode = _INFO
                    ip = 0
                    first_ret = entry_pos[entry]
            if mode == _PUSH:
                nwin = win | 1 << (i - low)
                nlow = low
                if nwin & 1:
                    ones = (~nwin & (nwin + 1)).bit_length() - 1
                    nwin >>= ones
                    nlow += ones
                ck = (nlow, nwin, ns)
                seen = cache.get(ck)
                if seen is None:
                    cache[ck] = [iset]
                    memory += ENTRY_OVERHEAD + info_bytes + (nwin.bit_length() >> 3)
                    fresh = True
                elif _covered(seen, iset):                                  # rule 4
                    fresh = False
                else:
                    seen.append(iset)
                    memory += info_bytes + 8
                    fresh = True
                if not fresh:
                    if kind == 2:
                        mode = _BACK           # the one move from here is known dead
                    else:
                        mode = _DET
                        entry = nxt[entry]
                        continue
                else:
                    top = (kind, i, state, 0.0, top, chain_prev, 0)
                    # Lift the op out of the list (dancing links).
                    c, r = 2 * i, 2 * i + 1
                    nxt[prv[c]] = nxt[c]
                    prv[nxt[c]] = prv[c]
                    nxt[prv[r]] = nxt[r]
                    if nxt[r] >= 0:
                        prv[nxt[r]] = prv[r]
                    state, low, win = ns, nlow, nwin
                    s = need[i]
                    if s is not NONE:
                        pending[s] -= 1
                    depth += 1
                    chain_prev = NONE
                    if depth == n:
                        self.steps, self.entries = steps, len(cache) + len(chained)
                        self.memory = memory
                        self.best_depth = n
                        self.valid = True
                        return
                    mode = _NEW
                    if dead_end is not None and self._hopeless(
                            state, nxt, head, entry_pos, iset):
                        mode = _INFO
                        ip = _NO_MORE
                        first_ret = 0.0
                    else:
                        continue
            if mode == _INFO:
                # Info ops invoked before the first return.
                pushed = False
                if by_state and state in by_state:
                    cands = candidates_of.get(state)
                    if cands is None:
                        cands = candidates_of[state] = sorted(anywhere + by_state[state])
                else:
                    cands = anywhere
                while ip < len(cands):
                    k = cands[ip]
                    mem = members[k]
                    u = used[k]
                    if u < len(mem) and info_pos[mem[u]] < first_ret:
                        j = mem[u]
                        b = info_bits[j]
                        call = info_calls[j]
                        ok, ns = step(state, call)
                        # An info op that changes nothing is never placed; nor
                        # one undone by the last (rule 3) or leaving a state
                        # its readers still need (rule 2).
                        if ok and ns != state and (chain_prev is NONE or not (
                                _undone(step, chain_prev, call, (ok, ns)))) and (
                                not pending.get(state)):
                            ni = iset | b
                            # Rule 4. A config reached by an info op is restricted by
                            # the chain rule, so only an unrestricted config, or one
                            # restricted the same way, can stand in for it.
                            seen = cache.get((low, win, ns))
                            fresh = seen is None or not _covered(seen, ni)
                            if fresh:
                                ck = (low, win, ns, state)
                                seen = chained.get(ck)
                                if seen is None:
                                    chained[ck] = [ni]
                                    memory += (ENTRY_OVERHEAD + info_bytes
                                               + (win.bit_length() >> 3))
                                elif _covered(seen, ni):
                                    fresh = False
                                else:
                                    seen.append(ni)
                                    memory += info_bytes + 8
                            if fresh:
                                top = (1, j, state, first_ret, top, chain_prev, ip)
                                used[k] += 1
                                chain_prev = state
                                state, iset = ns, ni
                                mode = _NEW
                                pushed = True
                                break
                    ip += 1
                if pushed:
                    continue
            # Dead end: backtrack. The deepest config is only needed for a
            # counterexample, so it is remembered here rather than at every push.
            if depth > self.best_depth:
                self._record_best(depth, top, state, nxt, head, low, win)
            if top is None:
                self.steps, self.entries = steps, len(cache) + len(chained)
                self.memory = memory
                self.valid = False
                return
            kind, idx, state, first_ret, parent, chain_prev, ip = top
            top = parent
            if kind != 1:
                c, r = 2 * idx, 2 * idx + 1
                if nxt[r] >= 0:
                    prv[nxt[r]] = r
                nxt[prv[r]] = r
                prv[nxt[c]] = c
                nxt[prv[c]] = c
                if idx > low:
                    win ^= 1 << (idx - low)
                else:
                    # Ops idx+1 .. low-1 stay linearized; idx no longer is.
                    gap = low - idx
                    win = win << gap | ((1 << gap) - 2)
                    low = idx
                s = need[idx]
                if s is not NONE:
                    pending[s] += 1
                depth -= 1
                if kind == 2:
                    mode = _BACK   # the forced move was the only one from there
                else:
                    mode = _DET
                    scanned = greedy and chain_prev is NONE
                    entry = nxt[c]
            else:
                iset ^= info_bits[idx]
                used[cls[idx]] -= 1
                mode = _INFO
                ip += 1

    def _record_best(self, depth: int, top: tuple | None, state: Hashable, nxt: list[int],
                     head: int, low: int, win: int) -> None:
        self.best_depth = depth
        self.best_frame = top
        self.best_state = state
        e = nxt[head]
        while e >= 0 and e & 1 == 0:
            e = nxt[e]
        self.best_blocker = self.det[e >> 1] if e >= 0 else None
        self.best_stale = None
        # Stuck because the op that must go next would leave a state for good
        # while a call that needs it is still unplaced: that call (typically a
        # stale read, maybe far later) is the one no order can explain.
        readers = self._readers_of.get(state)
        if readers and self.best_blocker is not None:
            ok, ns = self.model.step(state, self._calls[e >> 1])
            if ok and ns != state:
                # The blocker may need that state itself (a cas from it): it
                # is not stale, it is what replaces the state.
                for i in readers:
                    if i != e >> 1 and i >= low and not win >> (i - low) & 1:
                        self.best_stale = self.det[i]
                        break

    def _hopeless(self, state: Hashable, nxt: list[int], head: int,
                  entry_pos: list[float], iset: int) -> bool:
        """Whether the op that must go next-before-anything-later (the first
        return) can no longer become legal, given which ops could run first."""
        model, det = self.model, self.det
        if self._det_resets is None:
            self._det_resets = [model.resets(o.call) for o in det]
            self._info_resets = [model.resets(o.call) for o in self.info]
        det_resets, info_resets = self._det_resets, self._info_resets
        e = nxt[head]
        resets = False
        while e & 1 == 0:
            if det_resets[e >> 1]:
                resets = True
            e = nxt[e]
        first_ret = entry_pos[e]
        if not resets:
            for j, o in enumerate(self.info):
                if o.invoke_pos >= first_ret:
                    break
                if info_resets[j] and not iset >> j & 1:
                    resets = True
                    break
        return first_return_hopeless(model, state, det[e >> 1].call, resets)  # rule 7

    def budget_problem(self) -> str | None:
        b, n = self.budget, len(self.det)
        if b.deadline is not None and time.monotonic() > b.deadline:
            return (f"time limit reached after {self.steps} steps ({self.entries} "
                    f"configurations; at most {self.best_depth} of {n} determinate ops "
                    "linearized)")
        if b.memory_limit_bytes is not None and self.memory > b.memory_limit_bytes:
            return (f"memory limit reached: about {self.memory >> 20} MiB in {self.entries} "
                    f"configurations after {self.steps} steps (at most {self.best_depth} "
                    f"of {n} determinate ops linearized)")
        return None

    def best_path(self) -> list[LinOp]:
        out = []
        f = self.best_frame
        while f is not None:
            out.append(self.info[f[1]] if f[0] == 1 else self.det[f[1]])
            f = f[4]
        out.reverse()
        return out


# Search modes: a config just entered, trying det calls, placing the chosen
# det call, trying info calls, backtracking.
_NEW, _DET, _PUSH, _INFO, _BACK = range(5)
_NO_MORE = 1 << 62   # an info candidate position past any list


def check(history: list[Op], run: dict | None = None, *, model: str = "cas-register",
          time_limit: float | None = 60.0, memory_limit_mb: int | None = 2048,
          stop_on_first_failure: bool = False,
          model_options: dict[str, Any] | None = None) -> Verdict:
    """Is `history` linearizable under the named model (with `model_options`,
    e.g. {"initial": 0})? Partitions (keys) are checked one by one within one
    shared budget. `run` is accepted for the checker contract; nothing in it
    changes the answer."""
    with collector_paused():
        # A write acknowledged below quorum promised nothing: it may or may not be in.
        return _check(as_promised(history), model, time_limit, memory_limit_mb,
                      stop_on_first_failure, model_options)


def _check(history: list[Op], model: str, time_limit: float | None,
           memory_limit_mb: int | None, stop_on_first_failure: bool,
           model_options: dict[str, Any] | None) -> Verdict:
    try:
        m = get_model(model, model_options)
        parts = prepare(history, m)
    except ModelError as e:
        return verdict("unknown", [{"type": "ill-formed-history", "reason": str(e)}],
                       {"model": model, "reason": f"ill-formed history: {e}"})
    budget = Budget.of(time_limit, memory_limit_mb)
    keys = sorted(parts, key=_key_order)
    jobs = [_Job(parts[k], m, budget, k) for k in keys]
    # Partitions take turns, a slice each, so one hard key cannot starve an
    # easy failing one (Porcupine runs them as goroutines for the same reason).
    active = list(jobs)
    failed = False
    while active and not (failed and stop_on_first_failure):
        still = []
        for job in active:
            if job.advance():
                still.append(job)
            elif job.search.valid is False:
                failed = True
                if stop_on_first_failure:
                    break
        active = still
        if budget.memory_limit_bytes is not None:
            _shed_memory(active, budget.memory_limit_bytes)
    for job in jobs:
        if not job.done:
            job.stop(SKIPPED)
    results = [j.result() for j in jobs]
    return to_verdict(results, m, len(parts))


def _shed_memory(active: list[_Job], limit: int) -> None:
    """Give up on the biggest searches while all live ones together exceed the limit."""
    total = sum(j.search.memory for j in active)
    for job in sorted(active, key=lambda j: -j.search.memory):
        if total <= limit:
            break
        total -= job.search.memory
        job.stop(f"memory limit reached: about {job.search.memory >> 20} MiB in "
                 f"{job.search.entries} configurations after {job.search.steps} steps")
        active.remove(job)


def _key_order(k: Hashable) -> tuple[str, str]:
    return (type(k).__name__, repr(k))


def to_verdict(results: list[KeyResult], model: Model, n_keys: int) -> Verdict:
    """One verdict for all partitions: invalid if any key is, else unknown if any is."""
    anomalies = []
    for r in results:
        if r.valid is False:
            anomalies.append(counterexample(r, model))
        elif r.valid == "unknown" and r.reason != SKIPPED:
            anomalies.append({"type": "search-incomplete", "key": r.key,
                              "reason": r.reason, "stats": r.stats})
    validities = [r.valid for r in results]
    valid: Validity = (False if False in validities
                       else "unknown" if "unknown" in validities else True)
    checked = sum(1 for r in results if r.reason != SKIPPED)
    stats = {"model": model.name, "keys": n_keys, "keys_checked": checked,
             "per_key": [{"key": r.key, "valid": r.valid, **r.stats} for r in results]}
    if valid == "unknown":
        undecided = [r for r in results if r.valid == "unknown"]
        stats["reason"] = (f"search incomplete for {len(undecided)} of {len(results)} key(s): "
                           f"{undecided[0].reason}")
    return verdict(valid, anomalies, stats)


def counterexample(r: KeyResult, model: Model) -> dict[str, Any]:
    """The failing key's longest linearizable prefix and the op that cannot be
    placed after it, with the ops concurrent with that op."""
    prefix = [r.ops[i] for i in r.linearized]
    concurrent = r.concurrent()
    out: dict[str, Any] = {
        "type": "nonlinearizable", "key": r.key, "model": model.name,
        "linearized_count": len(prefix),
        "linearized": [o.summary(model) for o in prefix[-PREFIX_KEEP:]],
        "state": r.state,
        "op": r.ops[r.failing].summary(model) if r.failing is not None else None,
        "concurrent": [r.ops[i].summary(model) for i in concurrent],
    }
    if r.overwritten_by is not None:
        out["overwritten_by"] = r.ops[r.overwritten_by].summary(model)
        out["why"] = (f"the state {r.state!r} this op needs is produced only once, and "
                      f"{out['overwritten_by']['what']} (history index "
                      f"{out['overwritten_by']['index']}) had to replace it first")
    return out
