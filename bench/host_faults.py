"""What the host faults' mechanisms do on this machine (docs/faults.md):

1. libfaketime's cost per clock call in a Python process (no preload; the
   node's settings, the control file read at every call; a 1 s cache), and
   the offset a child reads right after its control file changes;
2. the CPU a busy loop gets in a node cgroup under `cpu:limit=F`, as a
   fraction of a core (CPU seconds / wall seconds over a few seconds);
3. what a `memory:pressure=1.0` squeeze does to a process writing 64 MiB:
   the kernel's count of hits, OOM kills, the usage at the end.

Needs root (cgroups). Prints figures; asserts nothing. Usage:
    python -P bench/host_faults.py   (-P: bench/nemesis.py would shadow the package)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nemesis import cgroups, clock

CALLS = r"""
import time
n = 200000
for f in (time.time, time.monotonic):
    t = time.perf_counter()
    for _ in range(n):
        f()
    print(f.__name__, round((time.perf_counter() - t) / n * 1e9))
"""


def clock_cost(tmp: Path) -> None:
    control = tmp / "n.faketime"
    clock.write_offset(control, 0)
    node_env = clock.faketime_env(control)
    cached = {**node_env, "FAKETIME_CACHE_DURATION": "1"}
    del cached["FAKETIME_NO_CACHE"]
    for label, extra in (("no preload", {}), ("node settings (no cache)", node_env),
                         ("1 s cache", cached)):
        out = subprocess.run([sys.executable, "-c", CALLS], env={**os.environ, **extra},
                             capture_output=True, text=True, check=True).stdout.split()
        print(f"clock call, {label}: time.time {out[1]} ns, time.monotonic {out[3]} ns")
    reader = subprocess.Popen([sys.executable, "-c",
                               "import sys, time\nfor _ in sys.stdin: print(time.time(), "
                               "flush=True)"], env={**os.environ, **node_env},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert reader.stdin is not None and reader.stdout is not None
    reader.stdin.write("\n")     # wait until it runs: its start is not the offset
    reader.stdin.flush()
    reader.stdout.readline()
    for offset in (0, 30, -30, 0.5, 0):
        clock.write_offset(control, offset)
        before = time.time()
        reader.stdin.write("\n")
        reader.stdin.flush()
        seen = float(reader.stdout.readline())
        print(f"offset asked {offset:+g} s, read in the child at once: "
              f"{seen - before:+.4f} s")
    reader.kill()


def cpu_limits(run_id: str) -> None:
    cg = cgroups.node_cgroup(run_id, "cpu")
    cg.create()
    try:
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                               preexec_fn=lambda: cgroups.join_cgroups(cg.paths))
        for fraction in (0.05, 0.1, 0.25, 0.5, None):
            cg.set_cpu(fraction)
            time.sleep(0.3)
            cpu0, t0 = cg.cpu_usage_s(), time.monotonic()
            time.sleep(3)
            used, wall = cg.cpu_usage_s() - cpu0, time.monotonic() - t0
            print(f"cpu:limit={fraction}: read back {cg.cpu_limit()}, a busy loop got "
                  f"{used / wall:.3f} of a core over {wall:.1f} s")
        hog.kill()
        hog.wait()
    finally:
        cgroups.remove(cg.paths)


FILL = r"""
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
with open(sys.argv[1], "wb") as f:
    signal.sigwait({signal.SIGUSR1})
    for _ in range(64):
        f.write(os.urandom(1 << 20))
        f.flush()
print("done", flush=True)
"""


def memory_squeeze(run_id: str, tmp: Path) -> None:
    cg = cgroups.node_cgroup(run_id, "mem")
    cg.create()
    try:
        fill = tmp / "fill"
        writer = subprocess.Popen([sys.executable, "-c", FILL, str(fill)],
                                  preexec_fn=lambda: cgroups.join_cgroups(cg.paths))
        while not fill.exists():
            time.sleep(0.01)
        used = cg.memory_usage()
        cg.set_memory_high(used)
        events, kills = cg.memory_high_events(), cg.oom_kills()
        t0 = time.monotonic()
        os.kill(writer.pid, 10)
        status = writer.wait(timeout=120)
        print(f"memory:pressure=1.0 ({'v2 memory.high' if cg.v2['memory'] else 'v1 limit'} "
              f"{used >> 20} MiB): writing 64 MiB took {time.monotonic() - t0:.2f} s, exit "
              f"{status}, hits {cg.memory_high_events() - events}, OOM kills "
              f"{cg.oom_kills() - kills}, usage after {cg.memory_usage() >> 20} MiB")
    finally:
        cgroups.remove(cg.paths)


def main() -> None:
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load", os.getloadavg())
    run_id = f"bench-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        clock_cost(Path(tmp))
        cpu_limits(run_id)
        memory_squeeze(run_id, Path(tmp))


if __name__ == "__main__":
    main()
