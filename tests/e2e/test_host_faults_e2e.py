"""Host faults in real runs of the raft node: each family recorded as
executed with what the kernel had in force, replayed with the same events,
and nothing left afterwards (no cgroup of the run, no stress-ng)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from harness.cli import main
from harness.run.replay import executed_action
from nemesis import cgroups, clock

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for namespaces and cgroups"),
    pytest.mark.skipif(clock.check_installed() is not None, reason="libfaketime not installed"),
    pytest.mark.skipif(cgroups.check_available() is not None, reason="no cgroup cpu/memory"),
]

NEMESIS = "clock:skew=4,cpu:limit=0.2,memory:pressure=1.0,stress:cpu=1"


def injects(run_dir: Path) -> list[tuple[str, str, list[str] | None]]:
    doc = json.loads((run_dir / "run.json").read_text())
    return [(e["f"], e["fault"], (e["value"] or {}).get("nodes"))
            for e in doc["schedule"] if executed_action(e) == "inject"]


def leftovers(run_dir: Path) -> list[str]:
    """The run's cgroups, and the stress-ng processes it started, still there."""
    run_id = run_dir.name
    found = [str(h.mount / cgroups.TOP / run_id) for h in cgroups.hierarchies().values()
             if (h.mount / cgroups.TOP / run_id).exists()]
    doc = json.loads((run_dir / "run.json").read_text())
    pids = [pid for e in doc["schedule"] if e["f"] == "stress" and not e.get("error")
            for pid in (e["value"].get("pids") or {}).values()]
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.name().startswith("stress-ng") and p.status() != psutil.STATUS_ZOMBIE:
                found.append(f"stress-ng {pid}")
        except psutil.NoSuchProcess:
            pass
    return found


def test_host_faults_run_replay_and_leave_nothing(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    main(["run", "--db", "raft", "--workload", "register", "--nemesis", NEMESIS,
          "--nodes", "3", "--concurrency", "3", "--rate", "50", "--time-limit", "16",
          "--nemesis-interval", "1", "--recovery-time", "2", "--seed", "11",
          "--results", str(results)])
    (original,) = list(results.iterdir())
    doc = json.loads((original / "run.json").read_text())
    assert doc["status"] == "complete"
    by_f = {e["f"]: e for e in doc["schedule"] if not e.get("error")}
    assert {"clock", "cpu", "memory", "stress"} <= set(by_f), doc["schedule"]
    n = by_f["clock"]["value"]["nodes"][0]
    assert by_f["clock"]["value"]["offsets"] == {n: 4.0}
    # The pressure faults draw a node set (one, a minority, a majority, all).
    cpu = by_f["cpu"]["value"]
    assert cpu["nodes"] and cpu["in_force"] == {n: 0.2 for n in cpu["nodes"]}
    mem = by_f["memory"]["value"]
    assert all(mem["in_force"][n] <= mem["used"][n] + (1 << 20) for n in mem["nodes"])
    assert by_f["stress"]["value"]["pids"]
    for heal in ("clock-reset", "cpu-restore", "memory-restore", "stress-stop"):
        assert heal in {e["f"] for e in doc["schedule"]}
    assert leftovers(original) == []
    assert not (original / "clocks").exists()
    capsys.readouterr()

    main(["replay", str(original), "--yes", "--results", str(tmp_path / "replays")])
    (replayed,) = list((tmp_path / "replays").iterdir())
    assert injects(replayed) == injects(original)
    assert leftovers(replayed) == []
