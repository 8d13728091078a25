"""The hunting schedule's judgement, pure: what state a move reached (its
coverage signature) and which move to try next.

A move is a fault spec the run may use (`kill`, `kill:leader`, `partition`,
a composition such as `flip-flop`, a trigger). After each, the hunter
(nemesis.hunter) observes what followed: who led before and after, how many
elections, whether the nodes ended at different epochs or far apart in
their logs, whether a node truncated its log. The signature is that outcome,
coarsened: (move, role of its target, elections 0/1/2+, leader changed,
epochs apart, logs apart, truncated), None where the system leaves no event
lines to say. `decide` prefers moves that have found new signatures for the
tries they took, and tries every move early (every kind before any kind
again) (a fuzzer's energy, in the
spirit of Mallory's feedback on states reached, without its learning: each
choice is a draw from weights that are a function of the seed, the decision
number and the outcomes observed so far, so the recorded outcomes explain
every choice and a replay needs none of this: it plays the recorded faults).
A kind is drawn as a whole and its turn plays up to ROUND_VARIANTS of its
variants not tried yet, one after the other; which kinds come first in a run
and which variant a turn starts with move by fixed steps from one seed to the
next (`kind_step`, VARIANT_STEP), so a few consecutive seeds reach more of
them together than as many independent draws.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# An untried move outweighs any tried one: each gets its turn early.
UNTRIED_WEIGHT = 2.0
# A kind none of whose moves was tried yet (nor, in a campaign, reached by an
# earlier run) outweighs the tried kinds again by this much: in a 60 s run of
# some ten moves among twenty kinds, the rare kinds (membership, a system's
# state-loss faults) would otherwise wait behind the compositions' repeats, and a bug
# that needs one is never met (docs/hunt-nemesis.md: two switches missed in
# every run because their kind was never drawn).
UNREACHED_KIND_BOOST = 8.0
# A move that keeps finding nothing new still gets drawn now and then.
FLOOR_WEIGHT = 0.05
# A move that errored is drawn again at the next decision (the draw stands:
# an error may say only what the cluster was at that moment, as a fault aimed
# at a leader and a follower that finds no leader right after a majority was
# down), and after this many errors is never drawn again. In 3 seeds of 60 s
# the one draw of a system's own fault came 1 s after kill:majority's heal, errored,
# was dropped, and the switch that needs it went uncaught; kept as an untried
# move instead, it was not drawn again in the 5 decisions left
# (docs/hunt-nemesis.md, 2026-11-27). Three tries span 1-4 s of settles.
FAILURES_TO_DROP = 3
# Logs this many entries apart (high watermarks) count as apart.
LAG_ENTRIES = 50
# A kind is drawn as a whole (its weight the sum of its moves'), and its turn
# plays up to this many of its variants not yet tried, one after the other:
# drawn one by one, a variant among some fifty moves came in ~1/50 draws
# (membership:remove-two in 0.08 of 60 s runs, disk:eio in 0.04;
# docs/hunt-nemesis.md), so a bug that needs one was met in no three runs.
# More per turn costs other kinds their turn in a short run: on the model of
# bench/hunt_draws.py (the bundled store, 3 nodes, 60 s, host faults in, 600
# seeds, at least 1 of seeds 1-3, 4-6, ...), 2 per turn reach remove-two in
# 0.38 (0.23 with 1, 0.48 with 3), disk:eio 0.26 (0.13, 0.30), a system's
# state-loss fault 0.78 (0.85, 0.70), 4.7 compositions a run (5.2, 4.3).
ROUND_VARIANTS = 2
# Consecutive seeds' draws spread over [0, 1) (seed * step, mod 1; the
# kinds' each their own, `kind_step`, away from the variants' so where a kind
# comes in a run says nothing of which variant its turn starts with): a few
# runs together reach more kinds and variants than as many independent
# draws, which leave some late in every run.
VARIANT_STEP = (5 ** 0.5 - 1) / 2   # the golden ratio's: three seeds start a
                                    # five-variant kind at 0, 3 and 1 (+ offset)

Signature = tuple[Any, ...]


@dataclass(frozen=True)
class Outcome:
    move: str
    signature: Signature
    new: bool
    failed: bool = False    # the fault could not act (an error): it tried nothing


@dataclass(frozen=True)
class Decision:
    index: int
    move: str
    weights: dict[str, float]
    # How the move was chosen: "draw" (its kind drawn, then its first untried
    # variant in turn, else a draw among the kind's moves), "round" (the next
    # untried variant of the kind whose turn this is), "retry" (it errored).
    how: str = "draw"


def derive(seed: int, *parts: Any) -> int:
    """A 64-bit seed from the run's and a path of parts (stable across Pythons)."""
    text = ":".join(str(p) for p in (seed, *parts)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def moves_for(repertoire: Sequence[str], variants: Mapping[str, Sequence[str]]
              ) -> list[str]:
    """The moves of a repertoire: each spec, and for a plain spec, each of its
    named variants (`kill:leader`, `partition:one-way`; templates such as
    `<D>ms` are left to the fault's default), so a variant a bug needs is
    drawn as surely as the kind."""
    out: list[str] = []
    for spec in repertoire:
        out.append(spec)
        if ":" not in spec:
            out.extend(f"{spec}:{v}" for v in variants.get(spec, ()) if "<" not in v)
    return list(dict.fromkeys(out))


def kind_of(move: str) -> str:
    """`kill` of `kill:leader`."""
    return move.split(":", 1)[0]


def shares(moves: Sequence[str]) -> dict[str, float]:
    """Pure: each kind's moves share one kind's weight (a kind with six
    variants is not drawn seven times as often as one without)."""
    kinds: dict[str, int] = {}
    for m in moves:
        kinds[kind_of(m)] = kinds.get(kind_of(m), 0) + 1
    return {m: 1.0 / kinds[kind_of(m)] for m in moves}


def weights(moves: Sequence[str], outcomes: Sequence[Outcome],
            prior: Mapping[str, float] | None = None,
            reached_kinds: Iterable[str] = ()) -> dict[str, float]:
    """Pure: each move's weight, from its tries and how many found something
    new, times its `prior` (default 1), times UNREACHED_KIND_BOOST while no
    move of its kind was tried (here, or in `reached_kinds`: a campaign's).
    A try that errored is no try (the move keeps its turn, its kind its
    boost); FAILURES_TO_DROP errors and the move weighs 0."""
    prior = prior or {}
    tries = dict.fromkeys(moves, 0)
    finds = dict.fromkeys(moves, 0)
    failures = dict.fromkeys(moves, 0)
    acted = [o for o in outcomes if not o.failed]
    tried_kinds = {kind_of(o.move) for o in acted} | set(reached_kinds)
    for o in outcomes:
        if o.move not in tries:
            continue
        if o.failed:
            failures[o.move] += 1
        else:
            tries[o.move] += 1
            finds[o.move] += o.new
    return {m: 0.0 if failures[m] >= FAILURES_TO_DROP else round(prior.get(m, 1.0) * (
                UNTRIED_WEIGHT if tries[m] == 0
                else max(FLOOR_WEIGHT, (1 + finds[m]) / (1 + tries[m]) - 0.5 * (finds[m] == 0)))
                * (1.0 if kind_of(m) in tried_kinds else UNREACHED_KIND_BOOST), 4)
            for m in moves}


def reached_kinds(known: Iterable[Sequence[Any]]) -> set[str]:
    """Pure: the kinds whose moves reached the `known` signatures (a
    campaign's corpus), so a later run gives its first turns to the others."""
    return {kind_of(str(k[0])) for k in known if k}


def fitting(w: Mapping[str, float], remaining: float | None,
            shortest: Mapping[str, float], default_s: float) -> dict[str, float]:
    """Pure: the weights with every move that needs more than `remaining`
    seconds (its `shortest`, else `default_s`) set to 0: a move cut short by
    the run's end reaches nothing its own (a minority out 6 s of its 10 is an
    outage any excuse covers), and the time goes to one that fits. None:
    no end in sight, nothing dropped."""
    if remaining is None:
        return dict(w)
    return {m: v if shortest.get(m, default_s) <= remaining else 0.0 for m, v in w.items()}


def steps(ordinal: int, step: float) -> float:
    """Pure: ordinal * step, mod 1 (the ordinal taken mod 2**32 first: a float
    keeps 53 bits, and a 64-bit seed times a step has no fraction left)."""
    return ((ordinal % 2 ** 32) * step) % 1.0


def variant_order(seed: int, kind: str, moves: Sequence[str]) -> list[str]:
    """Pure: the moves of `kind`, in the order its turns play them: as listed,
    rotated to start at the fraction (seed * VARIANT_STEP + the kind's own
    offset) of the list, so consecutive seeds start it at different places."""
    members = [m for m in moves if kind_of(m) == kind]
    if not members:
        return []
    offset = derive(0, "variants", kind) / 2.0 ** 64
    start = int((steps(seed, VARIANT_STEP) + offset) % 1.0 * len(members))
    return members[start:] + members[:start]


def tries_of(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Pure: how often each move acted (an error is no try)."""
    out: dict[str, int] = {}
    for o in outcomes:
        if not o.failed:
            out[o.move] = out.get(o.move, 0) + 1
    return out


def round_length(outcomes: Sequence[Outcome]) -> int:
    """Pure: how many moves of the last move's kind ended the run so far
    without one of another kind between (the turn in progress; errors count
    not: a retry is the same variant)."""
    if not outcomes:
        return 0
    kind = kind_of(outcomes[-1].move)
    n = 0
    for o in reversed(outcomes):
        if kind_of(o.move) != kind:
            break
        n += not o.failed
    return n


def next_untried(seed: int, kind: str, moves: Sequence[str], outcomes: Sequence[Outcome],
                 w: Mapping[str, float]) -> str | None:
    """Pure: the first variant of `kind`, in `variant_order`, that has not
    acted yet and may be drawn now (weight > 0: it fits, it is not dropped)."""
    tried = tries_of(outcomes)
    return next((m for m in variant_order(seed, kind, moves)
                 if not tried.get(m) and w.get(m, 0.0) > 0.0), None)


def untried_kinds(moves: Sequence[str], outcomes: Sequence[Outcome],
                  reached: Iterable[str] = ()) -> set[str]:
    """Pure: the kinds none of whose moves acted yet (nor, in a campaign, in
    `reached`)."""
    done = {kind_of(o.move) for o in outcomes if not o.failed} | set(reached)
    return {kind_of(m) for m in moves} - done


def within(planned: Mapping[str, Any], hit: Iterable[str]) -> bool:
    """Pure: a plan whose nodes are all among those `hit` (a plan that names
    none is within)."""
    nodes = planned.get("nodes")
    return not isinstance(nodes, list) or set(nodes) <= set(hit)


def kind_weights(moves: Sequence[str], w: Mapping[str, float]) -> dict[str, float]:
    """Pure: each kind's weight, the sum of its moves' (so a kind is drawn as
    often as when its moves were drawn one by one)."""
    out: dict[str, float] = {}
    for m in moves:
        out[kind_of(m)] = out.get(kind_of(m), 0.0) + w[m]
    return out


def spread_key(seed: int, kind: str, weight: float) -> float:
    """Pure: `kind`'s key for its first turn, u ** (1 / weight) with u =
    seed * `kind_step` plus the kind's own offset: the untried kinds come in
    the order of their keys, a weighted draw without replacement (Efraimidis
    and Spirakis), so each is drawn as often as by weight over many seeds;
    but u moves by `kind_step` from one seed to the next, so consecutive
    seeds put a kind early in one run if late in another."""
    u = (steps(seed, kind_step(kind)) + derive(0, "first-turn", kind) / 2.0 ** 64) % 1.0
    return max(u, 1e-12) ** (1.0 / weight)


def kind_step(kind: str) -> float:
    """Pure: how far `kind`'s u moves from one seed to the next: a step of
    its own in [0.28, 0.36] or [0.64, 0.72] (three consecutive seeds spread
    over the circle, no gap over 0.44; away from VARIANT_STEP and its mirror),
    so the kinds' u's are not locked together (one step for all would keep
    their order from seed to seed, and the draw would no longer follow the
    weights)."""
    h = derive(0, "kind-step", kind) / 2.0 ** 64
    step = 0.28 + 0.16 * h
    return step if step <= 0.36 else step + 0.28


def pick(items: Sequence[str], item_weights: Sequence[float], u: float) -> str:
    """Pure: the item whose share of the total weight holds `u` (in [0, 1))."""
    total = sum(item_weights)
    acc = 0.0
    for item, wt in zip(items, item_weights, strict=True):
        acc += wt
        if u * total < acc:
            return item
    return items[-1]


def decide(seed: int, index: int, moves: Sequence[str], outcomes: Sequence[Outcome],
           prior: Mapping[str, float] | None = None,
           reached: Iterable[str] = (), remaining: float | None = None,
           shortest: Mapping[str, float] | None = None, default_s: float = 0.0,
           round_variants: int = ROUND_VARIANTS, ordinal: int | None = None) -> Decision:
    """Pure: the move of decision `index`. In order: the move of the last
    decision again if it errored and may still be drawn (FAILURES_TO_DROP);
    the next untried variant of the last move's kind while that kind's turn
    has played fewer than `round_variants`; else a kind drawn by its moves'
    `weights` (those that fit in the `remaining` seconds only) with an rng
    that depends on nothing but the seed and the index, and of it the first
    untried variant (`next_untried`), or, all tried, a draw by their weights.
    The kinds' first turns and the variants' order step with `ordinal` (the
    run's --seed; default `seed`), the draws' rng with `seed`."""
    spread = seed if ordinal is None else ordinal
    if not moves:
        raise ValueError("no moves to choose from")
    w = fitting(weights(moves, outcomes, prior, reached), remaining, shortest or {}, default_s)
    if not any(w.values()):
        raise ValueError("every move failed or none fits in the time left")
    if outcomes and outcomes[-1].failed and w.get(outcomes[-1].move):
        return Decision(index, outcomes[-1].move, w, "retry")  # its draw stands
    if outcomes and 0 < round_length(outcomes) < round_variants:
        more = next_untried(spread, kind_of(outcomes[-1].move), moves, outcomes, w)
        if more is not None:
            return Decision(index, more, w, "round")
    rng = random.Random(derive(seed, "decide", index))
    kw = kind_weights(moves, w)
    fresh = untried_kinds(moves, outcomes, reached)
    kinds = [k for k in kw if kw[k] > 0.0]
    firsts = [k for k in kinds if k in fresh]
    u = rng.random() * sum(kw[k] for k in kinds)
    if u < sum(kw[k] for k in firsts):
        kind = max(firsts, key=lambda k: spread_key(spread, k, kw[k]))
    else:
        kind = pick([k for k in kinds if k not in fresh],
                    [kw[k] for k in kinds if k not in fresh], rng.random())
    move = next_untried(spread, kind, moves, outcomes, w)
    if move is None:
        members = [m for m in moves if kind_of(m) == kind and w[m] > 0.0]
        move = rng.choices(members, [w[m] for m in members])[0]
    return Decision(index, move, w)


def aimed_prior(moves: Sequence[str], aimed: Iterable[str], boost: float) -> dict[str, float]:
    """Pure: each move's share of its kind (`shares`), times `boost` for the
    moves aimed at the leader's moments (the compositions, the variants that
    name the leader)."""
    aimed = set(aimed)
    share = shares(moves)
    return {m: round(share[m] * (boost if m in aimed or m.split(":", 1)[-1].endswith("leader")
                                 and ":" in m else 1.0), 4) for m in moves}


def target_role(nodes: Iterable[str] | None, leader: str | None) -> str:
    nodes = list(nodes or [])
    if not nodes:
        return "none"
    return "leader" if leader is not None and leader in nodes else "follower"


def observation(before: Mapping[str, Any], after: Mapping[str, Any],
                leaders_seen: Sequence[str], target: str) -> dict[str, Any]:
    """Pure: what a move did, from snapshots taken before it and after its
    settling time (`leader` from the adapter; the rest from event lines, when
    there are any) and the leaders polls saw while it ran."""
    events = "leader_elections" in before and "leader_elections" in after
    changes = sum(1 for a, b in zip(leaders_seen, leaders_seen[1:], strict=False) if a != b)
    obs: dict[str, Any] = {
        "target": target,
        "leader_before": before.get("leader"), "leader_after": after.get("leader"),
        "leader_changed": before.get("leader") != after.get("leader"),
        "leader_elections": (after["leader_elections"] - before["leader_elections"]
                             if events else changes),
    }
    if events:
        epochs = set((after.get("epochs") or {}).values())
        hw = list((after.get("hw") or {}).values())
        obs["epochs_apart"] = len(epochs) > 1
        obs["logs_apart"] = bool(hw) and max(hw) - min(hw) > LAG_ENTRIES
        obs["truncated"] = after["truncations"] > before["truncations"]
    return obs


def signature(move: str, obs: Mapping[str, Any]) -> Signature:
    """Pure: the coarse state a move reached, the unit of coverage."""
    elections = obs.get("leader_elections") or 0
    return (move, obs.get("target"), min(elections, 2), bool(obs.get("leader_changed")),
            obs.get("epochs_apart"), obs.get("logs_apart"), obs.get("truncated"))


def record(outcomes: Sequence[Outcome], move: str, sig: Signature,
           known: Iterable[Signature] = (), failed: bool = False) -> Outcome:
    """Pure: the outcome of a move, new if no earlier one (nor `known`, a
    campaign's corpus) reached its signature."""
    seen = {o.signature for o in outcomes} | {tuple(k) for k in known}
    return Outcome(move, sig, sig not in seen, failed)


def coverage(outcomes: Sequence[Outcome]) -> list[Signature]:
    """The distinct signatures reached, in the order first reached."""
    return list(dict.fromkeys(o.signature for o in outcomes))
