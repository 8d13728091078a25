"""bench/reproduction.py: the targets it plans and the table it prints over
their outcomes (issue 33's done-when counts)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
import nemesis.base  # noqa: E402, F401 (first: bench/nemesis.py would shadow the package)

sys.path.append(str(ROOT / "bench"))

import reproduction  # noqa: E402

from nodes.raft.bugs import CALIBRATION  # noqa: E402


def test_targets_alternate_switches_and_unplanted_bugs_with_their_plans():
    got = reproduction.targets(["commit-dirty", "truncate-to-hw"],
                               ["cas-absent-key", "txn-reads-first:list-append"], 15, 20)
    assert [t["name"] for t in got] == ["commit-dirty", "cas-absent-key", "truncate-to-hw",
                                        "txn-reads-first:list-append"]
    designed = ",".join(CALIBRATION["commit-dirty"]["nemesis"])
    assert "--bug" in got[0]["args"] and designed in got[0]["args"]
    assert got[3]["bug"] == "txn-reads-first" and "list-append" in got[3]["args"]
    assert "--nemesis" not in got[1]["args"]          # the hunt's default run
    assert reproduction.live(got[0]) and not reproduction.live(got[1])
    assert not reproduction.live(got[2])              # a partition fires on no event


def row(name, exit_code=1, history=None, schedule=None):
    return {"name": name, "run": {"exit": exit_code, "invalid": ["linearizability"]},
            "replay": {"reproduced": 2, "count": 5, "same_verdict": 4, "label": "flaky"},
            "history": history, "schedule": schedule}


def test_the_table_counts_what_met_the_issues_bars_and_what_did_not():
    small = {"checker": "linearizability", "before": 1000, "after": 3, "verdict_kept": True}
    big = {"checker": "elle", "before": 100, "after": 20, "verdict_kept": True}
    few = {"faults_before": 4, "faults_after": 2, "time_limit": 9.0, "reproduced": 2,
           "count": 2, "needed_rate": 0.5, "replays_spent": 8}
    many = few | {"faults_after": 4}
    weaker = few | {"reproduced": 0}
    rows = [row("a", history=small, schedule=few), row("b", history=big, schedule=many),
            row("c", history={"refused": "judged by divergence"}, schedule=weaker),
            row("d", exit_code=0)]
    lines = reproduction.table(rows)
    assert "| d | not invalid (exit 0; last seed 1) | - | - | - |" in lines
    assert any("1000 -> 3 ops (0.3%), verdict kept" in ln for ln in lines)
    assert any("100 -> 20 ops (20.0%) (over 10%)" in ln for ln in lines)
    assert any("refused: judged by divergence" in ln for ln in lines)
    assert "- failing runs: 3 of 4 targets; a replay rate for 3 of them" in lines
    assert any(ln.startswith("- history shrunk to at most 10% of its ops with the verdict "
                             "kept: 1 of 2 shrinkable; 1 refused") for ln in lines)
    assert lines[-1].endswith(": 1 of 3 tried")


def test_the_seeds_tried_are_shown_misses_included():
    args = reproduction.targets([], ["cas-absent-key"], 15, 30)[0]["args"]
    assert reproduction.with_seed(args, 3)[args.index("--seed") + 1] == "3"
    assert args[args.index("--seed") + 1] == "1"                    # not changed in place
    found = row("e")
    found["run"] |= {"seeds_tried": [1, 2], "exits": [0, 1]}
    missed = row("f", exit_code=0)
    missed["run"] |= {"seeds_tried": [1, 2], "exits": [2, 0]}
    lines = reproduction.table([found, missed])
    assert lines[2].startswith("| e | linearizability; seed 2 (2 tried: exits 0, 1) |")
    assert lines[3] == "| f | not invalid (exit 0; last seed 2 (2 tried: exits 2, 0)) | - | - | - |"
    assert "- failing runs: 1 of 2 targets; a replay rate for 1 of them" in lines
