"""report.html's leader changes and fault coverage for a system that prints no
election events: counted from the harness's poll of the adapter (run.json
`leaders`), else said to be not observed, never 0; the coverage line from
verdicts.json sits next to the verdict."""

from __future__ import annotations

from pathlib import Path

from checkers.coverage import run_coverage
from checkers.history import read_history
from harness.report.page import write_report
from tests.harness.test_report import START, RunDir, leader, run_json

S = 1_000_000_000


def plain_run(tmp_path: Path, **extra: object) -> RunDir:
    rd = RunDir(tmp_path / "run")
    rd.client_ops(0.0, 6.0)
    rd.fault(2.0, "kill", {"nodes": ["n3"]}, 3.0, "start")
    rd.write_history()
    rd.write_json("run.json", {**run_json(db="mystore"), **extra})
    return rd


def judged(rd: RunDir, run: dict) -> None:
    ops = read_history(rd.path / "history.msgpack").ops
    cov = run_coverage(ops, {}, run)
    rd.write_json("verdicts.json", {"valid": True, "checkers": {}, "coverage": cov})


POLLED = {"source": "polled DB.leader()", "poll_s": 0.5, "polls": 12, "errors": 0,
          "changes": [[0, "n1"], [int(1.0 * S), None], [int(1.5 * S), "n2"],
                      [int(4.0 * S), "n3"]]}


def test_polled_leaders_are_counted_and_plotted(tmp_path: Path) -> None:
    run = {**run_json(db="mystore"), "leaders": POLLED}
    rd = plain_run(tmp_path, leaders=POLLED)
    judged(rd, run)
    page = write_report(rd.path).read_text()
    assert "2 leader changes (polled)" in page
    assert "not observed" not in page
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "new leader: n2, at 1.50 s" in svg
    # n2 led when n3 was killed: the coverage line says the leader was never hit.
    assert "<b>coverage: 1 fault acted, 0 hit the leader" in page
    assert "never touched the leader" in page


def test_without_events_or_polls_leader_changes_are_not_observed(tmp_path: Path) -> None:
    rd = plain_run(tmp_path)
    judged(rd, run_json(db="mystore"))
    page = write_report(rd.path).read_text()
    assert "leader changes: not observed (the system reports no leader)" in page
    assert "0 leader changes" not in page
    assert "leader hits unknown" in page


def test_event_leaders_still_come_first(tmp_path: Path) -> None:
    rd = plain_run(tmp_path, leaders=POLLED)
    rd.node_events("n3", [leader(0.0, 1)])
    rd.write_json("verdicts.json", {"valid": True, "checkers": {}})
    page = write_report(rd.path).read_text()
    assert "0 leader changes" in page and "(polled)" not in page
    assert START > 0


def test_coverage_read_off_the_run_dir_matches_the_loaded_run(tmp_path: Path) -> None:
    """The Spark check's reader (nemesis ops and role events only) gives what
    the in-process check gives."""
    from checkers.coverage import coverage_of_run_dir
    from checkers.rundir import load_run
    rd = plain_run(tmp_path)
    rd.node_events("n3", [leader(0.0, 1), {"t": START, "event": "start"}])
    loaded = load_run(rd.path)
    want = run_coverage(loaded.history.ops, loaded.events, loaded.run)
    assert want["leader_source"] == "events" and want["hit_leader"] == 1
    assert coverage_of_run_dir(rd.path, loaded.run) == want


def test_event_lines_without_an_election_are_zero_changes_not_unobserved(tmp_path: Path) -> None:
    rd = plain_run(tmp_path)
    rd.node_events("n1", [{"t": START, "event": "start"}])
    rd.write_json("verdicts.json", {"valid": True, "checkers": {}})
    page = write_report(rd.path).read_text()
    assert "0 leader changes" in page and "not observed" not in page
