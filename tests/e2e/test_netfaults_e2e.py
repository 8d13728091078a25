"""Network quality faults in a real run and its replay: raft under a delay
on the leader's links and a rate cap, recorded with the links they acted on;
the replay applies the same faults to the same links at the same times; each
run leaves nothing behind (namespaces, queue processes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from harness.cli import main
from harness.run.replay import executed_action
from nemesis.netns import netns_of_run
from nemesis.netshape import queue_available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
    pytest.mark.skipif(queue_available() is not None,
                       reason=f"packet queue unavailable: {queue_available()}"),
]

NEMESIS = "packet:delay=30ms,jitter=5ms,links=isolate-one,bandwidth:rate=2mbit,links=all"


def executed(run_dir: Path) -> list[tuple[str, str, object, object]]:
    doc = json.loads((run_dir / "run.json").read_text())
    out = []
    for e in doc["schedule"]:
        assert e["error"] is None, e
        value = e["value"] if isinstance(e["value"], dict) else {}
        links = value.get("links") if executed_action(e) == "inject" else value.get("restored")
        out.append((e["f"], e["fault"], links, value.get("quality")))
    return out


def queue_processes() -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if "nemesis.netqueue_main" in (p.info["cmdline"] or [])]


def test_a_run_and_its_replay_apply_the_same_degraded_links(tmp_path: Path, capsys) -> None:
    before = set(queue_processes())
    results = tmp_path / "results"
    main(["run", "--db", "raft", "--workload", "register", "--nemesis", NEMESIS,
          "--nodes", "3", "--concurrency", "3", "--rate", "50", "--time-limit", "10",
          "--nemesis-interval", "1", "--recovery-time", "2", "--seed", "7",
          "--results", str(results)])
    (original,) = list(results.iterdir())
    ran = executed(original)
    assert {f for f, *_ in ran} >= {"packet", "restore-packets"}
    delays = [e for e in ran if e[0] == "packet"]
    assert all(q == {"delay": 30.0, "jitter": 5.0} and links for _, _, links, q in delays)
    capsys.readouterr()

    main(["replay", str(original), "--yes", "--results", str(tmp_path / "replays")])
    (replayed,) = list((tmp_path / "replays").iterdir())
    assert executed(replayed) == ran
    for run_dir in (original, replayed):
        assert netns_of_run(run_dir.name) == []
    assert set(queue_processes()) <= before
