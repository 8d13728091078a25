"""Overlapping fault families in a real run (`--nemesis-overlap`): a
partition and a skewed clock in force at once on the raft node, recorded as
executed, and a replay that reapplies both, overlapping as they did."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.replay import executed_action
from nemesis import clock

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for namespaces"),
    pytest.mark.skipif(clock.check_installed() is not None, reason="libfaketime not installed"),
]

NEMESIS = "partition:isolate-one,clock:skew=4"


def executed(run_dir: Path) -> list[dict]:
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "complete"
    return [e for e in doc["schedule"] if not e.get("error")]


def overlaps(entries: list[dict]) -> int:
    """Injects made while a fault of the other family was in force (by the
    recorded times)."""
    on: set[str] = set()
    count = 0
    for e in sorted(entries, key=lambda e: e["time"]):
        family = e["f"] if executed_action(e) == "inject" else e["fault"].split(":")[0]
        if executed_action(e) == "inject":
            count += bool(on - {family})
            on.add(family)
        else:
            on.discard(family)
    return count


def injects(entries: list[dict]) -> list[tuple[str, str, list[str] | None]]:
    return [(e["f"], e["fault"], (e["value"] or {}).get("nodes")) for e in entries
            if executed_action(e) == "inject"]


def test_two_families_in_force_at_once_and_replayed_so(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    # Seed 3's plan (pure, nemesis.schedule) overlaps a skew with a partition
    # more than once in 16 s; the executed list follows the plan.
    main(["run", "--db", "raft", "--workload", "register", "--nemesis", NEMESIS,
          "--nemesis-overlap", "--nodes", "3", "--concurrency", "3", "--rate", "50",
          "--time-limit", "16", "--nemesis-interval", "1.5", "--recovery-time", "2",
          "--seed", "3", "--results", str(results)])
    (original,) = list(results.iterdir())
    first = executed(original)
    assert {"partition", "clock"} <= {e["f"] for e in first}
    assert overlaps(first) >= 1, first
    assert not (original / "clocks").exists()       # the clock files go with the run
    capsys.readouterr()

    main(["replay", str(original), "--yes", "--results", str(tmp_path / "replays")])
    (replayed,) = list((tmp_path / "replays").iterdir())
    again = executed(replayed)
    assert injects(again) == injects(first)
    assert overlaps(again) >= 1, again
    assert not (replayed / "clocks").exists()
