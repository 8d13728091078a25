"""The raft store offers the compositions `stale-quorum` and `lagging-voters`
its own power cut as their ending (nodes.abilities.PowerCutOnAck on RaftDB:
`power-cut-after-commit:all`, armed before the heal, cutting at one of the
first acks after it), and a seed plays them on raft exactly as it did when
nemesis/compose.py named that fault itself.

data/composition_steps_697f300.json holds, for seeds 0-11 on 3 and 5 fake
nodes, the steps each fired and its result, recorded from main at 697f300
(before the ending moved behind the ability) on the same fakes and in the
same form as `steps` below, its Control then taking no ending (compose.py
named raft's) and its holds shortened rather than skipped (a hold's draw is
the same either way); 13 of the 48 end on the power cut."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

from nemesis.base import FAULTS, TRIGGER_FAULTS
from nemesis.compose import Control, PowerCutEnding, power_cut_ending, run_composition
from nemesis.fault import split_spec
from nodes.raft.db import RaftDB
from tests.nemesis.test_hunt import QuorumCluster, QuorumRunner

RECORDED = Path(__file__).parent / "data" / "composition_steps_697f300.json"


class NoWaits(Control):
    """Holds take their draws from the seed and no time: only what fires counts."""

    def sleep(self, seconds: float) -> None:
        pass


def steps(composition: str, n: int, seed: int, ending: PowerCutEnding) -> dict[str, Any]:
    """What `composition` fires on `n` fake nodes with `seed`, and its result,
    as the recorded file has them (JSON: tuples are lists)."""
    cluster = QuorumCluster(n)
    runner = QuorumRunner(cluster)
    ctl = NoWaits(cluster, runner.fire, threading.Event(), power_cut=ending)
    result = run_composition(composition, ctl, random.Random(seed))
    fired = [[a, s, p, (note or {}).get("step")] for a, s, p, note in runner.fired]
    return json.loads(json.dumps({"composition": composition, "nodes": n, "seed": seed,
                                  "result": result, "fired": fired}))


def test_the_raft_adapter_offers_its_own_power_cut_as_the_ending():
    ending = power_cut_ending(RaftDB())
    assert ending.armed == "power-cut-after-commit:all"
    name, variant = split_spec(ending.armed)
    assert name in FAULTS and name in TRIGGER_FAULTS      # registered from nodes/raft
    FAULTS[name].planner(random.Random(0), ["n1", "n2", "n3"], variant)   # a variant it takes
    assert ending.name == name


def test_a_seed_plays_the_compositions_on_raft_as_before_the_ending_moved():
    recorded = json.loads(RECORDED.read_text())
    assert len(recorded) == 48
    assert sum(r["result"].get("then") == "power-cut-after-commit" for r in recorded) == 13
    ending = power_cut_ending(RaftDB())
    for r in recorded:
        now = steps(r["composition"], r["nodes"], r["seed"], ending)
        assert now == r, (r["composition"], r["nodes"], r["seed"])


def test_without_the_raft_ending_the_same_seeds_differ_only_where_they_cut_power():
    """The generic ending changes what the power-cut draws fire, and nothing
    else: the other 35 play as recorded, so a system without an ending of its
    own gets the same compositions."""
    for r in json.loads(RECORDED.read_text()):
        now = steps(r["composition"], r["nodes"], r["seed"], PowerCutEnding())
        if r["result"].get("then") == "power-cut-after-commit":
            assert now["result"]["then"] == "lose-unsynced"
            assert not any(s.startswith("power-cut-after-commit") for _, s, _, _ in now["fired"])
        else:
            assert now == r
