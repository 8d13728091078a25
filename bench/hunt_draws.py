"""How often the hunt's chooser alone draws each move or kind in a run: no
processes, no cluster; nemesis.hunt.decide over a toy clock.

    .venv/bin/python bench/hunt_draws.py [--system raft] [--nodes 3]
        [--time-limit 60] [--runs 300] [--show lose-state,membership:remove-two]
        [--campaign 3] [--round 2]

For seeds 1..runs, plays the hunt's decisions as nemesis.hunter does (the
system's default repertoire here, host faults included where this host can
prepare them, its moves, the aimed prior, the time left, the run's seed as
the spread's ordinal), with each move taking a modelled time instead of
running: a composition its SHORTEST_S plus 1-4 s (its waits for elections),
a primitive the hunter's hold (nemesis.hunt.hold_s: its shortest hold plus
a draw, none for a turn's later variants; at least the system's election
hold where its plan, on a leader drawn at random, takes the leader or a
quorum), its settle and 1 s of inject and heal. Each move reaches one of
three states at random (what it found is what steers later draws). Prints
moves, compositions and kinds per run; for every move, the share of runs
that drew it and the share of consecutive seed triples (1-3, 4-6, ...) of
which at least one did, on average and the least; the share of triples
that reached every kind; and for each move or kind asked, the same two (and
what three independent runs would give, 1 - (1 - p)^3). The model is
calibrated on the switches runs of docs/hunt-nemesis.md (9-15 moves per
60 s run, 3 nodes); it says what the chooser gives, not what a run catches.
`--campaign N`: the runs in campaigns of N, each run told the kinds the
earlier ones reached (as a campaign's corpus tells it, `reached_kinds`);
prints the share of campaigns that drew each move or kind at least once.
`--round K`: K variants a kind's turn (nemesis.hunt.ROUND_VARIANTS; 1: one
move a draw).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from faultline import registry  # noqa: E402
from harness.run.config import hunt_repertoire, node_names  # noqa: E402
from nemesis.base import FAULTS  # noqa: E402
from nemesis.compose import COMPOSITIONS, SHORTEST_S  # noqa: E402
from nemesis.fault import plan_in  # noqa: E402
from nemesis.hunt import (  # noqa: E402
    ROUND_VARIANTS,
    Outcome,
    aimed_prior,
    decide,
    election_hold,
    hold_s,
    kind_of,
    moves_for,
    record,
    takes_leader_or_quorum,
)
from nemesis.hunter import (  # noqa: E402
    AIMED_BOOST,
    DEFAULT_MIN_HOLD_S,
    MIN_MOVE_S,
    SETTLE_S,
    plannable,
)
from nemesis.schedule import HUNT_START_S  # noqa: E402

INTERVAL_S = 5.0          # the default --nemesis-interval
OVERHEAD_S = 1.0          # inject and heal of a primitive, on a loaded machine
COMPOSITION_WAITS_S = (1.0, 4.0)


def play(seed: int, moves: list[str], prior: dict[str, float], time_limit: float,
         reached: frozenset[str] = frozenset(), round_variants: int = ROUND_VARIANTS,
         names: list[str] | None = None, election_s: float | None = None,
         sized: list[str] | None = None) -> list[str]:
    """The moves one run's hunt draws, in order, under the modelled clock;
    `reached`: the kinds a campaign's earlier runs reached; `election_s`: the
    hold of a move that takes the leader or a quorum (its plan drawn on
    `names`, the leader one of them at random); `sized` gets `move@size` for
    each primitive whose plan drew a node-set size (`targets`)."""
    world = random.Random(seed * 7919)
    names = names or ["n1", "n2", "n3"]
    t, end = HUNT_START_S, time_limit
    outcomes: list[Outcome] = []
    while t < end - MIN_MOVE_S:
        try:
            d = decide(seed, len(outcomes), moves, outcomes, prior, reached, round(end - t, 3),
                       SHORTEST_S, MIN_MOVE_S, round_variants)
        except ValueError:
            break
        move = d.move
        if move in COMPOSITIONS:
            t += SHORTEST_S[move] + world.uniform(*COMPOSITION_WAITS_S)
        else:
            plan = plan_in(FAULTS, move, world, names)
            nodes = plan.get("nodes")
            if sized is not None and plan.get("targets"):
                sized.append(f"{move}@{plan['targets']}")
            takes = takes_leader_or_quorum(nodes if isinstance(nodes, list) else None,
                                           world.choice(names), names, plan.get("cut"))
            # a turn's later variants are held the shortest hold (nemesis.hunter)
            hold = hold_s(world, min(DEFAULT_MIN_HOLD_S, INTERVAL_S / 2),
                          0.0 if d.how == "round" else INTERVAL_S,
                          election_s if takes else None)
            t += hold + world.uniform(*SETTLE_S) + OVERHEAD_S
        outcomes.append(record(outcomes, move, (move, world.randrange(3))))
    return [o.move for o in outcomes]


def drew(name: str, played: list[str]) -> bool:
    """`name` (a move, or a kind) among the moves `played`."""
    return name in played or name in {kind_of(m) for m in played}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", default="raft")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--campaign", type=int, default=1,
                   help="runs per campaign (each told the kinds the earlier ones reached)")
    p.add_argument("--show", type=lambda s: s.split(","),
                   default=["lose-state", "membership", "membership:remove-two", "disk",
                            "disk:eio", "reformat", "fast-failover"])
    p.add_argument("--round", type=int, default=ROUND_VARIANTS,
                   help="variants a kind's turn plays (1: each draw one move, as before)")
    a = p.parse_args()
    repertoire = hunt_repertoire(registry.get(a.system), a.nodes)
    moves = [m for m in moves_for(repertoire, {s: FAULTS[s].variants() for s in repertoire
                                               if s in FAULTS})
             if plannable(FAULTS, m, node_names(a.nodes))]
    prior = aimed_prior(moves, COMPOSITIONS, AIMED_BOOST)
    system = registry.get(a.system)
    declared = system.timers(dict(system.node_defaults))
    election_s = election_hold(None if declared.source.startswith("generic")
                               else declared.failover_s)
    runs: list[list[str]] = []
    sizes: list[list[str]] = []
    for first in range(1, a.runs + 1, a.campaign):
        played: list[str] = []
        for seed in range(first, min(first + a.campaign, a.runs + 1)):
            sizes.append([])
            run = play(seed, moves, prior, a.time_limit,
                       frozenset(kind_of(m) for m in played), a.round,
                       node_names(a.nodes), election_s, sizes[-1])
            runs.append(run)
            played += run
    print(f"{a.system}, {a.nodes} nodes, {a.time_limit:g} s: {len(moves)} moves of "
          f"{len({kind_of(m) for m in moves})} kinds; per run "
          f"{sum(map(len, runs)) / len(runs):.1f} moves, "
          f"{sum(sum(m in COMPOSITIONS for m in r) for r in runs) / len(runs):.1f} compositions, "
          f"{sum(len({kind_of(m) for m in r}) for r in runs) / len(runs):.1f} kinds")
    groups = [sum(runs[i:i + a.campaign], []) for i in range(0, len(runs), a.campaign)]
    triples = [runs[i:i + 3] for i in range(0, len(runs) - 2, 3)]
    reach = {m: sum(any(m in r for r in t) for t in triples) / len(triples) for m in moves}
    low = sorted(reach, key=reach.get)[:3]
    per_run = {m: sum(m in r for r in runs) / len(runs) for m in moves}
    print(f"  every move: drawn in {sum(per_run.values()) / len(per_run):.2f} of runs on "
          f"average (least {min(per_run.values()):.2f}); in at least 1 of 3 consecutive "
          f"seeds {sum(reach.values()) / len(reach):.2f} on average, least "
          f"{', '.join(f'{m} {reach[m]:.2f}' for m in low)}; "
          f"{sum(v < 0.5 for v in reach.values())} of {len(reach)} moves under 0.5")
    kinds = {kind_of(m) for m in moves}
    every = sum(kinds <= {kind_of(m) for r in t for m in r} for t in triples) / len(triples)
    missed = [len(kinds - {kind_of(m) for r in t for m in r}) for t in triples]
    print(f"  every kind: reached by 3 consecutive seeds in {every:.2f} of triples "
          f"(kinds none of the three reached: {sum(missed) / len(missed):.2f} a triple, "
          f"at most {max(missed)}); a leader- or quorum-taking fault held at least "
          f"{election_s:g} s")
    for name in a.show:
        share = sum(drew(name, r) for r in runs) / len(runs)
        triples = [runs[i:i + 3] for i in range(0, len(runs) - 2, 3)]
        line = (f"  {name}: drawn in {share:.2f} of runs; in at least 1 of 3 seeds "
                f"(consecutive seeds 1-3, 4-6, ...): "
                f"{sum(any(drew(name, r) for r in t) for t in triples) / len(triples):.2f} "
                f"(independent runs would give {1 - (1 - share) ** 3:.2f})")
        if a.campaign > 1:
            line += (f"; in {sum(drew(name, g) for g in groups) / len(groups):.2f} "
                     f"of campaigns of {a.campaign}")
        print(line)
    # A disk that refuses writes (eio, full) on a quorum: the state a node
    # counting a refused write as written needs (nemesis.diskfault).
    refusing = ("disk", "disk:eio", "disk:full")
    quorum = [any(e.rsplit("@", 1)[0] in refusing and e.endswith(("@majority", "@all"))
                  for e in r) for r in sizes]
    share = sum(quorum) / len(quorum)
    thirds = [any(quorum[i:i + 3]) for i in range(0, len(quorum) - 2, 3)]
    print(f"  a refusing disk (eio, full) on a quorum: in {share:.2f} of runs; in at least "
          f"1 of 3 consecutive seeds {sum(thirds) / len(thirds):.2f} "
          f"(independent runs would give {1 - (1 - share) ** 3:.2f})")


if __name__ == "__main__":
    main()
