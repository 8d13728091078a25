"""Crash safety: the resource journal, `faultline clean` after a SIGKILLed
harness, and teardown on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from harness.run.resources import (
    NETNS_DIR,
    ResourceLog,
    kill_process,
    mounted_paths,
    read_journal,
    sweep_journal,
)

TESTS_DIR = Path(__file__).parents[1]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and mounts need root")

# A harness that sets up a 2-node cluster plus a tmpfs mount, says what it
# made, and waits to be killed.
HARNESS = r"""
import json, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from echo_db import EchoDB
from harness.run.cluster import Cluster
from harness.run.resources import install_termination_handlers
run_dir, run_id, state = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
install_termination_handlers()
with Cluster(run_dir, EchoDB(), ["n1", "n2"], run_id, state_dir=state,
             watchdog=sys.argv[5] == "watchdog") as c:
    c.start_all(timeout=30)
    mnt = c.spec("n1").data_dir.parent / "mnt"
    mnt.mkdir()
    c.resources.add("mount", path=str(mnt))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    made = {"pids": [p.popen.pid for p in c._procs.values()],
            "helpers": [EchoDB.helper_pid(n) for n in c.nodes],
            "namespaces": c.topology.namespaces(), "mount": str(mnt),
            "data_root": str(mnt.parent)}
    print(json.dumps(made), flush=True)
    time.sleep(600)
"""


def start_harness(tmp_path: Path, watchdog: bool = True
                  ) -> tuple[subprocess.Popen[str], str, dict]:
    run_id = f"tclean{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(tmp_path / run_id), run_id,
         str(tmp_path / "state"), str(TESTS_DIR), "watchdog" if watchdog else "none"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line:
        proc.kill()
        raise AssertionError(f"harness did not start: {proc.communicate()[1]}")
    return proc, run_id, json.loads(line)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def leftovers(made: dict) -> list[str]:
    found = [f"pid {p}" for p in made["pids"] + made["helpers"] if alive(p)]
    found += [f"netns {n}" for n in made["namespaces"] if (NETNS_DIR / n).exists()]
    if made["mount"] in mounted_paths():
        found.append(f"mount {made['mount']}")
    if Path(made["data_root"]).exists():
        found.append(f"dir {made['data_root']}")
    return found


def force_cleanup(made: dict, run_id: str, tmp_path: Path) -> None:
    """If the test failed halfway, leave nothing behind anyway."""
    subprocess.run([sys.executable, "-m", "harness", "clean", "--run", run_id, "--force",
                    "--state-dir", str(tmp_path / "state")], capture_output=True)


@needs_root
@pytest.mark.slow
def test_clean_sweeps_a_sigkilled_harness(tmp_path: Path) -> None:
    """Without the watchdog (say it was killed too), `clean` finishes the job."""
    proc, run_id, made = start_harness(tmp_path, watchdog=False)
    try:
        assert leftovers(made)  # the run really made things
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)
        # The nodes died with the harness (PR_SET_PDEATHSIG); the helpers they
        # forked, the namespaces, the mount and the data dir are left.
        assert not any(alive(p) for p in made["pids"])
        assert len(leftovers(made)) == len(made["helpers"]) + len(made["namespaces"]) + 2
        done = subprocess.run([sys.executable, "-m", "harness", "clean", "--run", run_id,
                               "--state-dir", str(tmp_path / "state")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert f"unmounted {made['mount']}" in done.stdout
        assert all(f"deleted namespace {n}" in done.stdout for n in made["namespaces"])
        time.sleep(0.1)
        assert leftovers(made) == []
        assert not (tmp_path / "state" / f"{run_id}.jsonl").exists()
        again = subprocess.run([sys.executable, "-m", "harness", "clean", "--run", run_id,
                                "--state-dir", str(tmp_path / "state")],
                               capture_output=True, text=True, timeout=60)
        assert again.stdout.strip() == "nothing to clean"
    finally:
        proc.kill()
        force_cleanup(made, run_id, tmp_path)


@needs_root
@pytest.mark.slow
def test_the_watchdog_sweeps_a_sigkilled_harness_within_2s(tmp_path: Path) -> None:
    """Finding 3: nothing of a SIGKILLed harness's run is alive 2 s later."""
    proc, run_id, made = start_harness(tmp_path, watchdog=True)
    try:
        assert len(leftovers(made)) == 2 * len(made["pids"]) + len(made["namespaces"]) + 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(2.0)
        assert leftovers(made) == []
        assert not (tmp_path / "state" / f"{run_id}.jsonl").exists()
        done = subprocess.run([sys.executable, "-m", "harness", "clean", "--run", run_id,
                               "--state-dir", str(tmp_path / "state")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == "nothing to clean"
    finally:
        proc.kill()
        force_cleanup(made, run_id, tmp_path)


@needs_root
@pytest.mark.slow
def test_sigterm_tears_the_run_down(tmp_path: Path) -> None:
    proc, run_id, made = start_harness(tmp_path)
    try:
        # Teardown also lazily unmounts journalled mounts still in place.
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        time.sleep(0.1)
        assert leftovers(made) == []
        assert not (tmp_path / "state" / f"{run_id}.jsonl").exists()
    finally:
        proc.kill()
        force_cleanup(made, run_id, tmp_path)


def test_journal_round_trip_and_torn_tail(tmp_path: Path) -> None:
    log = ResourceLog(tmp_path / "r.jsonl", "runx", tmp_path / "state")
    a = log.add("tempdir", path=str(tmp_path / "a"))
    log.add("netns", name="fl-runx-hub")
    log.release(a)
    log.close()
    with open(tmp_path / "r.jsonl", "ab") as f:
        f.write(b'{"op": "add", "id": 9, "ki')  # killed mid-write
    journal = read_journal(tmp_path / "r.jsonl")
    assert journal.run_id == "runx" and journal.owner_pid == os.getpid()
    assert [r["kind"] for r in journal.live] == ["netns"]
    # Something is still live, so the index entry stays for `clean` to find.
    assert (tmp_path / "state" / "runx.jsonl").resolve() == (tmp_path / "r.jsonl").resolve()


def test_clean_refuses_a_run_whose_harness_is_alive(tmp_path: Path) -> None:
    log = ResourceLog(tmp_path / "r.jsonl", "runlive", tmp_path / "state")
    keep = tmp_path / "keep"
    keep.mkdir()
    log.add("tempdir", path=str(keep))
    report = sweep_journal(tmp_path / "r.jsonl")
    assert report.removed == [] and "still running" in report.skipped[0]
    assert keep.exists()
    assert sweep_journal(tmp_path / "r.jsonl", force=True).removed == [f"removed {keep}"]
    log.close()


def test_a_reused_pid_is_never_killed() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        real = psutil.Process(child.pid).create_time()
        assert not kill_process(child.pid, child.pid, real - 100.0)  # a different process
        assert child.poll() is None
        assert kill_process(child.pid, None, real)
        assert child.wait(timeout=5) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


def test_a_killed_harness_its_parent_has_not_reaped_is_dead() -> None:
    """A SIGKILLed harness is a zombie until its parent waits for it: it runs
    no code again, so its run is crashed and its watchdog sweeps at once rather
    than waiting on the parent (seen: namespaces and `running` for as long as
    the parent did not reap it)."""
    from harness.run.resources import harness_alive
    from harness.run.state import CRASHED, RUNNING, effective_status
    child = subprocess.Popen(["sleep", "30"])
    try:
        started = psutil.Process(child.pid).create_time()
        doc = {"status": "running", "harness": {"pid": child.pid, "start_time": started}}
        assert harness_alive(child.pid, started) and effective_status(doc) == RUNNING
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not harness_alive(child.pid, started)
        assert effective_status(doc) == CRASHED
    finally:
        child.kill()
        child.wait()


def test_leftovers_of_dead_runs_are_found_for_the_next_run(tmp_path: Path) -> None:
    """What a run whose harness (and watchdog) died left is named, so the next
    `faultline run` can say `faultline clean` has work; live runs are not."""
    from harness.run.resources import dead_runs_with_leftovers
    state = tmp_path / "state"
    live = ResourceLog(tmp_path / "live.jsonl", "runlive", state)
    live.add("tempdir", path=str(tmp_path / "x"))
    assert dead_runs_with_leftovers(state) == []
    dead_journal = tmp_path / "dead.jsonl"
    dead_journal.write_text(
        json.dumps({"op": "owner", "run_id": "rundead", "pid": 999_999_999,
                    "start_time": 1.0}) + "\n"
        + json.dumps({"op": "add", "id": 0, "kind": "netns", "name": "fl-rundead-n1"}) + "\n")
    (state / "rundead.jsonl").symlink_to(dead_journal)
    assert dead_runs_with_leftovers(state) == ["rundead"]
    live.close()
