"""`faultline gate` on hand-made verdicts.json files: exit codes and JUnit XML."""

import json
import xml.etree.ElementTree as ET

from checkers.history import Op
from checkers.verdict_store import write_verdicts
from harness.cli import main
from harness.run.history import HistoryWriter

VALID = {"valid": True, "checkers": {
    "linearizability": {"valid": True, "anomalies": [], "stats": {"seconds": 0.2}},
    "stats": {"valid": True, "anomalies": [], "stats": {}}}}
INVALID = {"valid": False, "checkers": {
    "linearizability": {"valid": False, "anomalies": [{"type": "nonlinearizable",
                                                       "explanation": "read 3 after 4"}],
                        "stats": {}}}}
UNKNOWN = {"valid": "unknown", "checkers": {
    "elle": {"valid": "unknown", "anomalies": [], "stats": {"reason": "search budget"}}}}


def run_dir(results, name, verdicts, status="complete"):
    d = results / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"run_id": name, "status": status}))
    with HistoryWriter(d / "history.msgpack") as w:
        w.append(Op(0, 1, 0, "invoke", "read"))
        w.append(Op(1, 2, 0, "ok", "read", None))
    if verdicts is not None:
        write_verdicts(d, json.loads(json.dumps(verdicts)))
    return d


def gate(*args):
    return main(["gate", *map(str, args)])


def test_run_dirs_exit_codes(tmp_path, capsys):
    ok1, ok2 = run_dir(tmp_path, "r1", VALID), run_dir(tmp_path, "r2", VALID)
    bad, unk = run_dir(tmp_path, "r3", INVALID), run_dir(tmp_path, "r4", UNKNOWN)
    assert gate(ok1, ok2) == 0
    assert gate(ok1, bad, unk) == 1
    assert gate(ok1, bad, unk, "--allow-unknown") == 1
    assert gate(ok1, unk) == 2
    assert gate(ok1, unk, "--allow-unknown") == 0
    out = capsys.readouterr().out
    assert "gate: FAIL" in out and "read 3 after 4" in out and "(allowed)" in out


def test_unchecked_run_never_passes(tmp_path):
    assert gate(run_dir(tmp_path, "r1", None)) == 2
    assert gate(run_dir(tmp_path, "r2", None), "--allow-unknown") == 2


def test_junit_has_a_testcase_per_run_and_checker(tmp_path):
    dirs = [run_dir(tmp_path, "r1", VALID), run_dir(tmp_path, "r2", INVALID),
            run_dir(tmp_path, "r3", UNKNOWN)]
    junit = tmp_path / "out" / "gate.xml"
    junit.parent.mkdir()
    assert gate(*dirs, "--junit", junit) == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = [(t.get("classname"), t.get("name")) for t in suite.findall("testcase")]
    assert cases == [("r1", "linearizability"), ("r1", "stats"), ("r2", "linearizability"),
                     ("r3", "elle")]
    assert suite.get("failures") == "1" and suite.get("skipped") == "1"


def test_campaign_id_gates_its_runs_and_unfinished_runs_are_unknown(tmp_path):
    results = tmp_path / "results"
    r1, r2 = run_dir(results, "r1", VALID), run_dir(results, "r2", VALID)
    cdir = results / "campaigns" / "c1"
    cdir.mkdir(parents=True)
    entries = [{"index": 0, "label": "a", "run_id": "r1", "run_dir": str(r1),
                "status": "complete"},
               {"index": 1, "label": "b", "run_id": "r2", "run_dir": str(r2),
                "status": "complete"}]
    (cdir / "runs.json").write_text(json.dumps(entries))
    assert gate("c1", "--results", results) == 0
    assert gate(cdir) == 0                        # the campaign dir works too
    entries.append({"index": 2, "label": "c", "run_id": None, "run_dir": None,
                    "status": "error", "error": "RuntimeError: boom"})
    (cdir / "runs.json").write_text(json.dumps(entries))
    junit = tmp_path / "c.xml"
    assert gate("c1", "--results", results, "--junit", junit) == 2
    # A run that did not complete never passes, even with --allow-unknown (finding 1).
    assert gate("c1", "--results", results, "--allow-unknown") == 2
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("errors") == "1"
    assert "boom" in suite.findall("testcase")[-1].find("error").get("message")


def test_unknown_target_is_one_sentence(tmp_path, capsys):
    assert gate("no-such", "--results", tmp_path) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "neither a campaign" in err[0]


def test_runs_that_did_not_complete_never_pass(tmp_path, capsys):
    """Finding 1: crashed, interrupted, errored and dead-but-"running" runs, even
    with valid-looking verdicts, fail the gate with --allow-unknown; JUnit errors."""
    import os
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import psutil
    runs = [run_dir(tmp_path, "r-int", VALID, status="interrupted"),
            run_dir(tmp_path, "r-err", VALID, status="error"),
            run_dir(tmp_path, "r-run", VALID, status="running")]
    # A run.json left at "running" by a SIGKILLed harness: its pid is gone.
    doc = json.loads((runs[2] / "run.json").read_text())
    doc["harness"] = {"pid": dead.pid, "start_time": 1.0}
    (runs[2] / "run.json").write_text(json.dumps(doc))
    for d in runs:
        junit = tmp_path / f"{d.name}.xml"
        assert gate(d, "--allow-unknown", "--junit", junit) == 2
        suite = ET.parse(junit).getroot().find("testsuite")
        assert suite.get("errors") == "1" and suite.get("skipped") == "0"
    out = capsys.readouterr().out
    assert "the run is crashed" in out and "the run is interrupted" in out
    # A live harness's run is "running": not complete either.
    me = psutil.Process(os.getpid())
    doc["harness"] = {"pid": me.pid, "start_time": me.create_time()}
    (runs[2] / "run.json").write_text(json.dumps(doc))
    assert gate(runs[2], "--allow-unknown") == 2
    assert "the run is running" in capsys.readouterr().out


def test_verdicts_of_another_history_are_absent(tmp_path, capsys):
    """Finding 5: a history replaced after checking: its old VALID is not the verdict."""
    d = run_dir(tmp_path, "r1", VALID)
    assert gate(d) == 0
    (d / "history.msgpack").write_bytes(b"\x00garbage")
    assert gate(d, "--allow-unknown") == 2
    out = capsys.readouterr().out
    assert "judged another history" in out and "faultline check --in-process" in out


def test_no_empty_reason_line(tmp_path, capsys):
    unk = {"valid": "unknown", "checkers": {
        "durability": {"valid": "unknown", "anomalies": [], "stats": {}}}}
    assert gate(run_dir(tmp_path, "r1", unk)) == 2
    out = capsys.readouterr().out
    assert "durability: the checker gave no reason" in out
    assert "durability: \n" not in out


def test_a_listing_trusts_an_unchanged_stamp_but_gate_hashes(tmp_path):
    """`ls` skips hashing a history whose size and mtime are as judged; a history
    rewritten to the same size and mtime still fails the gate's digest check."""
    import os

    from checkers.verdict_store import read_verdicts
    d = run_dir(tmp_path, "r1", VALID)
    assert read_verdicts(d, quick=True).document is not None
    hist = d / "history.msgpack"
    st = hist.stat()
    data = bytearray(hist.read_bytes())
    data[-1] ^= 1
    hist.write_bytes(bytes(data))
    os.utime(hist, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert read_verdicts(d, quick=True).document is not None    # same stamp: trusted
    assert read_verdicts(d).document is None                     # the digest says no
    assert gate(d) == 2


def test_a_campaign_with_no_runs_never_passes(tmp_path, capsys):
    """Nothing judged is nothing passed: an empty runs.json read as PASS, 0 runs."""
    from harness.results.gate import decide
    cdir = tmp_path / "campaigns" / "c1"
    cdir.mkdir(parents=True)
    (cdir / "runs.json").write_text("[]")
    assert gate("c1", "--results", tmp_path, "--allow-unknown") == 2
    assert "the campaign has no runs" in capsys.readouterr().out
    (cdir / "runs.json").write_text('{"runs": 3}')
    assert gate("c1", "--results", tmp_path) == 254
    assert decide([], allow_unknown=True) == 2


def test_gate_says_which_runs_faults_never_touched_the_leader(tmp_path, capsys):
    hit = {**VALID, "coverage": {"line": "coverage: 2 faults acted, 1 hit the leader",
                                 "leader_never_hit": False}}
    missed = {**VALID, "coverage": {"line": "coverage: 3 faults acted, 0 hit the leader "
                                    "— the faults never touched the leader",
                                    "leader_never_hit": True}}
    assert gate(run_dir(tmp_path, "r1", hit), run_dir(tmp_path, "r2", missed)) == 0
    out = capsys.readouterr().out
    assert "r2: coverage: 3 faults acted, 0 hit the leader" in out
    assert "r1: coverage" not in out
    assert "coverage: 1 of 2 runs' faults never touched the leader" in out
    # Runs whose verdicts carry no coverage (checked before it existed) say nothing.
    assert gate(run_dir(tmp_path, "r3", VALID)) == 0
    assert "coverage" not in capsys.readouterr().out
