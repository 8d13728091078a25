"""A cgroup per node, for the resource-pressure faults (nemesis.pressure).

The harness makes `faultline/<run>/<node>` in each hierarchy that holds a
controller it needs (cpu, memory), starts the node's processes in it, and
removes it at teardown (journalled, so `faultline clean` removes it too).
Both cgroup layouts are handled, because this machine kind has both: on a
unified (v2) hierarchy the limits are `cpu.max` and `memory.high`, whose
`memory.events` counts the times the group went over; on a hybrid host whose
cpu and memory controllers sit in v1 hierarchies (measured here, kernel 6.18:
`/sys/fs/cgroup/cpu`, `/sys/fs/cgroup/memory`, the v2 mount at
`/sys/fs/cgroup/unified` with no controllers) they are `cpu.cfs_quota_us` /
`cpu.cfs_period_us` and `memory.limit_in_bytes` (v1 has no `memory.high`:
the squeeze reclaims the group's page cache and, past it, the OOM killer
acts), whose `memory.failcnt` counts the hits.

Parsing is pure (`parse_mounts`, `cpu_max_text`, `read_cpu_limit`); the rest
reads and writes files under /sys/fs/cgroup.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
TOP = "faultline"
CPU, MEMORY = "cpu", "memory"
PERIOD_US = 100_000
UNLIMITED = "max"
# A v1 "no limit": the largest page-aligned value the kernel reports back.
V1_UNLIMITED = 9223372036854771712


@dataclass(frozen=True)
class Hierarchy:
    """Where a controller's files are: the mount, and whether it is v2."""
    mount: Path
    v2: bool


def parse_mounts(text: str, v2_controllers: Mapping[str, str]) -> dict[str, Hierarchy]:
    """Pure: controller -> its hierarchy, from /proc/mounts and, per cgroup2
    mount point, its cgroup.controllers text. A controller enabled in a v2
    hierarchy wins over a v1 mount of it (there is never both)."""
    out: dict[str, Hierarchy] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        mount, fstype, opts = parts[1], parts[2], parts[3].split(",")
        if fstype == "cgroup2":
            for c in v2_controllers.get(mount, "").split():
                if c in (CPU, MEMORY):
                    out[c] = Hierarchy(Path(mount), True)
        elif fstype == "cgroup":
            for c in (CPU, MEMORY):
                if c in opts and c not in out:
                    out[c] = Hierarchy(Path(mount), False)
    return out


def hierarchies() -> dict[str, Hierarchy]:
    """This host's cpu and memory hierarchies (a missing one is left out)."""
    text = Path("/proc/mounts").read_text()
    v2 = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            try:
                v2[parts[1]] = (Path(parts[1]) / "cgroup.controllers").read_text()
            except OSError:
                v2[parts[1]] = ""
    return parse_mounts(text, v2)


def check_available() -> str | None:
    """None if a node's cpu and memory can be limited here, else why not."""
    found = hierarchies()
    missing = [c for c in (CPU, MEMORY) if c not in found]
    if missing:
        return f"no cgroup hierarchy with the {' and '.join(missing)} controller is mounted"
    for h in found.values():
        if not os.access(h.mount, os.W_OK):
            return f"{h.mount} is not writable (resource faults need root)"
    return None


def cpu_max_text(fraction: float | None, period_us: int = PERIOD_US) -> str:
    """Pure: the v2 `cpu.max` line for a fraction of one core (None: no limit)."""
    if fraction is None:
        return f"{UNLIMITED} {period_us}"
    return f"{max(1000, round(fraction * period_us))} {period_us}"


def read_cpu_limit(quota: str, period: str) -> float | None:
    """Pure: the fraction of a core a quota/period pair allows (None: no limit);
    v2 passes `cpu.max`'s two words, v1 cfs_quota_us and cfs_period_us."""
    if quota.strip() in (UNLIMITED, "-1"):
        return None
    return int(quota) / int(period)


@dataclass
class NodeCgroup:
    """One node's group in each hierarchy (`dirs`: controller -> its dir)."""
    node: str
    dirs: dict[str, Path] = field(default_factory=dict)
    v2: dict[str, bool] = field(default_factory=dict)

    @property
    def paths(self) -> list[Path]:
        """Each distinct dir once: a process joins the group by writing itself to each."""
        return list(dict.fromkeys(self.dirs.values()))

    def create(self) -> None:
        for c, d in self.dirs.items():
            if self.v2[c]:
                _enable_down_to(d, c)
            d.mkdir(parents=True, exist_ok=True)

    def add(self, pid: int) -> None:
        for d in self.paths:
            (d / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        out: set[int] = set()
        for d in self.paths:
            try:
                out.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                continue
        return sorted(out)

    # --- cpu ---------------------------------------------------------------

    def set_cpu(self, fraction: float | None) -> None:
        d = self.dirs[CPU]
        if self.v2[CPU]:
            (d / "cpu.max").write_text(cpu_max_text(fraction))
        else:
            (d / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            quota = -1 if fraction is None else cpu_max_text(fraction).split()[0]
            (d / "cpu.cfs_quota_us").write_text(str(quota))

    def cpu_limit(self) -> float | None:
        """The fraction of a core in force, read back from the kernel."""
        d = self.dirs[CPU]
        if self.v2[CPU]:
            quota, period = (d / "cpu.max").read_text().split()
            return read_cpu_limit(quota, period)
        return read_cpu_limit((d / "cpu.cfs_quota_us").read_text(),
                              (d / "cpu.cfs_period_us").read_text())

    def cpu_usage_s(self) -> float:
        """CPU time the group has used, s (v2 cpu.stat usage_usec; v1 cpuacct if mounted)."""
        if self.v2[CPU]:
            return _keyed(self.dirs[CPU] / "cpu.stat", "usage_usec") / 1e6
        return sum(_proc_cpu_s(pid) for pid in self.pids())

    def throttled(self) -> int:
        """Periods in which the group was throttled (cpu.stat nr_throttled)."""
        return _keyed(self.dirs[CPU] / "cpu.stat", "nr_throttled")

    # --- memory ------------------------------------------------------------

    def memory_usage(self) -> int:
        d = self.dirs[MEMORY]
        return int((d / ("memory.current" if self.v2[MEMORY]
                         else "memory.usage_in_bytes")).read_text())

    def set_memory_high(self, limit: int | None) -> None:
        """The squeeze: v2 memory.high (throttled and reclaimed above it), v1
        memory.limit_in_bytes (reclaimed, then OOM-killed above it)."""
        d = self.dirs[MEMORY]
        if self.v2[MEMORY]:
            (d / "memory.high").write_text(UNLIMITED if limit is None else str(limit))
        else:
            (d / "memory.limit_in_bytes").write_text("-1" if limit is None else str(limit))

    def memory_high(self) -> int | None:
        d = self.dirs[MEMORY]
        text = (d / ("memory.high" if self.v2[MEMORY] else "memory.limit_in_bytes")).read_text()
        value = text.strip()
        return None if value == UNLIMITED or int(value) >= V1_UNLIMITED else int(value)

    def memory_high_events(self) -> int:
        """How often the group went over its squeeze: v2 memory.events `high`,
        v1 memory.failcnt."""
        d = self.dirs[MEMORY]
        if not self.v2[MEMORY]:
            return int((d / "memory.failcnt").read_text())
        return _keyed(d / "memory.events", "high")

    def oom_kills(self) -> int:
        d = self.dirs[MEMORY]
        return _keyed(d / ("memory.events" if self.v2[MEMORY] else "memory.oom_control"),
                      "oom_kill")

    def reset(self) -> None:
        """Every limit lifted."""
        self.set_cpu(None)
        self.set_memory_high(None)


def node_cgroup(run_id: str, node: str, found: Mapping[str, Hierarchy] | None = None
                ) -> NodeCgroup:
    found = hierarchies() if found is None else found
    cg = NodeCgroup(node)
    for c, h in found.items():
        cg.dirs[c] = h.mount / TOP / run_id / node
        cg.v2[c] = h.v2
    return cg


def _enable_down_to(d: Path, controller: str) -> None:
    """v2: a controller is usable in a group only if every parent enables it
    for its children (cgroup.subtree_control)."""
    root = next(p for p in d.parents if (p / "cgroup.controllers").exists()
                and not (p.parent / "cgroup.controllers").exists())
    chain = [p for p in reversed(d.parents) if root in (p, *p.parents)]
    for p in chain:
        p.mkdir(exist_ok=True)
        control = p / "cgroup.subtree_control"
        if controller not in control.read_text().split():
            control.write_text(f"+{controller}")


def _keyed(path: Path, key: str) -> int:
    """One counter of a flat keyed file ("key value" lines: cpu.stat,
    memory.events, memory.oom_control); 0 if it has none."""
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def join_cgroups(paths: Iterable[Path]) -> None:
    """In a child before it execs: move this process into each group."""
    for p in paths:
        with open(Path(p) / "cgroup.procs", "w") as f:
            f.write(str(os.getpid()))


def _proc_cpu_s(pid: int) -> float:
    try:
        fields_ = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the name.
    ticks = sum(int(x) for x in fields_[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def remove(dirs: Iterable[Path], timeout: float = 5.0) -> list[str]:
    """Kill what is left in the groups, then remove them and the run's parent
    dir when empty; returns what was done. Idempotent."""
    done = []
    for d in dirs:
        if not d.is_dir():
            continue
        deadline = time.monotonic() + timeout
        while True:
            try:
                pids = [int(p) for p in (d / "cgroup.procs").read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                d.rmdir()
                done.append(f"removed cgroup {d}")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if d.parent.parent.name == TOP:   # the run's dir; TOP stays for other runs
            try:
                d.parent.rmdir()
            except OSError:
                pass
    return done
