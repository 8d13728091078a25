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
tries they took, and gives every kind its turn before any kind again, in a
rotation entered where the run's seed says (a fuzzer's energy, in the
spirit of Mallory's feedback on states reached, without its learning: each
choice is a draw from weights that are a function of the seed, the decision
number and the outcomes observed so far, so the recorded outcomes explain
every choice and a replay needs none of this: it plays the recorded faults).
A kind is drawn as a whole and its turn plays up to ROUND_VARIANTS of its
variants not tried yet, one after the other; where a run enters the kinds'
rotation and which variant a turn starts with move by fixed steps from one
seed to the next (ROTATION_STEP, VARIANT_STEP), so three consecutive seeds
reach every kind between them where a run reaches a third of them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# An untried move outweighs any tried one: each gets its turn early.
UNTRIED_WEIGHT = 2.0
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
# Consecutive seeds' variant orders spread over [0, 1) (seed * step, mod 1):
# a few runs together reach more variants than as many independent draws.
VARIANT_STEP = (5 ** 0.5 - 1) / 2   # the golden ratio's: three seeds start a
                                    # five-variant kind at 0, 3 and 1 (+ offset)
# Where consecutive seeds enter the kinds' rotation (`rotation`): three
# ordinals in a row sit 0.34, 0.34 and 0.32 of the cycle apart (any three in a
# row: the gaps depend on the step only), so a run that plays 0.34 of the
# kinds leaves none to its two neighbours; not 1/3 exactly, which would repeat
# every third seed; away from VARIANT_STEP (0.618, or 0.382 mirrored), so
# where a kind comes in a run says little of which variant its turn starts with.
ROTATION_STEP = 0.34

# A fault that takes the leader or a quorum away is held at least this share
# of the system's own failover bound (run.json `timers`, from the adapter:
# noticing the loss plus three election rounds, 3.75 s for the bundled store,
# 6.1 s for etcd; three quarters is about the notice and two rounds), so the
# election it starts happens inside it: held 1-3.5 s, a state loss's leader
# came back 1.86 s after it went, before any vote was cast, and a bridge held
# 1.23 s ended before its election (2026-11-27, docs/hunt.md). Not the whole
# bound: on the chooser's model (bench/hunt_draws.py, 3 nodes, 60 s) holding
# the whole 3.75 s leaves three consecutive seeds reaching every kind in 0.67
# of triples, three quarters of it in 0.90. Bounded, so a system with slow
# timers still plays some moves a minute; a system that declares no timers
# gets the default.
ELECTION_HOLD_SHARE = 0.75
ELECTION_HOLD_S = (2.0, 6.0)
ELECTION_HOLD_DEFAULT_S = 3.0
# Any other primitive is held its min_hold plus an exponential draw of mean
# interval / HOLD_SHARE, at most interval / HOLD_CAP_SHARE: most bugs show at
# the inject or the heal, not in the middle of a long hold (the long holds
# are minority-out's and catch-up's, which hold on purpose); short, so a 60 s
# run plays more moves (at mean interval / 4, a run reached ~10 of 27 kinds).
HOLD_SHARE = 8.0
HOLD_CAP_SHARE = 4.0

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


def election_hold(failover_s: float | None) -> float:
    """Pure: how long a fault that takes the leader or a quorum away is held
    at least: ELECTION_HOLD_SHARE of the system's failover bound, within
    ELECTION_HOLD_S; None (the system declares no timers):
    ELECTION_HOLD_DEFAULT_S."""
    if not failover_s or failover_s <= 0:
        return ELECTION_HOLD_DEFAULT_S
    low, high = ELECTION_HOLD_S
    return round(min(max(ELECTION_HOLD_SHARE * failover_s, low), high), 3)


def takes_leader_or_quorum(nodes: Iterable[str] | None, leader: str | None,
                           names: Sequence[str],
                           cut: Iterable[Sequence[str]] | None = None) -> bool:
    """Pure: a fault on `nodes` may take the leader (it is among them, or a
    link of the partition's `cut` pairs is one of its: a node cut from its
    leader starts an election, as a bridge's sides do) or a quorum (they are
    a majority of `names`) away."""
    hit = set(nodes or ())
    severed = leader is not None and any(leader in pair for pair in cut or ())
    return (leader is not None and leader in hit) or severed or len(hit) >= len(names) // 2 + 1


def held_through_election(value: Mapping[str, Any], leader: str | None,
                          names: Sequence[str]) -> bool:
    """Pure: a primitive whose inject answered `value` is held through an
    election: it may take the leader or a quorum away
    (`takes_leader_or_quorum`), or it restarted nodes (`value["restarted"]`
    names them: e.g. a node restarted under another identity, or re-joined
    after a removal). A restarted node may say nothing before its own
    election timeout has run out (it waits for a leader that already
    announced itself), so a shorter hold heals it before it spoke: one held
    1.1 s was silent all along (2026-11-27, 3 nodes; docs/hunt-nemesis.md,
    "The two switches never caught on c2fe7e7")."""
    nodes = value.get("nodes") if isinstance(value.get("nodes"), list) else None
    restarted = value.get("restarted")
    return bool(restarted) or takes_leader_or_quorum(nodes, leader, names, value.get("cut"))


def hold_s(rng: random.Random, min_hold: float, interval: float, election_s: float | None
           ) -> float:
    """Pure: how long a primitive is held: `min_hold` plus an exponential draw
    of mean interval / HOLD_SHARE, at most interval / HOLD_CAP_SHARE (none for
    interval 0, a turn's later variant); at least `election_s` where given
    (the fault takes the leader or a quorum: `election_hold`). The draw is
    made either way, so the rng's later numbers do not depend on the plan."""
    extra = min(rng.expovariate(HOLD_SHARE / interval), interval / HOLD_CAP_SHARE) \
        if interval else 0.0
    return round(max(min_hold + extra, election_s or 0.0), 3)


def weights(moves: Sequence[str], outcomes: Sequence[Outcome],
            prior: Mapping[str, float] | None = None) -> dict[str, float]:
    """Pure: each move's weight, from its tries and how many found something
    new, times its `prior` (default 1). A try that errored is no try (the
    move keeps its turn); FAILURES_TO_DROP errors and the move weighs 0.
    (The kinds not tried yet need no weight of their own: `decide` gives
    them their turns first, in `rotation`.)"""
    prior = prior or {}
    tries = dict.fromkeys(moves, 0)
    finds = dict.fromkeys(moves, 0)
    failures = dict.fromkeys(moves, 0)
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
                else max(FLOOR_WEIGHT, (1 + finds[m]) / (1 + tries[m]) - 0.5 * (finds[m] == 0))),
                4)
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


def stays(candidate: Mapping[str, Any], planned: Mapping[str, Any], hit: Iterable[str]
          ) -> bool:
    """Pure: a plan drawn again for a turn's later variant that may be played
    in place of the variant's own `planned` one: `within` the nodes the turn
    hit, and as many nodes as `planned` names. Staying picks which nodes,
    never how many: kept only within, a fault whose plan draws its size (the
    disk faults, plain kill) was drawn again until its size fit the turn's
    first nodes (2026-11-27, seed 3: `disk` on one node, then `disk:eio`
    redrawn until it too took one node; the quorum its size draw gives half
    the time never came)."""
    size = len(planned["nodes"]) if isinstance(planned.get("nodes"), list) else None
    nodes = candidate.get("nodes")
    return within(candidate, hit) and (size is None or isinstance(nodes, list)
                                       and len(nodes) == size)


def kind_weights(moves: Sequence[str], w: Mapping[str, float]) -> dict[str, float]:
    """Pure: each kind's weight, the sum of its moves' (so a kind is drawn as
    often as when its moves were drawn one by one)."""
    out: dict[str, float] = {}
    for m in moves:
        out[kind_of(m)] = out.get(kind_of(m), 0.0) + w[m]
    return out


def rotation(kinds: Iterable[str], ordinal: int) -> list[str]:
    """Pure: the order in which a run gives `kinds` their first turns: one
    cycle for every run (the kinds sorted by a hash of their names, so it
    follows no registry order and no seed), entered at the fraction
    (ordinal * ROTATION_STEP, mod 1) of it. A run that plays a third of the
    cycle and its two neighbours (ordinals one apart) start a third of it
    apart, so three consecutive seeds cover every kind between them, where
    draws by weight left the rare kinds late in every run (2026-11-27: a
    triple of seeds reached one of them in 0.69 of triples, 10 of 27 kinds a
    run)."""
    cycle = sorted(set(kinds), key=lambda k: (derive(0, "rotation", k), k))
    if not cycle:
        return []
    start = int(steps(ordinal, ROTATION_STEP) * len(cycle))
    return cycle[start:] + cycle[:start]


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
    has played fewer than `round_variants`; else the next kind in `rotation`
    none of whose moves acted yet (here, or in `reached`) and that fits in
    the `remaining` seconds; else, every kind tried, a kind drawn by its
    moves' `weights` (those that fit) with an rng that depends on nothing but
    the seed and the index; and of the kind the first untried variant
    (`next_untried`), or, all tried, a draw by their weights. The rotation
    and the variants' order step with `ordinal` (the run's --seed; default
    `seed`), the draws' rng with `seed`."""
    spread = seed if ordinal is None else ordinal
    if not moves:
        raise ValueError("no moves to choose from")
    w = fitting(weights(moves, outcomes, prior), remaining, shortest or {}, default_s)
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
    firsts = [k for k in rotation(kw, spread) if k in fresh and kw[k] > 0.0]
    if firsts:
        kind = firsts[0]    # every kind that fits has its turn before any again
    else:
        kind = pick(kinds, [kw[k] for k in kinds], rng.random())
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
