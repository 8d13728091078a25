"""The `disk` fault family without a mount: variants parsed (or refused before a
run), plans and rule verdicts pure and seeded, the registry's needs."""

from __future__ import annotations

import errno
import random
from pathlib import Path

import pytest

from checkers.faults import DISK, FAULT_OPS
from harness.run.config import ConfigError, check_variant
from nemesis.base import FAULTS, LAZYFS_FAULTS, FaultContext, make_fault
from nemesis.disk_rules import (
    BITFLIP,
    EIO,
    FSYNC,
    FULL,
    READ,
    SLOW,
    WRITE,
    DiskRule,
    RuleState,
    flip_bit,
)
from nemesis.diskfault import (
    CorruptFault,
    DiskFault,
    DiskTruncate,
    apply_flips,
    parse_variant,
    plan,
    plan_flips,
)
from nemesis.process import DESTROYING, SIZES, target_count

NODES = ["n1", "n2", "n3", "n4", "n5"]


def test_each_mode_has_a_sane_default() -> None:
    assert parse_variant(None).mode == EIO and parse_variant(None).p == 0.1
    eio = parse_variant("eio").rule(0)
    assert (eio.p, eio.hit_ops) == (0.1, (READ, WRITE))
    full = parse_variant("full").rule(0)
    assert (full.p, full.hit_ops) == (1.0, (WRITE,))
    slow = parse_variant("slow")
    assert (slow.delay_ms, slow.fsync_ms) == (10, 200)
    assert parse_variant("bitflip").rule(0).hit_ops == (READ,)
    rest = parse_variant("bitflip+at=rest")
    assert rest.at_rest and rest.bits == 8


def test_values_and_options_are_read() -> None:
    v = parse_variant("eio=0.25+ops=write-fsync+files=*.seg+nodes=majority")
    assert (v.p, v.ops, v.files, v.nodes) == (0.25, (WRITE, FSYNC), "*.seg", "majority")
    s = parse_variant("slow=50ms+fsync=400")
    assert (s.delay_ms, s.fsync_ms) == (50, 400)


@pytest.mark.parametrize("variant", [
    "sideways", "eio=2", "eio=x", "eio+ops=erase", "eio+nodes=most", "eio+colour=red",
    "eio+p", "slow=-5", "eio+at=rest", "bitflip+at=rest+bits=0", "bitflip+at=sea",
])
def test_a_bad_variant_is_refused_before_the_run(variant: str) -> None:
    with pytest.raises(ValueError):
        parse_variant(variant)
    with pytest.raises(ConfigError):
        check_variant(f"disk:{variant}", 3)


def test_good_variants_pass_the_config_check() -> None:
    for variant in ("eio", "full", "slow=5", "bitflip=0.5", "truncate", "bitflip+at=rest"):
        check_variant(f"disk:{variant}", 3)


def test_plan_picks_the_nodes_by_the_variant_and_replays() -> None:
    assert plan(random.Random(1), NODES, None) == plan(random.Random(1), NODES, None)
    assert len(plan(random.Random(1), NODES, "eio+nodes=one")["nodes"]) == 1
    assert len(plan(random.Random(1), NODES, "eio+nodes=majority")["nodes"]) == 3
    assert plan(random.Random(1), NODES, "full+nodes=all")["nodes"] == NODES


def test_eio_rate_is_the_probability_asked_within_bounds() -> None:
    # Binomial(2000, 0.2): mean 400, sd ~17.9; 5 sd either side.
    state = RuleState(DiskRule(EIO, p=0.2, seed=7))
    failed = sum(state.decide("write", "/log/x.seg").errno == errno.EIO for _ in range(2000))
    assert 310 <= failed <= 490
    # Reads are hit too (the default); fsync and metadata are not.
    assert state.decide("fsync", "/x").errno is None
    assert state.decide("getattr", "/x").errno is None


def test_the_same_seed_fails_the_same_operations() -> None:
    def run(seed: int) -> list[bool]:
        state = RuleState(DiskRule(EIO, p=0.3, seed=seed))
        return [state.decide("read", "/a").errno is not None for _ in range(200)]
    assert run(3) == run(3) and run(3) != run(4)


def test_files_pattern_and_ops_limit_what_fails() -> None:
    state = RuleState(DiskRule(EIO, p=1.0, ops=(WRITE,), files="*.seg"))
    assert state.decide("write", "/log/00000000000000000000.seg").errno == errno.EIO
    assert state.decide("write", "/quorum-state").errno is None
    assert state.decide("read", "/log/00000000000000000000.seg").errno is None
    by_path = RuleState(DiskRule(EIO, p=1.0, files="/log/*"))
    assert by_path.decide("read", "/log/a").errno == errno.EIO
    assert by_path.decide("read", "/meta").errno is None


def test_full_fails_writes_with_enospc_and_leaves_reads() -> None:
    state = RuleState(DiskRule(FULL, p=1.0))
    assert state.decide("write", "/a").errno == errno.ENOSPC
    assert state.decide("create", "/b").errno == errno.ENOSPC
    assert state.decide("read", "/a").errno is None
    # Without these the mount could not even be unmounted.
    assert state.decide("release", "/a").errno is None


def test_slow_delays_every_op_and_fsync_by_its_own_figure() -> None:
    state = RuleState(DiskRule(SLOW, delay_ms=30, fsync_ms=250))
    assert state.decide("getattr", "/a").delay_s == 0.03
    assert state.decide("write", "/a").delay_s == 0.03
    assert state.decide("fsync", "/a").delay_s == 0.25
    assert state.decide("write", "/a").errno is None


def test_bitflip_flips_exactly_one_bit_of_a_read() -> None:
    state = RuleState(DiskRule(BITFLIP, p=1.0, seed=2))
    verdict = state.decide("read", "/a", 4096)
    assert verdict.flip is not None and 0 <= verdict.flip < 4096 * 8
    data = bytes(4096)
    flipped = flip_bit(data, verdict.flip)
    assert sum(bin(b).count("1") for b in flipped) == 1
    assert flip_bit(data, None) == data
    assert state.decide("write", "/a", 10).flip is None


def test_flips_at_rest_are_planned_by_size_and_replay(tmp_path: Path) -> None:
    sizes = {"n1": {"a": 100, "b": 0, "c": 50}, "n2": {}}
    flips = plan_flips(random.Random(5), sizes, 20)
    assert flips == plan_flips(random.Random(5), sizes, 20)
    assert len(flips) == 20 and {f.file for f in flips} <= {"a", "c"}
    assert all(f.offset < sizes["n1"][f.file] and 0 <= f.bit < 8 for f in flips)
    target = tmp_path / "seg"
    target.write_bytes(bytes(64))
    one = plan_flips(random.Random(1), {"n1": {str(target): 64}}, 1)
    apply_flips(one)
    data = target.read_bytes()
    assert data[one[0].offset] == 1 << one[0].bit and sum(data) == data[one[0].offset]


def test_registry_builds_each_variant_and_refuses_without_mounts() -> None:
    assert FAULTS[DISK.name].needs_lazyfs and DISK.name in LAZYFS_FAULTS
    assert FAULT_OPS[DISK.name].lasting
    with pytest.raises(ValueError, match="LazyFS"):
        make_fault("disk:eio", FaultContext(None))
    ctx = FaultContext(None, None, {"mounts": {}})
    assert isinstance(make_fault("disk:slow=5", ctx), DiskFault)
    assert isinstance(make_fault("disk:bitflip+at=rest", ctx), CorruptFault)
    truncate = make_fault("disk:truncate", ctx)
    assert isinstance(truncate, DiskTruncate) and truncate.name == DISK.name
    # The old name still builds today's fault, recorded under its own name.
    assert make_fault("truncate", ctx).name == "truncate"


def test_systems_lists_disk_with_what_it_needs() -> None:
    from harness.commands.systems import describe
    doc = describe()
    assert doc["faults"]["disk"]["needs"] == ["lazyfs"]
    assert "eio" in doc["faults"]["disk"]["description"]


def test_a_failed_read_fails_its_retry_so_readers_see_the_rate_asked() -> None:
    # The kernel retries a failed page read once at the same offset: the
    # retry fails too (a bad sector stays bad), and is not a new draw.
    state = RuleState(DiskRule(EIO, p=1.0, ops=(READ,)))
    assert state.decide("read", "/a", 4096, 8192).errno == errno.EIO
    assert ("/a", 8192) in state.bad_reads
    assert state.decide("read", "/a", 4096, 8192).errno == errno.EIO
    assert state.counts == {"eio-read": 1, "eio-retried": 1}


class StateDB:
    def state_files(self, node: object) -> list[Path]:
        return []


def test_files_state_is_refused_for_a_system_naming_no_state_files() -> None:
    with pytest.raises(ValueError, match="state files"):
        make_fault("disk:eio+files=state", FaultContext(object(), None, {"mounts": {}}))
    assert make_fault("disk:eio+files=state", FaultContext(StateDB(), None, {"mounts": {}}))


def test_a_disk_fault_is_a_lane_span_and_an_excuse_until_its_heal() -> None:
    from checkers.history import NEMESIS, Op
    from checkers.node_logs import leaving_windows
    from harness.report.data import fault_list, node_spans
    value = {"nodes": ["n1", "n3"], "mode": "eio", "p": 0.1}
    ops = [Op(0, 1_000, NEMESIS, "invoke", "disk", value),
           Op(1, 2_000, NEMESIS, "info", "disk", value),
           Op(2, 9_000, NEMESIS, "invoke", "restore-disk", None),
           Op(3, 9_500, NEMESIS, "info", "restore-disk", {"nodes": ["n1", "n3"]})]
    windows, _ = fault_list(ops, 20_000)
    (window,) = windows
    assert (window.start, window.end, window.label) == (1_000, 9_500, "disk eio n1 n3")
    spans = node_spans(windows, ["n1", "n2", "n3"])
    assert {(s.node, s.state, s.end) for s in spans} == {("n1", "disk", 9_500),
                                                          ("n3", "disk", 9_500)}
    # A node that stops on the faulty disk is excused until after the heal.
    ((start, end, nodes),) = leaving_windows(ops)
    assert start == 1_000 and end > 9_500 and nodes == frozenset({"n1", "n3"})
    # Availability counts its nodes as taken while it is in force.
    from checkers.impairment import timeline
    impairment = timeline(ops, ["n1", "n2", "n3"], None, 20_000)
    assert impairment.at(5_000).out == frozenset({"n1", "n3"})
    assert impairment.at(15_000).out == frozenset()


SIZED = {"one": 1, "minority": 2, "majority": 3, "all": 5}   # of NODES


def sizes_drawn(variant: str | None, nodes: list[str], seeds: range) -> dict[str, int]:
    """How often each size came in the plans of `variant` over `seeds`
    (checking each plan's nodes are as many as its size says)."""
    seen: dict[str, int] = {}
    for seed in seeds:
        planned = plan(random.Random(seed), nodes, variant)
        want = len(nodes) if planned["targets"] == "all" else target_count(
            planned["targets"], len(nodes))
        assert len(planned["nodes"]) == want and set(planned["nodes"]) <= set(nodes)
        assert planned == plan(random.Random(seed), nodes, variant)   # a replay's plan
        seen[planned["targets"]] = seen.get(planned["targets"], 0) + 1
    return seen


@pytest.mark.parametrize("variant", [None, "eio", "eio=0.5+ops=write", "full", "slow=5"])
def test_a_disk_fault_that_destroys_nothing_draws_every_size_as_kill_does(variant):
    """Without `nodes=`, one node, a minority, a majority and all come in
    about equal shares over seeds, on 3 nodes and on 5."""
    for nodes in (NODES[:3], NODES):
        seen = sizes_drawn(variant, nodes, range(400))
        assert set(seen) == set(SIZES)
        assert all(60 <= n <= 140 for n in seen.values()), seen


@pytest.mark.parametrize("variant", ["bitflip", "bitflip+at=rest", "truncate"])
def test_a_disk_fault_that_destroys_data_never_takes_a_quorum(variant):
    for nodes in (NODES[:3], NODES):
        seen = sizes_drawn(variant, nodes, range(200))
        assert set(seen) == set(DESTROYING) == {"one"}


def test_a_named_node_set_is_played_as_named():
    for seed in range(50):
        assert plan(random.Random(seed), NODES, "eio+nodes=all")["nodes"] == NODES
        assert plan(random.Random(seed), NODES, "full+nodes=majority")["targets"] == "majority"
        assert len(plan(random.Random(seed), NODES, "bitflip+nodes=one")["nodes"]) == 1
    whole = parse_variant("eio+nodes=all")
    assert (whole.mode, whole.p, whole.nodes) == (EIO, 0.1, "all")
    assert whole.rule(0).hit_ops == parse_variant("eio").rule(0).hit_ops
    check_variant("disk:eio+nodes=all", 3)


def test_lose_unsynced_draws_its_node_set_too():
    """Plain lose-unsynced (a correct node fsynced what it acknowledged)
    draws every size; its variants still name a set."""
    from nemesis.disk import plan_lose_unsynced

    lost = {}
    for s in range(100):
        planned = plan_lose_unsynced(random.Random(s), NODES, None)
        assert len(planned["nodes"]) == SIZED[planned["targets"]]
        lost[planned["targets"]] = 1
    assert set(lost) == set(SIZES)
    assert plan_lose_unsynced(random.Random(0), NODES, "all")["nodes"] == NODES


def test_the_hunts_disk_turns_reach_every_size_over_seeds():
    """The hunt's own draws (nemesis.hunt.decide, each move planned from its
    own rng as the hunter does), over 300 seeds of six moves among the disk
    and kill kinds: the disk moves that destroy nothing (eio, full, slow) come on one node, a
    minority, a majority and the whole cluster, a quorum in about half of
    them; the destroying ones on one node. (A whole cluster's disk was
    one variant of eight before, `disk:eio+nodes=all`: now every EIO move
    draws it.)"""
    from nemesis.fault import plan_in
    from nemesis.hunt import Outcome, decide, derive, moves_for, record

    moves = moves_for(["disk", "kill"], {k: FAULTS[k].variants() for k in ("disk", "kill")})
    assert "disk:eio+nodes=all" not in moves and {"disk", "disk:eio", "disk:full"} <= set(moves)
    refusing: dict[str, int] = {}
    destroying: set[int] = set()
    for seed in range(1, 301):
        outcomes: list[Outcome] = []
        for i in range(6):
            move = decide(derive(seed, "schedule"), i, moves, outcomes, ordinal=seed).move
            planned = plan_in(FAULTS, move, random.Random(derive(seed, "move", i)), NODES)
            if move in ("disk", "disk:eio", "disk:full", "disk:slow"):
                refusing[planned["targets"]] = refusing.get(planned["targets"], 0) + 1
            elif move.startswith("disk"):
                destroying.add(len(planned["nodes"]))
            outcomes.append(record(outcomes, move, (move,)))
    assert set(refusing) == set(SIZES)
    quorum = refusing["majority"] + refusing["all"]
    assert 0.35 < quorum / sum(refusing.values()) < 0.65, refusing
    assert destroying == {1}


class FakeMount:
    def __init__(self) -> None:
        self.rules: list[dict] = []

    def add_disk_fault(self, rule: dict) -> dict:
        self.rules.append(rule)
        return rule

    def heal_disk(self, seed: int) -> list[dict]:
        return [{"mode": r["mode"], "did": {}} for r in self.rules]


class FakeNodes:
    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.running = set(names)

    def is_running(self, name: str) -> bool:
        return name in self.running

    def start(self, names: list[str], fresh: bool = False) -> list[str]:
        todo = [n for n in names if n not in self.running]
        self.running |= set(todo)
        return todo

    def kill(self, names: list[str]) -> list[str]:
        self.running -= set(names)
        return list(names)


def test_a_replay_plays_the_recorded_node_set_whatever_its_rng_draws():
    """The inject's op value names the nodes; a replay hands them back as
    params (harness.run.replay.RESOLVED_KEYS), and the fault hits those, not a
    new draw, even under another rng."""
    from harness.run.replay import replay_events

    mounts = {n: FakeMount() for n in NODES}
    first = DiskFault(mounts, parse_variant("eio")).inject(
        FakeNodes(NODES), random.Random(7), plan(random.Random(7), NODES, "eio"))
    recorded = first["nodes"]
    offset = 1_000_000_000
    run = {"schedule_offset_ns": offset, "planned_schedule": [],
           "schedule": [{"time": offset + 10**9, "f": "disk", "fault": "disk:eio",
                         "fired": True, "value": first},
                        {"time": offset + 3 * 10**9, "f": "restore-disk", "fault": "disk:eio",
                         "fired": True, "value": {"nodes": recorded}}]}
    (inject, heal) = replay_events(run)
    assert inject["params"]["nodes"] == recorded and heal["action"] == "heal"
    for seed in range(20):
        again = DiskFault({n: FakeMount() for n in NODES}, parse_variant("eio")).inject(
            FakeNodes(NODES), random.Random(seed), inject["params"])
        assert again["nodes"] == recorded
        if seed == 7:       # the same rng: the same rules too
            assert again["seeds"] == first["seeds"]
