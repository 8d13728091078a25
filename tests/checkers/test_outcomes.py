"""Issue 28, finding 12: on a VALID register run 61% of the throughput chart
was red "fail", all cas mismatches. A fail is now "refused" (the system said a
definite no on the op's merits: a cas whose compare was false) or "error" (it
could not serve the op), in the live line, the chart, the ops table and the
stats checker."""

from __future__ import annotations

from pathlib import Path

from checkers.history import Op
from checkers.models import CAS_MISMATCH_ERRORS
from checkers.outcomes import OUTCOMES, REFUSAL_ERRORS, outcome
from checkers.stats import check
from harness.report.data import op_counts, timeline
from harness.report.page import write_report
from harness.run.progress import status_line
from harness.run.recorder import Recorder
from tests.harness.test_report import RunDir, run_json

S = 1_000_000_000


def test_a_compare_that_was_false_is_refused_anything_else_an_error() -> None:
    assert outcome("fail", "cas", "cas_mismatch") == "refused"
    assert outcome("fail", "cas", "cas-mismatch") == "refused"       # etcd's, redis's
    assert outcome("fail", "cas", None) == "refused"                 # Jepsen's silent one
    assert outcome("fail", "append", "type_mismatch") == "refused"
    assert outcome("fail", "cas", "not_leader") == "error"
    assert outcome("fail", "write", None) == "error"
    assert outcome("fail", "write", "unsent: connection refused") == "error"
    assert outcome("ok", "cas", None) == "ok" and outcome("info", "cas", "timeout") == "info"
    # Every spelling the linearizability model reads as a mismatch is a refusal.
    assert CAS_MISMATCH_ERRORS - {None} <= REFUSAL_ERRORS


def register_run(tmp_path: Path) -> RunDir:
    """A healthy register run: 40 ok writes, 60 cas of which 50 compared false and
    10 hit a follower (not_leader)."""
    rd = RunDir(tmp_path / "run")
    t = 0.0
    for i in range(100):
        f, error, typ = (("write", None, "ok") if i < 40 else
                         ("cas", "cas_mismatch", "fail") if i < 90 else
                         ("cas", "not_leader", "fail"))
        rd.ops.append(Op(len(rd.ops), int(t * S), i % 4, "invoke", f, [1, 2]))
        rd.ops.append(Op(len(rd.ops), int((t + 0.01) * S), i % 4, typ, f, [1, 2], None,
                         None, error))
        t += 0.05
    rd.write_history()
    rd.write_json("run.json", run_json())
    return rd


def test_chart_and_ops_table_tell_refusals_from_errors(tmp_path: Path) -> None:
    rd = register_run(tmp_path)
    tl = timeline(rd.ops, {}, {})
    assert set(tl.counts) == set(OUTCOMES)
    assert [sum(tl.counts[o]) for o in OUTCOMES] == [40, 50, 10, 0]
    assert op_counts(rd.ops)["cas"] == {"refused": 50, "error": 10}
    page = write_report(rd.path).read_text()
    assert "<title>refused</title>" in page and "<title>error</title>" in page
    assert "<title>fail</title>" not in page
    table = page[page.index("<h2>Operations"):page.index("<h2>Config")]
    assert "<th>refused</th><th>error</th>" in table


def test_stats_checker_splits_fail() -> None:
    ops = []
    for i, (typ, error) in enumerate([("ok", None), ("fail", "cas_mismatch"),
                                      ("fail", "not_leader")]):
        ops += [Op(2 * i, 2 * i, i, "invoke", "cas"), Op(2 * i + 1, 2 * i + 1, i, typ, "cas",
                                                         None, None, None, error)]
    v = check(ops)
    assert v["stats"]["by_f"]["cas"] == {"ok": 1, "fail": 2, "refused": 1, "error": 1,
                                         "info": 0}


def test_live_line_counts_refusals_and_errors_apart(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "history.msgpack")
    for error in ("cas_mismatch", "cas_mismatch", "not_leader"):
        rec.record(0, "invoke", "cas", [1, 2])
        rec.record(0, "fail", "cas", [1, 2], error=error)
    rec.record(1, "invoke", "read")
    rec.record(1, "ok", "read", 2)
    rec.close()
    line = status_line("main", 1.0, 30, rec.counts, 4.0, [])
    assert "ops 4 (ok 1 refused 2 error 1 info 0)" in line
