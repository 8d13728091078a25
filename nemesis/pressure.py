"""Resource pressure on one node, through the cgroup the harness starts it in
(nemesis.host, nemesis.cgroups):

    cpu:limit=F        the node gets F of one core (cpu.max / cfs quota)
    memory:pressure=R  the node's memory squeezed to R times what it uses at
                       inject time (memory.high; on v1 memory.limit_in_bytes)
    stress:cpu=N       stress-ng beside the node, in its cgroup: N CPU hogs
    stress:vm=N        ... N workers touching 64 MiB each

Which nodes: a node set drawn when planned as kill's and the disk faults'
are (nemesis.process.drawn_set over SIZES: one node, a minority, a
majority or all of them), or the one a variant names (`,nodes=majority`),
or `,leader` (the node leading at inject time). The plan's nodes are the
inject's params, so a replay presses the same nodes. The heal lifts the
limits (stops stress-ng) on every node it touched; each inject's value says
what the kernel reports in force afterwards (the limit read back), so the
history shows it.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkers.faults import CPU, MEMORY, STRESS
from checkers.history import NOOP
from nemesis.cgroups import NodeCgroup
from nemesis.fault import ClusterControl, FaultContext, planned_or_leader
from nemesis.host import NodeHost
from nemesis.process import SIZES, drawn_set, nodes_of_size

LEADER = "leader"
NODES_KEY = "nodes"
# No `nodes=` in the variant: a size drawn from SIZES, as a plain kill's is.
DRAWN = "drawn"
DEFAULT_CPU_LIMIT = 0.1
MIN_CPU_LIMIT = 0.01
DEFAULT_SQUEEZE = 1.0
STRESS_KINDS = ("cpu", "vm")
VM_BYTES = "64M"
# Variants as `faultline systems` shows them (templates: a hunt that is told
# to play these faults draws each without a variant).
NODE_SETS = "nodes=<SET>"   # SET: one of SIZES
CPU_VARIANTS = ("limit=<F>", f"limit=<F>,{NODE_SETS}", "limit=<F>,leader")
MEMORY_VARIANTS = ("pressure=<R>", f"pressure=<R>,{NODE_SETS}", "pressure=<R>,leader")
STRESS_VARIANTS = ("cpu=<N>", "vm=<N>", f"cpu=<N>,{NODE_SETS}", "cpu=<N>,leader")


@dataclass(frozen=True)
class Pressure:
    key: str          # limit, pressure, cpu, vm
    amount: float
    leader: bool = False
    nodes: str = DRAWN  # a size of SIZES, or DRAWN


def parse(fault: str, variant: str | None) -> Pressure:
    """Pure: a pressure variant of `fault` (cpu, memory, stress)."""
    keys, default = {CPU.name: (("limit",), ("limit", DEFAULT_CPU_LIMIT)),
                     MEMORY.name: (("pressure",), ("pressure", DEFAULT_SQUEEZE)),
                     STRESS.name: (STRESS_KINDS, ("cpu", 1))}[fault]
    if variant is None:
        return Pressure(*default)
    parts = [p.strip() for p in variant.split(",") if p.strip()]
    leader = LEADER in parts
    sets = [p.partition("=")[2] for p in parts if p.partition("=")[0] == NODES_KEY]
    parts = [p for p in parts if p != LEADER and p.partition("=")[0] != NODES_KEY]
    if len(sets) > 1 or any(s not in SIZES for s in sets):
        raise ValueError(f"{fault} {NODES_KEY}= is one of {', '.join(SIZES)}, not {variant!r}")
    if sets and leader:
        raise ValueError(f"{fault} takes {NODES_KEY}= or {LEADER}, not both: {variant!r}")
    nodes = sets[0] if sets else DRAWN
    if not parts:
        return Pressure(*default, leader=leader, nodes=nodes)
    if len(parts) > 1:
        raise ValueError(f"{fault} takes one of {', '.join(keys)} (maybe with ,{NODE_SETS} "
                         f"or ,leader; SET: {'|'.join(SIZES)}), not {variant!r}")
    key, eq, text = parts[0].partition("=")
    if key not in keys:
        raise ValueError(f"{fault} variant must be one of {', '.join(k + '=' for k in keys)}"
                         f" (maybe with ,{NODE_SETS} or ,leader; SET: {'|'.join(SIZES)}), "
                         f"not {variant!r}")
    amount = default[1] if not eq else _amount(fault, key, text)
    return Pressure(key, amount, leader, nodes)


def _amount(fault: str, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{fault}:{key} takes a number, not {text!r}") from None
    if fault == CPU.name and not MIN_CPU_LIMIT <= value <= 64:
        raise ValueError(f"cpu:limit is a fraction of one core, {MIN_CPU_LIMIT}..64, "
                         f"not {text}")
    if fault == MEMORY.name and not 0.05 <= value <= 1.0:
        raise ValueError(f"memory:pressure is a share of what the node uses, 0.05..1, not {text}")
    if fault == STRESS.name and (value != int(value) or not 1 <= value <= 16):
        raise ValueError(f"stress:{key} takes a worker count 1..16, not {text}")
    return value


def plan(fault: str, rng: random.Random, nodes: Sequence[str], variant: str | None
         ) -> dict[str, Any]:
    """Pure: the leader (found at inject time), or the nodes drawn now: the
    variant's size, else one drawn from SIZES (`targets` says which size)."""
    p = parse(fault, variant)
    if p.leader:
        return {"targets": LEADER}
    if p.nodes == DRAWN:
        return drawn_set(rng, nodes, SIZES)
    return {"targets": p.nodes, "nodes": nodes_of_size(rng, nodes, p.nodes)}


def plan_cpu(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    return plan(CPU.name, rng, nodes, variant)


def plan_memory(rng: random.Random, nodes: Sequence[str], variant: str | None
                ) -> dict[str, Any]:
    return plan(MEMORY.name, rng, nodes, variant)


def plan_stress(rng: random.Random, nodes: Sequence[str], variant: str | None
                ) -> dict[str, Any]:
    return plan(STRESS.name, rng, nodes, variant)


class _PressureFault:
    fault = CPU

    def __init__(self, variant: str | None, host: NodeHost | None) -> None:
        self.pressure = parse(self.fault.name, variant)
        self.host = host or NodeHost()
        self.touched: set[str] = set()

    def _cgroup(self, node: str) -> NodeCgroup:
        cg = self.host.cgroups.get(node)
        if cg is None:
            raise RuntimeError(f"{node} was started without a cgroup of its own")
        return cg


class CpuLimitFault(_PressureFault):
    fault = CPU
    name, heal_f = CPU.name, CPU.heal_f

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        aimed = planned_or_leader(cluster, params)
        nodes = aimed.nodes
        for n in nodes:
            self._cgroup(n).set_cpu(self.pressure.amount)
            self.touched.add(n)
        return {"nodes": nodes, "targets": params.get("targets"), "limit": self.pressure.amount,
                "in_force": {n: self._cgroup(n).cpu_limit() for n in nodes}, **aimed.recorded()}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        nodes = sorted(self.touched)
        for n in nodes:
            self._cgroup(n).set_cpu(None)
        self.touched.clear()
        return {"nodes": nodes} if nodes else {"nodes": [], NOOP: "no node was limited"}


class MemoryPressureFault(_PressureFault):
    fault = MEMORY
    name, heal_f = MEMORY.name, MEMORY.heal_f

    def __init__(self, variant: str | None, host: NodeHost | None) -> None:
        super().__init__(variant, host)
        # node -> its group's OOM kills when first squeezed: the heal restarts
        # a node the kernel killed since (a v1 hard limit), as a supervisor
        # would; left down, a squeezed majority never served again.
        self.kills_before: dict[str, int] = {}

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        aimed = planned_or_leader(cluster, params)
        # A group whose node is down holds nothing to measure: a squeeze to
        # that would kill the node the moment something starts it again.
        down = [n for n in aimed.nodes if not cluster.is_running(n)]
        nodes = [n for n in aimed.nodes if n not in down]
        if not nodes:
            return {"nodes": aimed.nodes, NOOP: f"{' '.join(down)} not running",
                    **aimed.recorded()}
        used, limits = {}, {}
        for n in nodes:
            cg = self._cgroup(n)
            self.kills_before.setdefault(n, cg.oom_kills())
            used[n] = cg.memory_usage()
            limit = max(1 << 20, int(used[n] * self.pressure.amount))
            try:
                cg.set_memory_high(limit)
            except OSError:
                # v1 refuses (EBUSY) a limit it cannot reclaim down to: the
                # squeeze is then what it holds now, so any growth is reclaimed.
                cg.set_memory_high(cg.memory_usage())
            self.touched.add(n)
            limits[n] = cg.memory_high()
        value: dict[str, Any] = {"nodes": nodes, "targets": params.get("targets"),
                                 "used": used, "in_force": limits, **aimed.recorded()}
        if down:
            value["not_running"] = down   # planned, left alone
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        nodes = sorted(self.touched)
        events, kills = {}, {}
        for n in nodes:
            cg = self._cgroup(n)
            events[n], kills[n] = cg.memory_high_events(), cg.oom_kills()
            cg.set_memory_high(None)
        self.touched.clear()
        if not nodes:
            return {"nodes": [], NOOP: "no node was squeezed"}
        before, self.kills_before = self.kills_before, {}
        # Down and killed by the kernel while squeezed: another fault's down
        # node (a kill's) stays as that fault left it.
        killed = [n for n in nodes if kills[n] > before.get(n, kills[n])
                  and not cluster.is_running(n)]
        # Counted since the group was made: what the squeezes did to each node.
        value: dict[str, Any] = {"nodes": nodes, "high_events": events, "oom_kills": kills}
        if killed:
            value["restarted"] = cluster.start(killed, fresh=False)
        return value


class StressFault(_PressureFault):
    fault = STRESS
    name, heal_f = STRESS.name, STRESS.heal_f

    def __init__(self, variant: str | None, host: NodeHost | None) -> None:
        super().__init__(variant, host)
        self.running: dict[str, Any] = {}

    def argv(self) -> list[str]:
        n = str(int(self.pressure.amount))
        if self.pressure.key == "vm":
            return ["stress-ng", "--vm", n, "--vm-bytes", VM_BYTES, "--quiet"]
        return ["stress-ng", "--cpu", n, "--quiet"]

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        aimed = planned_or_leader(cluster, params)
        nodes = aimed.nodes
        pids = {}
        for n in nodes:
            self._cgroup(n)
            if n in self.running:
                continue
            popen = self.host.spawn_beside(n, self.argv())
            self.running[n] = popen
            pids[n] = popen.pid
        value: dict[str, Any] = {"nodes": nodes, "targets": params.get("targets"),
                                 "argv": self.argv(), "pids": pids, **aimed.recorded()}
        if not pids:
            value[NOOP] = f"stress-ng already beside {' '.join(nodes)}"
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        nodes = sorted(self.running)
        for n in nodes:
            self.host.stop_beside(self.running.pop(n))
        return {"nodes": nodes} if nodes else {"nodes": [], NOOP: "no stress-ng was running"}

    def teardown(self, cluster: ClusterControl) -> None:
        self.heal(cluster)


def check_stress_installed() -> str | None:
    if shutil.which("stress-ng"):
        return None
    return "stress needs stress-ng: apt-get install stress-ng"


def cpu_fault(ctx: FaultContext) -> CpuLimitFault:
    return CpuLimitFault(ctx.variant, ctx.extras.get("host"))


def memory_fault(ctx: FaultContext) -> MemoryPressureFault:
    return MemoryPressureFault(ctx.variant, ctx.extras.get("host"))


def stress_fault(ctx: FaultContext) -> StressFault:
    problem = check_stress_installed()
    if problem:
        raise ValueError(problem)
    return StressFault(ctx.variant, ctx.extras.get("host"))
