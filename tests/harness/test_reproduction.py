"""How often a failure comes back (harness.run.reproduction): the comparison
of a replay with its original, the stored rate, gate's solid / flaky, the
campaign summary's replay command, and `replay --count`'s argument checks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.campaign.report import summarize, summary_text
from harness.cli import main
from harness.run.reproduction import (
    FLAKY,
    NOT_REPRODUCED,
    REPRODUCTION_JSON,
    SOLID,
    anomaly_kinds,
    label,
    rate_document,
    rate_line,
    read_reproduction,
    same_failure,
)

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.harness.test_gate_cli import INVALID, VALID, run_dir  # noqa: E402


def doc(valid, **checkers):
    return {"valid": valid, "checkers": {
        name: {"valid": not kinds if kinds is not None else True,
               "anomalies": [{"type": k} for k in kinds or ()]}
        for name, kinds in checkers.items()}}


LIN = doc(False, linearizability=["nonlinearizable"], stats=None)
LIN_AND_LOST = doc(False, linearizability=["nonlinearizable"], durability=["lost-write"])
LOST = doc(False, linearizability=None, durability=["lost-write"])
CLEAN = doc(True, linearizability=None)


def test_anomaly_kinds_name_invalid_checkers_only() -> None:
    assert anomaly_kinds(LIN_AND_LOST) == ["durability:lost-write",
                                           "linearizability:nonlinearizable"]
    assert anomaly_kinds(CLEAN) == [] and anomaly_kinds(None) == []


def test_a_replay_reproduces_only_the_same_verdict_and_kinds() -> None:
    assert same_failure(LIN, doc(False, linearizability=["nonlinearizable"]))
    assert not same_failure(LIN, LOST)             # invalid, but another bug
    assert not same_failure(LIN, LIN_AND_LOST)     # and something else besides
    assert not same_failure(LIN, CLEAN)
    assert not same_failure(LIN, None) and not same_failure(None, LIN)


def test_rate_document_counts_and_labels() -> None:
    replays = [{"run_dir": "/r/1", "verdicts": LIN}, {"run_dir": "/r/2", "verdicts": LOST},
               {"run_dir": None, "verdicts": None, "error": "worker died"}]
    d = rate_document("/r/0", LIN, replays, "2026-11-26T21:00:00+00:00")
    assert (d["count"], d["reproduced"], d["same_verdict"], d["label"]) == (3, 1, 2, FLAKY)
    assert [r["verdict"] for r in d["replays"]] == ["invalid", "invalid", "error"]
    assert d["replays"][2]["error"] == "worker died"
    assert rate_line(d) == ("reproduced 1 of 3 (flaky); the same verdict 2 of 3 (some "
                            "with other anomaly kinds)")
    assert label(3, 3) == SOLID and label(0, 3) == NOT_REPRODUCED and label(0, 0) == \
        NOT_REPRODUCED


def _rate(run: Path, reproduced: int, count: int) -> None:
    replays = [{"run_dir": f"/r/{i}", "verdicts": LIN if i < reproduced else CLEAN}
               for i in range(count)]
    (run / REPRODUCTION_JSON).write_text(json.dumps(
        rate_document(str(run), LIN, replays, "2026-11-26T21:00:00+00:00")))


def test_gate_marks_failures_solid_or_flaky(tmp_path: Path, capsys) -> None:
    solid, flaky = run_dir(tmp_path, "r1", INVALID), run_dir(tmp_path, "r2", INVALID)
    never, ok = run_dir(tmp_path, "r3", INVALID), run_dir(tmp_path, "r4", VALID)
    _rate(solid, 5, 5)
    _rate(flaky, 2, 5)
    _rate(ok, 0, 1)          # a valid run's rate says nothing about a failure
    assert main(["gate", str(solid), str(flaky), str(never), str(ok)]) == 1
    out = capsys.readouterr().out
    assert "reproduced 5 of 5 (solid)" in out and "reproduced 2 of 5 (flaky)" in out
    assert "reproduction: 3 invalid runs: 1 solid, 1 flaky, 0 not reproduced, 1 never " \
           "replayed" in out


def test_a_damaged_rate_is_no_rate(tmp_path: Path) -> None:
    (tmp_path / REPRODUCTION_JSON).write_text('{"count": "five"}')
    assert read_reproduction(tmp_path) is None
    (tmp_path / REPRODUCTION_JSON).write_text("not json")
    assert read_reproduction(tmp_path) is None


def test_campaign_summary_offers_the_replay_command() -> None:
    entries = [{"index": 0, "label": "raft commit-dirty", "status": "complete",
                "run_id": "r0", "run_dir": "/x/r 0", "verdict": "invalid"},
               {"index": 1, "label": "raft clean", "status": "complete", "run_id": "r1",
                "run_dir": "/x/r1", "verdict": "valid"}]
    s = summarize({"id": "c1", "name": "nightly"}, entries, {0: LIN, 1: CLEAN})
    text = summary_text(s, entries)
    assert s["invalid_runs"][0]["replay_command"] == \
        "faultline replay '/x/r 0' --count 5 --yes"
    assert "how often it comes back: faultline replay '/x/r 0' --count 5 --yes" in text
    assert "/x/r1 --count" not in text


@pytest.mark.parametrize("args, says", [
    (["--count", "0"], "--count"),
    (["--count", "2", "--parallel", "0"], "--parallel"),
    (["--parallel", "2"], "--parallel goes with --count"),
])
def test_replay_count_refuses_bad_numbers_before_anything_starts(
        tmp_path: Path, capsys, args: list[str], says: str) -> None:
    run = run_dir(tmp_path, "r1", INVALID)
    assert main(["replay", str(run), *args, "--yes", "--results", str(tmp_path / "out")]) \
        == 254
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (run / "replays").exists()
