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
    assert len(plan(random.Random(1), NODES, None)["nodes"]) == 1
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


def test_the_hunt_draws_a_whole_cluster_disk_failure_and_a_single_disk_one():
    """Every node's disk failing at once (a shared storage failure) is a move
    of the default hunt on any node count; the plain `disk:eio` still hits one
    node (its twin): the hunt has both shapes."""
    from nemesis.hunt import moves_for
    from nemesis.hunter import plannable

    moves = moves_for(["disk"], {"disk": FAULTS["disk"].variants()})
    assert "disk:eio+nodes=all" in moves and "disk:eio" in moves
    for nodes in (NODES[:3], NODES):
        assert plannable(FAULTS, "disk:eio+nodes=all", nodes)
        for seed in range(20):
            assert plan(random.Random(seed), nodes, "eio+nodes=all")["nodes"] == nodes
            assert len(plan(random.Random(seed), nodes, "eio")["nodes"]) == 1
    whole = parse_variant("eio+nodes=all")
    assert (whole.mode, whole.p, whole.nodes) == (EIO, 0.1, "all")
    assert whole.rule(0).hit_ops == parse_variant("eio").rule(0).hit_ops
    check_variant("disk:eio+nodes=all", 3)
