"""Issue 28, finding 12: a campaign's time estimate left out the Spark check
(the smoke campaign: "about 38 s" shown, 1 min 49 s taken). The estimate is now
its runs plus the check: a session start, a cost per run and per history
event, the events planned from the rate, or read from the runs' op counts
once they have run."""

from __future__ import annotations

from pathlib import Path

from harness.campaign.estimate import (
    CHECK_PER_EVENT_S,
    CHECK_PER_RUN_S,
    SPARK_SESSION_S,
    UNPACED_OPS_PER_S,
    check_seconds,
    estimate,
    planned_events,
    run_events,
)
from harness.campaign.spec import load_campaign
from harness.cli import main
from harness.run.config import RunConfig

CAMPAIGNS = Path(__file__).resolve().parents[2] / "campaigns"


def test_the_smoke_campaign_estimate_includes_the_check(capsys) -> None:
    smoke = load_campaign(CAMPAIGNS / "smoke.toml")
    e = estimate((r.config for r in smoke.runs), parallel=2)
    assert round(e.runs_s) == 38                      # what was shown before, runs only
    events = sum(planned_events(r.config) for r in smoke.runs)
    assert events == 3 * 100 * (8 + 2) * 2            # rate x (time limit + recovery) x 2
    assert e.check_s == SPARK_SESSION_S + 3 * CHECK_PER_RUN_S + events * CHECK_PER_EVENT_S
    assert e.total_s == e.runs_s + e.check_s
    assert main(["campaign", str(CAMPAIGNS / "smoke.toml"), "--dry-run", "--parallel", "2"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "Spark check" in last and "runs 38 s" in last


def test_check_time_grows_with_runs_and_events() -> None:
    assert check_seconds(0, 0) == 0.0                  # nothing to check: no session
    assert check_seconds(1, 0) < check_seconds(2, 0) < check_seconds(2, 10_000)
    unpaced = RunConfig(rate=0, time_limit=10, recovery_time=0)
    assert planned_events(unpaced) == int(UNPACED_OPS_PER_S * 10 * 2)


def test_finished_runs_count_their_events_once() -> None:
    # run.json's op counts hold fail and its split into refused and error.
    run = {"op_counts": {"ok": 100, "fail": 30, "refused": 20, "error": 10, "info": 5}}
    assert run_events(run) == 270
    assert run_events({}) == 0 and run_events({"op_counts": "junk"}) == 0
