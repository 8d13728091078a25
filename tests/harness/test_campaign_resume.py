"""Resume planning and the campaign summary (fast: hand-made run dirs, no runs)."""

import json

from harness.campaign.report import summarize, summary_text
from harness.campaign.runner import exit_code_of
from harness.campaign.store import RunState, new_entry, plan_resume, read_run_state, redo_reason


def make_run(tmp_path, name, status="complete", history=True):
    d = tmp_path / name
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"run_id": name, "status": status}))
    if history:
        (d / "history.msgpack").write_bytes(b"")
    return d


def test_redo_reasons():
    assert redo_reason(RunState(True, "complete", True)) is None
    assert redo_reason(RunState(False)) == "never ran"
    assert redo_reason(RunState(True, "error", True)) == "status error"
    assert redo_reason(RunState(True, "running", False)) == "status running"
    assert redo_reason(RunState(True, None, True)) == "status unreadable"
    assert redo_reason(RunState(True, "complete", False)) == "history missing"


def test_plan_resume_skips_only_complete_runs(tmp_path):
    dirs = [make_run(tmp_path, "a"), make_run(tmp_path, "b", status="error"),
            make_run(tmp_path, "c", history=False), make_run(tmp_path, "d", status="running")]
    entries = [new_entry(i, f"run {i}", {}) for i in range(6)]
    for e, d in zip(entries, dirs, strict=False):
        e["run_dir"] = str(d)
    entries[5]["run_dir"] = str(tmp_path / "gone")
    states = {e["index"]: read_run_state(e["run_dir"]) for e in entries}
    assert plan_resume(entries, states) == {1: "status error", 2: "history missing",
                                            3: "status running", 4: "never ran",
                                            5: "never ran"}


def test_read_run_state_survives_a_torn_run_json(tmp_path):
    d = tmp_path / "torn"
    d.mkdir()
    (d / "run.json").write_text('{"status": "compl')
    assert read_run_state(str(d)) == RunState(True, None, False)


def test_summary_counts_and_first_anomalies():
    entries = [new_entry(i, f"run {i}", {}) for i in range(4)]
    for i, e in enumerate(entries[:3]):
        e.update(status="complete", run_id=f"r{i}", run_dir=f"/x/r{i}")
    entries[3].update(status="error", error="RuntimeError: boom")
    anomaly = {"type": "G1c", "cycle": [1, 2]}
    documents = {
        0: {"valid": True, "checkers": {"elle": {"valid": True, "anomalies": []}}},
        1: {"valid": False, "checkers": {
            "stats": {"valid": True, "anomalies": []},
            "elle": {"valid": False, "anomalies": [anomaly, {"type": "G0"}]}}},
        2: {"valid": "unknown", "checkers": {"elle": {"valid": "unknown", "anomalies": []}}},
    }
    s = summarize({"id": "c1", "name": "t"}, entries, documents)
    assert s["counts"] == {"valid": 1, "invalid": 1, "unknown": 1, "error": 1}
    assert s["invalid_runs"] == [{"index": 1, "label": "run 1", "run_id": "r1",
                                  "run_dir": "/x/r1", "checker": "elle", "anomaly_count": 2,
                                  "anomaly": anomaly,
                                  "sentences": ["A G1c anomaly: cycle [1, 2].",
                                                "A G0 anomaly."],
                                  "replay_command": "faultline replay /x/r1 --count 5 --yes"}]
    assert s["failed_runs"][0]["error"] == "RuntimeError: boom"
    text = summary_text(s, entries)
    assert "valid 1  invalid 1  unknown 1  error 1" in text
    assert "- A G1c anomaly: cycle [1, 2]." in text
    assert exit_code_of(s["counts"]) == 1


def test_campaign_exit_codes():
    zero = {"valid": 3, "invalid": 0, "unknown": 0, "error": 0}
    assert exit_code_of(zero) == 0
    assert exit_code_of({**zero, "unknown": 1}) == 2
    assert exit_code_of({**zero, "unknown": 1, "error": 1}) == 255
    assert exit_code_of({**zero, "invalid": 1, "error": 1}) == 1
