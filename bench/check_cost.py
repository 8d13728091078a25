"""What a campaign's Spark check costs, for the constants of
harness/campaign/estimate.py: a session start, a cost per run, a cost per
history event.

Runs `faultline check RUN_DIR...` (embedded Spark, cold) on each given set of
run dirs, inside a cgroup of its own (v1 cpuacct, else v2), and prints the
set's runs and history events (run.json's op counts), the wall seconds, the
CPU seconds of the whole process tree (the CLI, the JVM, its Python workers)
and the load average. CPU seconds are the figure to fit: the wall a check
takes when a core is free for it; on a loaded machine the wall grows with the
load. Each check rewrites its runs' verdicts, as any re-check does. Needs root
(the cgroup).

Prints figures; asserts nothing. Usage:
    python bench/check_cost.py RUN_DIR[,RUN_DIR...] [RUN_DIR[,RUN_DIR...] ...]
e.g. one small run, one big run, three small runs, then fit
cpu = session + runs * per_run + events * per_event (docs/campaign-estimate.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness.campaign.estimate import run_events

FAULTLINE = str(Path(sys.executable).with_name("faultline"))


def cgroup(name: str) -> tuple[Path, Path]:
    """A fresh cgroup and the file that holds its CPU use."""
    v1 = Path("/sys/fs/cgroup/cpuacct")
    if v1.is_dir():
        d = v1 / name
        d.mkdir()
        return d, d / "cpuacct.usage"
    d = Path("/sys/fs/cgroup") / name
    d.mkdir()
    return d, d / "cpu.stat"


def cpu_seconds(usage: Path) -> float:
    text = usage.read_text()
    if usage.name == "cpuacct.usage":
        return int(text) / 1e9
    fields = dict(line.split() for line in text.splitlines())
    return int(fields["usage_usec"]) / 1e6


def measure(run_dirs: list[str]) -> str:
    from checkers.rundir import load_json
    events = sum(run_events(load_json(Path(d) / "run.json")) for d in run_dirs)
    group, usage = cgroup(f"faultline-check-cost-{os.getpid()}-{time.monotonic_ns()}")
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    try:
        done = subprocess.run([FAULTLINE, "check", *run_dirs], capture_output=True,
                              preexec_fn=lambda: (group / "cgroup.procs").write_text(
                                  str(os.getpid())))
        wall = time.monotonic() - t0
        cpu = cpu_seconds(usage)
    finally:
        group.rmdir()
    return (f"runs {len(run_dirs)}  events {events}  exit {done.returncode}  wall {wall:.1f} s  "
            f"cpu {cpu:.1f} s  load {load0:.1f}..{os.getloadavg()[0]:.1f}")


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    for spec in argv:
        print(measure(spec.split(",")), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
