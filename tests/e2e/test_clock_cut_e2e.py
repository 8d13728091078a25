"""`clock-cut` in a real run: the clocks set apart (one `clock` op naming each
node's offset) stay in force across the leader's cut and the election it
brings on, the cut is healed before the clocks are set right, and a replay
sets the same offsets and cuts the same node (the composition itself stays
silent there: its steps are recorded as plain faults)."""

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


def steps(run_dir: Path) -> list[tuple[str, str, dict]]:
    """(action, f, value) of each plain fault the composition fired, in order."""
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "complete"
    return [(executed_action(e), e["f"], e.get("value") or {}) for e in doc["schedule"]
            if e["f"] in ("clock", "clock-reset", "partition", "heal") and not e.get("error")]


def test_clocks_stay_apart_across_the_leader_cut_and_replay_so(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    # The hunt over this one composition: it begins at once and plays it out.
    main(["run", "--db", "raft", "--workload", "register", "--nemesis", "hunt,clock-cut",
          "--nodes", "3", "--concurrency", "3", "--rate", "50", "--time-limit", "12",
          "--recovery-time", "2", "--seed", "2", "--results", str(results)])
    (original,) = list(results.iterdir())
    first = steps(original)
    assert [(a, f) for a, f, _ in first][:4] == [
        ("inject", "clock"), ("inject", "partition"), ("heal", "heal"),
        ("heal", "clock-reset")], first
    skew, cut = first[0][2], first[1][2]
    assert skew["mode"] == "skew" and skew["offsets"] and set(skew["nodes"]) == set(
        skew["offsets"])
    assert all(clock.MIN_SKEW_S <= abs(s) <= clock.DEFAULT_MAX_SKEW_S
               for s in skew["offsets"].values())
    assert cut["shape"] == "isolate-leader" and len(cut["nodes"]) == 1
    assert not (original / "clocks").exists()       # the clock files go with the run
    capsys.readouterr()

    main(["replay", str(original), "--yes", "--results", str(tmp_path / "replays")])
    (replayed,) = list((tmp_path / "replays").iterdir())
    again = steps(replayed)
    assert [(a, f) for a, f, _ in again][:4] == [(a, f) for a, f, _ in first][:4]
    assert again[0][2]["offsets"] == skew["offsets"]
    assert again[1][2]["cut"] == cut["cut"]
