"""`hunt`: the adaptive schedule, as a fault armed for the whole run.

While armed, it plays one move at a time (a fault of its repertoire, or a
leader-aware composition), lets the cluster settle, observes what followed
(nemesis.observe: event lines where the system leaves them, the adapter's
leader always) and picks the next move toward states the run has not
reached (nemesis.hunt, pure). Every fault a move runs is fired through the
nemesis runner and recorded as the plain fault it is, the first with a
`note` saying which decision it serves and what was observed before it; the
hunt's heal records every decision with its weights, observation and
signature. A replay plays the recorded faults: the hunt stays silent there.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from checkers.faults import HUNT
from nemesis.compose import (
    COMPOSITIONS,
    SHORTEST_S,
    Control,
    DriverFault,
    Stopped,
    run_composition,
)
from nemesis.fault import FaultContext, FaultKind, plan_in, split_spec
from nemesis.hunt import (
    Outcome,
    aimed_prior,
    coverage,
    decide,
    derive,
    election_hold,
    held_through_election,
    hold_s,
    moves_for,
    observation,
    reached_kinds,
    record,
    signature,
    stays,
    target_role,
)
from nemesis.observe import EventTail

# A move is not begun in the last moments of the hunt: it would be cut short
# (a composition needs its own SHORTEST_S).
MIN_MOVE_S = 2.0
# The quiet time after a move before its outcome is read: short, so a 60 s
# run makes more moves (an election a move brings on happens inside its hold
# where the move takes the leader or a quorum, nemesis.hunt.election_hold;
# the compositions wait for theirs): the state one move leaves (a node
# catching up, a fresh leader) is where the next one lands.
SETTLE_S = (0.2, 0.6)
# A primitive's shortest hold where the run sets none (--nemesis-min-duration).
DEFAULT_MIN_HOLD_S = 0.75
# A turn's later variant is planned again up to this many times (from its
# move's rng) to land on the nodes the turn already hit: two variants of a
# kind that leaves lasting damage (truncate's cut vote-state files) on two
# of three nodes took a majority's state, and the correct build never
# elected again (2026-11-27, 3 nodes, seed 1: availability's
# unexplained-unavailable). A plan drawn again keeps the size the variant's
# own plan drew (nemesis.hunt.stays); a variant that needs more nodes
# (pause:majority after :minority, a disk fault that drew a majority after
# one node) is played as planned.
STAY_TRIES = 8
# The moves aimed at an election's moments are drawn this much more often
# than a fault kind's share: there are eight compositions among twenty fault
# kinds, and the dangerous states are theirs (issue 27: a plain schedule
# brings 2-4 elections a minute).
AIMED_BOOST = 3.0


class HuntFault(DriverFault):
    op = HUNT

    def __init__(self, ctx: FaultContext, kinds: Mapping[str, FaultKind]) -> None:
        if ctx.variant is not None:
            raise ValueError(f"{HUNT.name} takes no variant")
        super().__init__(ctx)
        self.kinds = kinds
        self.decisions: list[dict[str, Any]] = []
        self.outcomes: list[Outcome] = []
        self.moves: list[str] = []
        self.election_s = election_hold(None)

    def summary(self) -> dict[str, Any]:
        error = {"error": self.result["error"]} if "error" in self.result else {}
        return {"moves": self.moves, "decisions": list(self.decisions),
                "coverage": [list(s) for s in coverage(self.outcomes)], **error}

    def drive(self, ctl: Control, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        repertoire = [s for s in params.get("repertoire") or [] if split_spec(s)[0] != HUNT.name]
        self.moves = [m for m in moves_for(repertoire, {
            s: self.kinds[s].variants() for s in repertoire if s in self.kinds})
            if plannable(self.kinds, m, ctl.names)]
        if not self.moves:
            return {}
        interval = float(params.get("interval") or 5.0)
        min_hold = float(params.get("min_duration") or 0.0) or min(DEFAULT_MIN_HOLD_S,
                                                                    interval / 2)
        self.election_s = election_hold(params.get("failover_s"))
        known = [tuple(k) for k in params.get("known") or []]
        ordinal = params.get("ordinal")    # the run's --seed (None: a schedule before it)
        prior = aimed_prior(self.moves, COMPOSITIONS, AIMED_BOOST)
        reached = reached_kinds(known)
        end = time.monotonic() + float(params.get("until") or 0.0)
        index = 0
        turn_nodes: set[str] = set()     # the nodes the turn in progress has hit
        while time.monotonic() < end - MIN_MOVE_S and not ctl.stop.is_set():
            try:
                remaining = round(end - time.monotonic(), 3)
                decision = decide(seed, index, self.moves, self.outcomes, prior, reached,
                                  remaining, SHORTEST_S, MIN_MOVE_S, ordinal=ordinal)
            except ValueError:
                break   # every move failed here, or none fits in what is left
            rng = random.Random(derive(seed, "move", index))
            before = self.snapshot(ctl)
            entry: dict[str, Any] = {"decision": index, "move": decision.move,
                                     "how": decision.how, "remaining_s": remaining,
                                     "weights": decision.weights, "before": before}
            self.decisions.append(entry)
            ctl.note = {"hunt": index, "move": decision.move, "before": before}
            ctl.leaders_seen = [before["leader"]] if before.get("leader") else []
            try:
                if decision.move in COMPOSITIONS:
                    result = run_composition(decision.move, ctl, rng)
                else:
                    if decision.how == "draw":
                        turn_nodes = set()
                    # A turn's later variants are held the shortest hold (their
                    # inject and heal are the moments, nemesis.hunt.hold_s; the
                    # time goes to the next kind) and stay on the turn's nodes
                    # (STAY_TRIES).
                    result = self.primitive(ctl, rng, decision.move, before.get("leader"),
                                            self._instant(decision.move), min_hold,
                                            0.0 if decision.how == "round" else interval,
                                            turn_nodes if decision.how != "draw" else None)
                    turn_nodes |= set(result.get("nodes") or ())
                ctl.sleep(rng.uniform(*SETTLE_S))
            except Stopped:
                entry["stopped"] = True
                break
            after = self.snapshot(ctl)
            obs = observation(before, after, ctl.leaders_seen, result.get("target", "none"))
            sig = signature(decision.move, obs)
            outcome = record(self.outcomes, decision.move, sig, known,
                             failed=bool(result.get("error")))
            self.outcomes.append(outcome)
            entry.update({"result": result, "after": after, "observed": obs,
                          "signature": list(sig), "new": outcome.new})
            index += 1
        return self.summary()

    def _instant(self, spec: str) -> bool:
        kind = self.kinds.get(split_spec(spec)[0])
        return kind is not None and kind.instant

    def snapshot(self, ctl: Control) -> dict[str, Any]:
        events: EventTail | None = ctl.events
        snap: dict[str, Any] = {"t": round(time.monotonic(), 3), "leader": ctl.leader()}
        if events is not None:
            snap.update(events.read().snapshot())
        return snap

    def primitive(self, ctl: Control, rng: random.Random, spec: str, leader: str | None,
                  instant: bool, min_hold: float, interval: float,
                  stay_on: set[str] | None = None) -> dict[str, Any]:
        """One fault of the repertoire, planned as the schedule plans it (on
        the nodes of `stay_on` where a plan of the STAY_TRIES lands there
        with as many nodes as the first drew), held, healed."""
        planned = params = plan_in(self.kinds, spec, rng, ctl.names)
        for _ in range(STAY_TRIES if stay_on else 0):
            if stays(params, planned, stay_on or ()):
                break
            params = plan_in(self.kinds, spec, rng, ctl.names)
        else:
            params = planned    # none stays: the variant's own plan
        value = ctl.act(spec, params, "inject")
        nodes = value.get("nodes") if isinstance(value.get("nodes"), list) else None
        result: dict[str, Any] = {"target": target_role(nodes, leader), "nodes": nodes}
        if value.get("error"):
            result["error"] = value["error"]
        if not instant:
            # Held through the election it starts where it takes the leader or a
            # quorum, or through a restarted node's election timeout.
            takes = held_through_election(value, leader, ctl.names)
            result["hold_s"] = hold_s(rng, min_hold, interval,
                                      self.election_s if takes else None)
            ctl.sleep(result["hold_s"])
            ctl.heal(spec)
        else:
            ctl.in_force.pop(spec, None)
        return result


def plannable(kinds: Mapping[str, FaultKind], move: str, names: list[str]) -> bool:
    """A move whose plan works on these nodes (no majorities ring on 3)."""
    try:
        plan_in(kinds, move, random.Random(0), names)
    except (ValueError, KeyError):
        return False
    return True


def hunt_fault(ctx: FaultContext, kinds: Mapping[str, FaultKind]) -> HuntFault:
    """The hunt over the faults of `kinds` (the registry's, passed in by
    nemesis.base: the registry holds the hunt, so the hunt cannot import it)."""
    return HuntFault(ctx, kinds)
