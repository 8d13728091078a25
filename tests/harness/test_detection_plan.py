"""bench/detection.py and campaigns/calibration.toml run the same matrix, built
from nodes.raft.bugs.CALIBRATION; the bench's summary counts what it says."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.campaign.spec import load_campaign
from nodes.raft import bugs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import detection  # noqa: E402

KEYS = ("workload", "nodes", "nemesis", "nemesis_interval", "nemesis_min_duration",
        "nemesis_overlap", "time_limit", "rate", "seed",
        "bugs", "workload_options", "node_options")


def key(config: dict) -> tuple:
    def hashable(v):
        if isinstance(v, dict):
            return tuple(sorted(v.items()))
        return tuple(v) if isinstance(v, list) else v
    # An option table a config leaves out is an empty one.
    return tuple(hashable(config.get(k, {} if k.endswith("_options") else None)) for k in KEYS)


def test_every_switch_has_a_calibration_plan_with_a_known_nemesis():
    assert set(bugs.CALIBRATION) == set(bugs.KNOWN)
    from harness.run.config import RunConfig, validate
    for name in bugs.KNOWN:
        validate(RunConfig(**detection.switch_config(name, 1, 30.0) | {"bugs": [name]}))


def test_the_campaign_file_is_the_benchs_matrix():
    campaign = load_campaign(ROOT / "campaigns" / "calibration.toml")
    from_file = sorted(key(vars(r.config)) for r in campaign.runs)
    from_bench = sorted(key(p.config) for p in
                        detection.plan(sorted(bugs.CALIBRATION), 10, 1, 30.0, "both"))
    assert from_file == from_bench


def outcome(group: str, code: int, *invalid: str) -> detection.Outcome:
    return detection.Outcome(group, f"{group} run", code, list(invalid))


def test_summary_lines_count_catches_misses_errors_and_false_positives():
    outcomes = [outcome("no-pre-vote", 1, "invariants"), outcome("no-pre-vote", 1, "invariants",
                                                                   "availability"),
                outcome("no-pre-vote", 0), outcome("no-pre-vote", 255),
                outcome("correct", 0), outcome("correct", 1, "divergence"),
                outcome("correct", 2)]
    assert detection.summarize(outcomes, ["no-pre-vote"]) == [
        "no-pre-vote caught 2/3 by invariants 2, availability 1 (1 harness errors)",
        "correct false-positives 1/3 by divergence 1 (1 unknown)",
    ]
