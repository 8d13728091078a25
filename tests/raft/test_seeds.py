"""One place derives every random stream from a run's seed, stably: a saved
run replays with the streams it ran with."""

import random

import pytest

from harness.run.config import RunConfig, validate
from harness.run.lifecycle import plan_events, run_seeds
from harness.run.replay import replay_config
from harness.run.seeds import SCHEME, STREAMS, Seeds
from workloads.registry import get as get_workload

# Pinned values: changing the derivation changes every saved run's replay.
PINNED_V2 = {"workload": 4236280732356475876, "schedule": 8376368769720803103,
             "node-choice": 2815717508029962093, "pacing": 6405761195801692798,
             "nodes": 3841162687418345108, "companion": 8884351208328780493}


def test_scheme_2_streams_are_pinned_and_distinct():
    seeds = Seeds(42, 2)
    assert {s: seeds.of(s) for s in STREAMS} == PINNED_V2
    assert len(set(PINNED_V2.values())) == len(STREAMS)
    assert Seeds(43, 2).of("workload") != PINNED_V2["workload"]


def test_scheme_1_is_the_offsets_runs_used_before_names():
    seeds = Seeds(42, 1)
    assert [seeds.of(s) for s in ("workload", "schedule", "node-choice", "pacing", "nodes")] \
        == [42, 42, 43, 44, 42]


def test_an_unknown_stream_or_scheme_is_refused():
    with pytest.raises(KeyError):
        Seeds(1).of("nope")
    with pytest.raises(ValueError):
        Seeds(1, 9).of("workload")
    with pytest.raises(ValueError, match="seed_scheme"):
        validate(RunConfig(seed_scheme=9))


def test_a_new_run_records_the_current_scheme_and_replays_with_it():
    config = validate(RunConfig(seed=7))
    assert config.to_json()["seed_scheme"] == SCHEME
    run = {"config": config.to_json(), "schedule": []}
    assert replay_config(run).seed_scheme == SCHEME


def test_a_run_saved_before_schemes_replays_its_own_streams():
    """An old run.json has no seed_scheme: its replay must draw the workload
    from Random(seed), the node choice from seed+1 and the schedule from seed,
    as the original did."""
    old = {k: v for k, v in validate(RunConfig(seed=7)).to_json().items() if k != "seed_scheme"}
    replayed = replay_config({"config": old, "schedule": []})
    assert replayed.seed_scheme == 1
    seeds = run_seeds(replayed)
    gen = get_workload("register").generate
    as_run = [next(g) for g in [gen(seeds.rng("workload"), {})] for _ in range(50)]
    original = [next(g) for g in [gen(random.Random(7), {})] for _ in range(50)]
    assert as_run == original
    assert seeds.rng("node-choice").random() == random.Random(8).random()


def test_the_schedule_follows_the_schedule_stream():
    names = ["n1", "n2", "n3"]
    # The classic timeline, planned whole up front (the default hunt decides as it runs).
    classic = ["partition", "kill"]
    c1 = RunConfig(seed=3, seed_scheme=1, time_limit=60.0, nemesis=classic)
    c2 = RunConfig(seed=3, seed_scheme=2, time_limit=60.0, nemesis=classic)
    from nemesis.schedule import schedule
    assert plan_events(c1) == schedule(3, c1.nemesis, c1.nemesis_interval, 60.0, names)
    assert plan_events(c2) == schedule(Seeds(3).of("schedule"), c2.nemesis,
                                   c2.nemesis_interval, 60.0, names)
    assert plan_events(c1) != plan_events(c2)


def test_from_scheme_3_each_node_draws_its_own_seed():
    names = ["n1", "n2", "n3"]
    s3 = Seeds(42, 3)
    assert len({s3.node(n) for n in names}) == 3
    # Pinned: a run's node seeds are part of what it replays with.
    assert s3.node("n1") == Seeds(42, 3).node("n1") != Seeds(43, 3).node("n1")
    # The named streams are scheme 2's.
    assert {s: s3.of(s) for s in STREAMS} == PINNED_V2
    # Runs saved under schemes 1 and 2 gave every node the one "nodes" seed.
    assert {Seeds(42, 2).node(n) for n in names} == {PINNED_V2["nodes"]}
    assert {Seeds(42, 1).node(n) for n in names} == {42}
    with pytest.raises(ValueError):
        Seeds(1, 9).node("n1")


def test_a_run_gives_each_node_its_seed_unless_a_node_option_sets_one(tmp_path):
    from harness.run.lifecycle import Run
    run = Run(RunConfig(seed=5, nodes=3), tmp_path)
    per_node = run.per_node_options()
    assert per_node == {n: {"seed": Seeds(5).node(n)} for n in run.names}
    assert "seed" not in run.node_options()
    fixed = Run(RunConfig(seed=5, nodes=3, node_options={"seed": 9}), tmp_path)
    assert fixed.per_node_options() == {} and fixed.node_options()["seed"] == 9
