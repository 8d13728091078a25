"""One campaign process per campaign, and a killed campaign's workers adopted
(issue 28, finding 5; fast: hand-made campaign dirs, real lock holders).
The end-to-end kills at every phase boundary are in test_campaign_kill.py."""

import json
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.campaign.locks import (
    campaign_lock,
    take_run_lock,
    wait_for_worker,
    worker_alive,
)
from harness.campaign.runner import _collect_orphan_outcomes
from harness.campaign.store import new_entry, write_json
from harness.run.errors import EXIT_BAD_INPUT, UserError

REPO = Path(__file__).resolve().parents[2]
CAMPAIGN_ID = "20260101T000000Z-000000"
CLI = [sys.executable, "-c",
       "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"]


def make_campaign(results, n=2):
    cdir = results / "campaigns" / CAMPAIGN_ID
    (cdir / "work").mkdir(parents=True)
    write_json(cdir / "campaign.json", {"id": CAMPAIGN_ID, "name": "t", "parallel": 1,
                                          "created": "2026-01-01T00:00:00+00:00"})
    write_json(cdir / "runs.json", [new_entry(i, f"run {i}", {}) for i in range(n)])
    return cdir


def make_run(results, name, status="complete"):
    d = results / name
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"run_id": name, "status": status}))
    (d / "history.msgpack").write_bytes(b"")
    return str(d)


def test_a_second_resume_is_refused_naming_the_holder(tmp_path):
    results = tmp_path / "results"
    cdir = make_campaign(results)
    runs_before = (cdir / "runs.json").read_text()
    with campaign_lock(cdir):
        proc = subprocess.run([*CLI, "campaign", "--resume", CAMPAIGN_ID,
                               "--results", str(results)],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    assert f"pid {os.getpid()} on {platform.node()}" in proc.stderr
    assert f"campaign {CAMPAIGN_ID} is in use" in proc.stderr
    assert (cdir / "runs.json").read_text() == runs_before   # nothing started


def test_the_lock_in_process_is_exclusive_too(tmp_path):
    cdir = make_campaign(tmp_path / "results")
    with campaign_lock(cdir), pytest.raises(UserError, match="in use by pid"):
        with campaign_lock(cdir):
            pass
    with campaign_lock(cdir):   # released on exit
        pass


HOLDER = r"""
import sys, time
from pathlib import Path
from harness.campaign.locks import campaign_lock
with campaign_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    cdir = make_campaign(tmp_path / "results")
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(cdir)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "held\n"
        with pytest.raises(UserError, match=f"pid {proc.pid}"):
            with campaign_lock(cdir):
                pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with campaign_lock(cdir):
        pass


def test_a_worker_holds_its_run_lock_after_its_campaign_lets_go(tmp_path):
    """The campaign takes the lock and the worker inherits it: with the
    campaign's own fd closed (as when it is killed), the run is still busy
    until the worker exits, and a resume waits for exactly that."""
    work = tmp_path / "work"
    work.mkdir()
    done = tmp_path / "done"
    fd = take_run_lock(work, 0)
    worker = subprocess.Popen([sys.executable, "-c", "import pathlib, sys, time; time.sleep(2);"
                               " pathlib.Path(sys.argv[1]).touch()", str(done)], pass_fds=(fd,))
    os.close(fd)
    try:
        assert worker_alive(work, 0)
        assert not worker_alive(work, 1)
        wait_for_worker(work, 0)
        assert done.exists()   # it returned only once the worker had finished
        assert not worker_alive(work, 0)
    finally:
        worker.kill()
        worker.wait()


def test_a_finished_orphans_run_is_taken_once(tmp_path):
    results = tmp_path / "results"
    cdir = make_campaign(results, n=3)
    entries = json.loads((cdir / "runs.json").read_text())
    # 0: the orphan finished after the campaign was killed
    orphan = make_run(results, "r-orphan")
    write_json(cdir / "work" / "0.outcome.json",
               {"run_dir": orphan, "exit_code": 0, "verdict": "valid", "error": None,
                "seconds": 9.0})
    # 1: a stale outcome of an attempt already recorded as a previous attempt
    old = make_run(results, "r-old", status="error")
    entries[1]["previous_attempts"] = [{"run_dir": old, "status": "error", "error": "x"}]
    write_json(cdir / "work" / "1.outcome.json",
               {"run_dir": old, "exit_code": 255, "verdict": None, "error": "x"})
    # 2: a worker killed mid-run left only its provisional outcome
    torn = make_run(results, "r-torn", status="running")
    write_json(cdir / "work" / "2.outcome.json",
               {"run_dir": torn, "exit_code": 255, "verdict": None, "provisional": True,
                "error": "the run's worker died before the run ended"})
    _collect_orphan_outcomes(cdir, entries)
    assert entries[0]["run_dir"] == orphan and entries[0]["status"] == "complete"
    assert entries[0]["verdict"] == "valid" and entries[0]["run_id"] == "r-orphan"
    assert entries[1]["run_dir"] is None and len(entries[1]["previous_attempts"]) == 1
    assert entries[2]["run_dir"] == torn and entries[2]["status"] == "running"
    # collecting again changes nothing (a second resume counts nothing twice)
    again = json.loads(json.dumps(entries))
    _collect_orphan_outcomes(cdir, again)
    assert again == entries


@pytest.mark.slow   # the resume ends with the Spark check of the adopted run
@pytest.mark.timeout(2400)
def test_resume_waits_for_a_live_orphan_then_takes_its_run(tmp_path):
    """The worker of a killed campaign is still running: resume waits for it
    (it holds the run lock) and takes the run it finished, instead of
    starting the run again beside it."""
    results = tmp_path / "results"
    cdir = make_campaign(results, n=1)
    run_dir = make_run(results, "r-late")
    outcome = json.dumps({"run_dir": run_dir, "exit_code": 0, "verdict": "valid",
                          "error": None, "seconds": 1.0})
    fd = take_run_lock(cdir / "work", 0)
    # The orphan finishes only once the resume holds the campaign (it has
    # written itself into campaign.lock), however slowly the resume starts.
    lock, out = str(cdir / "campaign.lock"), str(cdir / "work" / "0.outcome.json")
    late = (f"import os, time, pathlib\n"
            f"while not (os.path.exists({lock!r}) and os.path.getsize({lock!r})):\n"
            f"    time.sleep(0.05)\n"
            f"time.sleep(2)\n"
            f"pathlib.Path({out!r}).write_text({outcome!r})\n")
    orphan = subprocess.Popen([sys.executable, "-c", late], pass_fds=(fd,))
    os.close(fd)
    try:
        # The Spark check is all that is left: with no Java/Spark here it may
        # fail after the adoption; what matters is what runs.json says.
        proc = subprocess.run([*CLI, "campaign", "--resume", CAMPAIGN_ID,
                               "--results", str(results)],
                              cwd=REPO, capture_output=True, text=True, timeout=1800)
    finally:
        orphan.kill()
        orphan.wait()
    assert "still running in a worker of the killed campaign" in proc.stderr, proc.stderr
    assert "1 of 1 runs complete, 0 to run" in proc.stderr, proc.stderr
    (entry,) = json.loads((cdir / "runs.json").read_text())
    assert entry["run_dir"] == run_dir and entry["status"] == "complete"
    assert "previous_attempts" not in entry
