"""Host faults, pure parts: clock and pressure variants, plans, the cgroup
file formats, the libfaketime environment, and how the registry, the
catalog and the run's validation treat them (a system that cannot take a
clock fault is refused before anything starts)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from checkers.faults import CLOCK, CLOCK_CUT, CPU, FAULT_OPS, MEMORY, STRESS
from faultline import builtin, catalog
from harness.run.config import ConfigError, RunConfig, hunt_choice, hunt_line, validate
from nemesis import cgroups, clock, pressure, process
from nemesis.base import FAULTS, FaultContext, host_needs, make_fault
from nemesis.schedule import schedule

NODES = ["n1", "n2", "n3"]


# --- clock variants -----------------------------------------------------------

@pytest.mark.parametrize("variant, expected", [
    (None, clock.ClockVariant("skew", None)),
    ("skew=5", clock.ClockVariant("skew", 5.0)),
    ("bump=-2.5", clock.ClockVariant("bump", -2.5)),
    ("strobe", clock.ClockVariant("strobe", 1.0)),
    ("strobe=3,period=0.2", clock.ClockVariant("strobe", 3.0, 0.2)),
    ("skew=-10,leader", clock.ClockVariant("skew", -10.0, leader=True)),
    ("strobe=2,leader,period=0.3", clock.ClockVariant("strobe", 2.0, 0.3, leader=True)),
])
def test_clock_variants_parse(variant, expected) -> None:
    assert clock.parse_variant(variant) == expected


@pytest.mark.parametrize("variant", ["jump=5", "skew=5x", "skew=nan", "skew=1e12",
                                     "skew=5,period=1", "strobe=1,period=0.001",
                                     "strobe=1,monotonic", ""])
def test_bad_clock_variants_are_refused(variant) -> None:
    with pytest.raises(ValueError):
        clock.parse_variant(variant)


def test_clock_plan_is_a_function_of_the_rng() -> None:
    a = clock.plan(random.Random(7), NODES, None)
    assert a == clock.plan(random.Random(7), NODES, None)
    assert a["mode"] == "skew" and 1.0 <= abs(a["seconds"]) <= clock.DEFAULT_MAX_SKEW_S
    assert clock.plan(random.Random(7), NODES, "bump=4")["seconds"] == 4.0
    assert clock.plan(random.Random(7), NODES, "strobe=2,period=0.1")["period_s"] == 0.1


def test_offset_text_is_what_libfaketime_reads() -> None:
    assert clock.offset_text(5) == "+5.000000"
    assert clock.offset_text(-0.25) == "-0.250000"
    assert clock.offset_text(0) == "+0.000000"


def test_faketime_env_leaves_the_monotonic_clock_and_its_waits_alone() -> None:
    env = clock.faketime_env(Path("/x/n1.faketime"))
    assert env["FAKETIME_TIMESTAMP_FILE"] == "/x/n1.faketime"
    assert env["FAKETIME_NO_CACHE"] == "1"
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
    assert env["FAKETIME_FORCE_MONOTONIC_FIX"] == "0"
    assert env["LD_PRELOAD"].endswith("libfaketime.so.1")


class _Names:
    names = NODES


def test_skew_bump_and_heal_write_the_control_files(tmp_path: Path) -> None:
    files = {n: tmp_path / f"{n}.faketime" for n in NODES}
    for f in files.values():
        clock.write_offset(f, 0)
    fault = clock.ClockFault("bump=2", files)
    cluster = _Names()
    v = fault.inject(cluster, random.Random(0), {"nodes": ["n2"], "mode": "bump", "seconds": 2})
    assert v["offsets"] == {"n2": 2.0}
    fault.inject(cluster, random.Random(0), {"nodes": ["n2"], "mode": "bump", "seconds": 2})
    assert files["n2"].read_text().strip() == "+4.000000"      # bumps add up
    fault.inject(cluster, random.Random(0), {"nodes": ["n2"], "mode": "skew", "seconds": -1})
    assert files["n2"].read_text().strip() == "-1.000000"      # a skew sets
    assert files["n1"].read_text().strip() == "+0.000000"
    healed = fault.heal(cluster)
    assert healed["nodes"] == ["n2"] and files["n2"].read_text().strip() == "+0.000000"
    assert "noop" in fault.heal(cluster)


def test_a_skew_may_set_each_node_its_own_offset_and_the_heal_sets_all_back(
        tmp_path: Path) -> None:
    files = {n: tmp_path / f"{n}.faketime" for n in NODES}
    for f in files.values():
        clock.write_offset(f, 0)
    fault = clock.ClockFault(None, files)
    offsets = {"n1": -12.5, "n3": 4.0}
    value = fault.inject(_Names(), random.Random(0), {"mode": "skew", "offsets": offsets})
    # The value names each node and where its clock stands (the replay and the
    # report's clock lane read it).
    assert value == {"nodes": ["n1", "n3"], "mode": "skew", "offsets": offsets}
    assert [files[n].read_text().strip() for n in NODES] == [
        "-12.500000", "+0.000000", "+4.000000"]
    assert fault.heal(_Names())["nodes"] == ["n1", "n3"]
    assert {files[n].read_text().strip() for n in NODES} == {"+0.000000"}
    # A node without a control file is refused before any clock is set.
    with pytest.raises(RuntimeError, match="n9"):
        fault.inject(_Names(), random.Random(0), {"mode": "skew", "offsets": {"n1": 1, "n9": 1}})
    assert files["n1"].read_text().strip() == "+0.000000"


class _Led(_Names):
    def __init__(self, leader: str | None) -> None:
        self._leader = leader

    def leader(self) -> str | None:
        return self._leader


def test_a_leader_clock_fault_sets_the_node_leading_at_inject_and_records_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nemesis.fault.ELECTION_WAIT_S", 0.3)   # no leader ever: a short wait
    files = {n: tmp_path / f"{n}.faketime" for n in NODES}
    for f in files.values():
        clock.write_offset(f, 0)
    params = clock.plan(random.Random(1), NODES, "skew=-10,leader")
    assert params == {"targets": "leader", "mode": "skew", "seconds": -10.0}
    fault = clock.ClockFault("skew=-10,leader", files)
    value = fault.inject(_Led("n3"), random.Random(0), params)
    # The op value names the node, so a replay sets the same one off.
    assert value["nodes"] == ["n3"] and value["offsets"] == {"n3": -10.0}
    assert files["n3"].read_text().strip() == "-10.000000"
    assert {files[n].read_text().strip() for n in NODES if n != "n3"} == {"+0.000000"}
    assert fault.heal(_Led("n1"))["nodes"] == ["n3"]
    with pytest.raises(RuntimeError, match="no leader to target"):
        fault.inject(_Led(None), random.Random(0), params)


def test_a_control_file_write_that_fails_leaves_no_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full results disk fails the write half-way: the .tmp must not stay
    behind (nothing knows to remove it: the node was never given the file)."""
    real_write = Path.write_text

    def half_write(self: Path, text: str, *a: object, **k: object) -> int:
        real_write(self, text[:2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_write)
    f = tmp_path / "n1.faketime"
    with pytest.raises(OSError, match="No space"):
        clock.write_offset(f, 0)
    assert list(tmp_path.iterdir()) == []


def test_strobe_flaps_until_the_heal(tmp_path: Path) -> None:
    f = tmp_path / "n1.faketime"
    clock.write_offset(f, 0)
    fault = clock.ClockFault("strobe=3,period=0.01", {"n1": f})
    fault.inject(_Names(), random.Random(0),
                 {"nodes": ["n1"], "mode": "strobe", "seconds": 3, "period_s": 0.01})
    # Until both offsets were seen, or 20 s (CI, loaded: 2,000 reads in a
    # row took less than the strobe thread waited to be scheduled).
    seen = set()
    deadline = time.monotonic() + 20
    while len(seen) < 2 and time.monotonic() < deadline:
        seen.add(f.read_text().strip())
        time.sleep(0.001)
    assert seen == {"+3.000000", "+0.000000"}
    fault._stop_strobe()
    clock.write_offset(f, 0)
    fault.offsets["n1"] = 0.0       # stopped just as it flapped back
    assert fault.heal(_Names())["nodes"] == ["n1"]
    assert f.read_text().strip() == "+0.000000"
    assert fault._strobe is None


# --- refusal: a declared ability, before anything starts ----------------------------

def test_etcd_cannot_take_clock_faults_and_says_why() -> None:
    assert catalog.unmet_needs("clock:skew=5", builtin.ETCD) == {catalog.PRELOAD_CLOCK}
    assert not catalog.unmet_needs("clock:skew=5", builtin.RAFT)
    with pytest.raises(ValueError, match="vDSO"):
        make_fault("clock:skew=5", FaultContext(builtin.ETCD.db()))
    with pytest.raises(ConfigError, match="cannot run on system etcd.*vDSO"):
        validate(RunConfig(db="etcd", workload="register", nemesis=["clock:skew=5"]))
    validate(RunConfig(db="raft", workload="register", nemesis=["clock:skew=5"]))


def test_an_adapter_that_declares_nothing_is_refused() -> None:
    class Silent:
        kind = "silent"

    with pytest.raises(ValueError, match="PreloadClock"):
        make_fault("clock", FaultContext(Silent()))


def test_the_pressure_faults_need_no_ability_of_the_system() -> None:
    for spec in ("cpu", "memory", "stress"):
        assert not catalog.unmet_needs(spec, builtin.ETCD)
        validate(RunConfig(db="etcd", workload="register", nemesis=[spec]))


# --- pressure variants --------------------------------------------------------------

@pytest.mark.parametrize("fault, variant, expected", [
    ("cpu", None, pressure.Pressure("limit", 0.1)),
    ("cpu", "limit=0.25", pressure.Pressure("limit", 0.25)),
    ("cpu", "limit=0.5,leader", pressure.Pressure("limit", 0.5, True)),
    ("cpu", "leader", pressure.Pressure("limit", 0.1, True)),
    ("memory", None, pressure.Pressure("pressure", 1.0)),
    ("memory", "pressure=0.5", pressure.Pressure("pressure", 0.5)),
    ("stress", None, pressure.Pressure("cpu", 1)),
    ("stress", "vm=2", pressure.Pressure("vm", 2.0)),
    ("cpu", "limit=0.2,nodes=majority", pressure.Pressure("limit", 0.2, nodes="majority")),
    ("memory", "nodes=one", pressure.Pressure("pressure", 1.0, nodes="one")),
    ("stress", "cpu=2,nodes=all", pressure.Pressure("cpu", 2.0, nodes="all")),
])
def test_pressure_variants_parse(fault, variant, expected) -> None:
    assert pressure.parse(fault, variant) == expected


@pytest.mark.parametrize("fault, variant", [
    ("cpu", "limit=0"), ("cpu", "limit=x"), ("cpu", "quota=1"), ("memory", "pressure=2"),
    ("stress", "cpu=1.5"), ("stress", "cpu=99"), ("stress", "io=1"), ("cpu", "limit=1,vm=2"),
    ("cpu", "limit=0.2,nodes=half"), ("memory", "nodes=all,leader"),
    ("stress", "cpu=1,nodes=one,nodes=all"),
])
def test_bad_pressure_variants_are_refused(fault, variant) -> None:
    with pytest.raises(ValueError):
        pressure.parse(fault, variant)
    with pytest.raises(ConfigError):
        validate(RunConfig(db="raft", workload="register", nemesis=[f"{fault}:{variant}"]))


FIVE = ["n1", "n2", "n3", "n4", "n5"]


@pytest.mark.parametrize("fault", ["cpu", "memory", "stress"])
def test_pressure_plans_draw_node_sets_as_kill_and_the_disk_faults_do(fault) -> None:
    plan = FAULTS[fault].planner
    assert plan(random.Random(1), FIVE, "leader") == {"targets": "leader"}
    drawn = [plan(random.Random(seed), FIVE, None) for seed in range(200)]
    # The disk faults' helper, the same draw: one plan of sets for every
    # fault that leaves the nodes up.
    assert drawn == [process.drawn_set(random.Random(seed), FIVE, process.SIZES)
                     for seed in range(200)]
    sizes = {"one": 1, "minority": 2, "majority": 3, "all": 5}
    assert {p["targets"] for p in drawn} == set(sizes)
    assert all(len(p["nodes"]) == sizes[p["targets"]] and set(p["nodes"]) <= set(FIVE)
               for p in drawn)
    set_of = plan(random.Random(3), FIVE, "nodes=majority")
    assert set_of["targets"] == "majority" and len(set_of["nodes"]) == 3
    assert plan(random.Random(3), FIVE, "nodes=all")["nodes"] == FIVE
    assert plan(random.Random(3), FIVE, None) == plan(random.Random(3), FIVE, None)


class FakeCgroup:
    """A node's cgroup as the pressure faults use it, in memory."""

    def __init__(self) -> None:
        self.cpu: float | None = None
        self.high: int | None = None

    def set_cpu(self, limit: float | None) -> None:
        self.cpu = limit

    def cpu_limit(self) -> float | None:
        return self.cpu

    def memory_usage(self) -> int:
        return 64 << 20

    def set_memory_high(self, limit: int | None) -> None:
        self.high = limit

    def memory_high(self) -> int | None:
        return self.high

    def memory_high_events(self) -> int:
        return 0

    def oom_kills(self) -> int:
        return self.kills

    kills = 0


class UpCluster:
    def __init__(self, down: set[str] = frozenset()) -> None:
        self.down = set(down)
        self.started: list[str] = []

    def is_running(self, name: str) -> bool:
        return name not in self.down

    def start(self, names: list[str], fresh: bool = False) -> list[str]:
        self.started += names
        self.down -= set(names)
        return list(names)


def test_a_pressure_set_is_pressed_on_every_node_and_healed_on_every_node() -> None:
    from nemesis.host import NodeHost
    groups = {n: FakeCgroup() for n in FIVE}
    host = NodeHost(cgroups=groups)
    params = pressure.plan_cpu(random.Random(5), FIVE, "limit=0.2,nodes=majority")
    cpu = pressure.CpuLimitFault("limit=0.2,nodes=majority", host)
    value = cpu.inject(UpCluster(), random.Random(0), params)
    assert value["nodes"] == params["nodes"] and value["targets"] == "majority"
    assert value["in_force"] == {n: 0.2 for n in params["nodes"]}
    assert [n for n in FIVE if groups[n].cpu] == params["nodes"]
    assert cpu.heal(UpCluster())["nodes"] == params["nodes"]
    assert not any(g.cpu for g in groups.values())
    # A squeeze leaves a node that is down alone and presses the others.
    mem = pressure.MemoryPressureFault("nodes=all", host)
    value = mem.inject(UpCluster({"n2"}), random.Random(0),
                       {"targets": "all", "nodes": FIVE})
    assert value["nodes"] == ["n1", "n3", "n4", "n5"] and value["not_running"] == ["n2"]
    assert groups["n2"].high is None and all(groups[n].high for n in value["nodes"])
    assert mem.heal(UpCluster())["nodes"] == value["nodes"]
    assert not any(g.high for g in groups.values())
    assert "noop" in mem.inject(UpCluster(set(FIVE)), random.Random(0),
                                {"nodes": ["n1"]})


# --- cgroup files, pure -------------------------------------------------------------

HYBRID = """tmpfs /sys/fs/cgroup tmpfs rw 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""
UNIFIED = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n"


def test_hybrid_hosts_use_the_v1_controllers() -> None:
    found = cgroups.parse_mounts(HYBRID, {"/sys/fs/cgroup/unified": "hugetlb"})
    assert found == {"cpu": cgroups.Hierarchy(Path("/sys/fs/cgroup/cpu"), False),
                     "memory": cgroups.Hierarchy(Path("/sys/fs/cgroup/memory"), False)}


def test_unified_hosts_use_v2() -> None:
    found = cgroups.parse_mounts(UNIFIED, {"/sys/fs/cgroup": "cpuset cpu io memory pids"})
    assert found == {c: cgroups.Hierarchy(Path("/sys/fs/cgroup"), True) for c in ("cpu", "memory")}
    assert cgroups.parse_mounts(UNIFIED, {"/sys/fs/cgroup": "io"}) == {}


def test_cpu_max_lines() -> None:
    assert cgroups.cpu_max_text(0.1) == "10000 100000"
    assert cgroups.cpu_max_text(None) == "max 100000"
    assert cgroups.cpu_max_text(0.001) == "1000 100000"    # the kernel's floor
    assert cgroups.read_cpu_limit("10000", "100000") == 0.1
    assert cgroups.read_cpu_limit("max", "100000") is None
    assert cgroups.read_cpu_limit("-1", "100000") is None


# --- the registry, the catalog, the hunt ----------------------------------------------

def test_each_host_fault_has_its_own_heal() -> None:
    heals = [FAULT_OPS[f.name].heal_f for f in (CLOCK, CPU, MEMORY, STRESS)]
    others = {op.heal_f for name, op in FAULT_OPS.items()
              if name not in (CLOCK.name, CPU.name, MEMORY.name, STRESS.name)}
    assert len(set(heals)) == 4 and not set(heals) & others


def test_host_needs_and_the_catalog() -> None:
    assert host_needs(["kill", "partition"]) == set()
    assert host_needs(["clock:skew=1", "cpu", "stress:vm=1"]) == {"clock-files", "cgroup"}
    needs = {f.name: f.needs for f in catalog.faults()}
    assert needs["clock"] == {"preload-clock"} and needs["cpu"] == {"cgroup"}


HOST_FAULTS = {"clock", "cpu", "memory", "stress"}


def test_the_default_hunt_plays_host_faults_this_host_can_prepare(monkeypatch) -> None:
    monkeypatch.setattr("nemesis.host.check_host", lambda needs: None)
    monkeypatch.setattr("nemesis.pressure.check_stress_installed", lambda: None)
    repertoire, left = hunt_choice(builtin.RAFT, 3)
    assert HOST_FAULTS <= set(repertoire) and "kill" in repertoire
    assert not HOST_FAULTS & set(left)
    config = validate(RunConfig(db="raft", workload="register"))
    assert HOST_FAULTS <= set(config.nemesis)
    line = hunt_line(config)
    assert line is not None and "clock" in line and "stress" in line


def test_the_default_hunt_leaves_out_what_this_host_cannot_prepare_and_says_why(
        monkeypatch) -> None:
    def no_cgroups(needs: set[str]) -> str | None:
        return "resource faults need a cgroup per node: no cgroup" if "cgroup" in needs else None
    monkeypatch.setattr("nemesis.host.check_host", no_cgroups)
    repertoire, left = hunt_choice(builtin.RAFT, 3)
    assert not {"cpu", "memory", "stress"} & set(repertoire)
    assert left["cpu"] == left["memory"] == "resource faults need a cgroup per node: no cgroup"
    config = validate(RunConfig(db="raft", workload="register"))
    assert config.hunt_left_out["cpu"].startswith("resource faults need a cgroup")
    assert "left out: " in (hunt_line(config) or "") and "cpu (resource faults" in hunt_line(config)
    # Named faults are the user's: nothing left out is claimed, and a named
    # host fault still needs its host (preflight says so).
    named = validate(RunConfig(db="raft", workload="register", nemesis=["hunt", "kill"]))
    assert named.hunt_left_out == {} and hunt_line(named) == "faultline: hunt over 1 faults: kill"
    assert hunt_line(validate(RunConfig(db="raft", workload="register",
                                        nemesis=["kill"]))) is None


def test_a_system_that_takes_no_preloaded_clock_has_it_left_out_with_the_reason() -> None:
    repertoire, left = hunt_choice(builtin.ETCD, 3)
    assert "clock" not in repertoire and CLOCK_CUT.name not in repertoire
    assert left["clock"] == "system etcd takes no preloaded clock"
    # The composition that sets clocks needs what `clock` needs, and says so.
    assert left[CLOCK_CUT.name] == "system etcd takes no preloaded clock"
    assert catalog.unmet_needs(CLOCK_CUT.name, builtin.ETCD) == {catalog.PRELOAD_CLOCK}
    with pytest.raises(ValueError, match="vDSO"):
        make_fault(CLOCK_CUT.name, FaultContext(builtin.ETCD.db()))
    assert host_needs([CLOCK_CUT.name]) == host_needs(["clock"])
    # Where the system takes it, both come in or neither (libfaketime missing).
    raft, left_raft = hunt_choice(builtin.RAFT, 3)
    assert ("clock" in raft) == (CLOCK_CUT.name in raft)
    assert left_raft.get("clock") == left_raft.get(CLOCK_CUT.name)
    assert left["fast-failover"] == "system etcd leaves no event lines"


def test_a_schedule_of_host_faults_heals_each_with_its_own_op() -> None:
    events = schedule(3, ["clock:skew=2", "cpu:limit=0.2"], 2.0, 20.0, NODES)
    injects = [e for e in events if e.action == "inject"]
    assert {e.fault for e in injects} == {"clock:skew=2", "cpu:limit=0.2"}
    assert all(e.params.get("nodes") for e in injects)
    assert events == schedule(3, ["clock:skew=2", "cpu:limit=0.2"], 2.0, 20.0, NODES)


def test_variants_with_commas_survive_the_nemesis_list() -> None:
    from harness.run.config import parse_nemesis
    assert parse_nemesis("clock:strobe=2,period=0.1,cpu:limit=0.05,leader,kill") == [
        "clock:strobe=2,period=0.1", "cpu:limit=0.05,leader", "kill"]
    assert parse_nemesis("kill,kil") == ["kill", "kil"]          # a typo is still refused
    assert parse_nemesis("cpu:limit=0.5,kil") == ["cpu:limit=0.5,kil"]
    with pytest.raises(ConfigError):
        validate(RunConfig(db="raft", workload="register",
                           nemesis=parse_nemesis("cpu:limit=0.5,kil")))


# --- the report and the checkers ---------------------------------------------------

def _nemesis_ops(*steps):
    from checkers.history import NEMESIS, Op
    ops = []
    for t, f, value in steps:
        ops.append(Op(0, t, NEMESIS, "invoke", f, None))
        ops.append(Op(0, t + 1, NEMESIS, "info", f, value))
    return ops


def test_a_host_fault_lasts_until_its_own_heal_and_no_other() -> None:
    from checkers.availability import fault_windows
    ops = _nemesis_ops((10, "cpu", {"nodes": ["n1"], "limit": 0.1}),
                       (20, "heal", {"nodes": []}),              # a partition's heal
                       (30, "cpu-restore", {"nodes": ["n1"]}))
    faults, heals = fault_windows(ops, 100)
    assert [(f["f"], f["start"], f["end"]) for f in faults] == [("cpu", 10, 31)]
    assert [h["f"] for h in heals] == ["heal", "cpu-restore"]


def test_clock_segments_follow_the_recorded_offsets() -> None:
    from harness.report.clock_plot import clock_segments
    from harness.report.data import FaultWindow
    w = [FaultWindow("clock", 10, 50, ["n1"], "clock skew n1",
                     {"mode": "skew", "seconds": 5, "offsets": {"n1": 5.0}}),
         FaultWindow("clock", 20, 50, ["n1"], "clock bump n1",
                     {"mode": "bump", "seconds": 2, "offsets": {"n1": 7.0}}),
         FaultWindow("clock", 60, 70, ["n2"], "clock strobe n2",
                    {"mode": "strobe", "seconds": 3, "period_s": 0.2, "offsets": {"n2": 3.0}}),
         FaultWindow("cpu", 0, 80, ["n1"], "cpu n1", {"limit": 0.1})]
    segs = clock_segments(w)
    assert [(s.node, s.start, s.end, s.offset_s, s.strobe_period_s) for s in segs] == [
        ("n1", 10, 20, 5.0, None), ("n1", 20, 50, 7.0, None), ("n2", 60, 70, 3.0, 0.2)]
    assert clock_segments(w[3:]) == []


def test_the_clock_plot_is_drawn_only_for_clock_faults() -> None:
    from harness.report.clock_plot import render_clock_plot
    from harness.report.data import FaultWindow, Timeline
    skew = FaultWindow("clock", 10, 50, ["n1"], "clock skew n1",
                       {"mode": "skew", "seconds": -5, "offsets": {"n1": -5.0}})
    cpu = FaultWindow("cpu", 0, 80, ["n1"], "cpu n1", {"limit": 0.1})
    def tl(faults):
        return Timeline(10, 100, {"ok": [0] * 10}, {}, faults, nodes=["n1", "n2"])
    svg = render_clock_plot(tl([skew, cpu]))
    assert "clock-plot" in svg and "n1: -5 s" in svg and "-5" in svg
    assert render_clock_plot(tl([cpu])) == ""


def test_a_squeeze_heal_restarts_the_nodes_the_oom_killer_took_and_no_other() -> None:
    """n1 and n2 squeezed; the kernel kills n1 under it; n2 is down for a
    kill of the nemesis (no OOM kill): the heal starts n1 again, not n2."""
    from nemesis.host import NodeHost
    groups = {n: FakeCgroup() for n in FIVE}
    mem = pressure.MemoryPressureFault("nodes=minority", NodeHost(cgroups=groups))
    cluster = UpCluster()
    mem.inject(cluster, random.Random(0), {"targets": "minority", "nodes": ["n1", "n2"]})
    groups["n1"].kills = 1
    cluster.down |= {"n1", "n2"}
    healed = mem.heal(cluster)
    assert healed["restarted"] == ["n1"] and cluster.started == ["n1"]
    assert healed["oom_kills"] == {"n1": 1, "n2": 0}
    # A squeeze that killed nothing restarts nothing.
    mem.inject(cluster, random.Random(0), {"nodes": ["n1"]})
    assert "restarted" not in mem.heal(cluster)
