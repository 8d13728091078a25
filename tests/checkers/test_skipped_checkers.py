"""Checkers a plugin system gives nothing to judge are listed, with their
reason, in verdicts.json, the end-of-run lines, the report and `gate` — and
they neither pass nor fail the gate."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from checkers.history import Op
from checkers.registry import CHECKS, skipped_checks
from checkers.verdict_store import write_verdicts
from harness.cli import main
from harness.commands.run import print_outcome
from harness.report.html import _checkers
from harness.results.gate import SKIPPED, GateCase, cases_from_verdicts, decide
from harness.run.history import HistoryWriter
from harness.run.lifecycle import RunOutcome

# A system that leaves the harness's own artefacts but no log dumps or event lines.
PLUGIN_RUN = {"config": {"db": "toystore"},
              "artifacts": ["applied_state", "node_logs", "node_exits"]}
PLAN = {"stats": {}, "elections": {}, "invariants": {}, "divergence": {}, "node-logs": {}}
VERDICTS = {"valid": True,
            "checkers": {"stats": {"valid": True, "anomalies": [], "stats": {}},
                         "node-logs": {"valid": True, "anomalies": [], "stats": {}}},
            "skipped": {"elections": "toystore leaves no event lines",
                        "divergence": "toystore leaves no log dumps"}}


def test_skip_reasons_name_the_missing_artefact_in_words():
    skipped = skipped_checks(PLUGIN_RUN, PLAN)
    assert skipped == {"elections": "toystore leaves no event lines",
                       "invariants": "toystore leaves no event lines",
                       "divergence": "toystore leaves no log dumps"}
    assert not any("eventss" in why or "_" in why for why in skipped.values())


def test_a_system_with_every_artefact_skips_nothing():
    every = set().union(*(c.needs({}) for c in CHECKS.values()))
    assert skipped_checks({"config": {"db": "raft"}, "artifacts": sorted(every)}, PLAN) == {}


def test_end_of_run_lines_list_skipped_checkers(tmp_path, capsys):
    print_outcome(RunOutcome(tmp_path, VERDICTS, 0))
    out = capsys.readouterr().out
    assert "elections        skipped  toystore leaves no event lines" in out
    assert "divergence       skipped  toystore leaves no log dumps" in out


def test_report_lists_skipped_checkers_with_reasons():
    html = _checkers(VERDICTS)
    assert "2 checkers skipped" in html
    assert "<b>elections</b>: toystore leaves no event lines" in html
    assert "<b>divergence</b>: toystore leaves no log dumps" in html
    assert "skipped" not in _checkers({**VERDICTS, "skipped": {}})


def test_skipped_cases_neither_pass_nor_fail_a_gate():
    cases = cases_from_verdicts("r1", VERDICTS)
    assert GateCase("r1", "elections", SKIPPED, "toystore leaves no event lines") in cases
    assert decide(cases) == 0
    invalid = {**VERDICTS, "checkers": {"stats": {"valid": False, "anomalies": [{}]}}}
    assert decide(cases_from_verdicts("r1", invalid)) == 1
    only_skipped = {"valid": True, "checkers": {}, "skipped": VERDICTS["skipped"]}
    assert decide(cases_from_verdicts("r1", only_skipped)) == 2   # nothing judged


def _run_dir(results: Path) -> Path:
    d = results / "r1"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"run_id": "r1", "status": "complete"}))
    with HistoryWriter(d / "history.msgpack") as w:
        w.append(Op(0, 1, 0, "invoke", "read"))
        w.append(Op(1, 2, 0, "ok", "read", None))
    write_verdicts(d, json.loads(json.dumps(VERDICTS)))
    return d


def test_gate_prints_skipped_checkers_and_junit_marks_them(tmp_path, capsys):
    d = _run_dir(tmp_path)
    junit = tmp_path / "gate.xml"
    assert main(["gate", str(d), "--junit", str(junit)]) == 0
    out = capsys.readouterr().out
    assert "skipped  r1 elections: toystore leaves no event lines" in out
    assert "skipped  r1 divergence: toystore leaves no log dumps" in out
    assert "gate: PASS: 1 runs, 2 checks" in out and "2 skipped" in out
    tcs = {tc.get("name"): tc for tc in ET.parse(junit).getroot().iter("testcase")}
    assert tcs["elections"].find("skipped").get("message") == (
        "not run: toystore leaves no event lines")
