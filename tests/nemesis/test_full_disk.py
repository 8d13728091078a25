"""A results dir on a full filesystem (issue 28, finding 7): the run ended 255
but run.json stayed `running` (so `ls` said crashed, not error) and an empty
run.json.tmp was left. Now no partial file is left and run.json says `error`
with the reason, on a real full filesystem: a small tmpfs (needs root)."""

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.run_json import small_final_doc, write_final_run_json, write_run_json

REPO = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(mnt)],
                   check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(mnt, leave=0):
    """Fill the filesystem but `leave` bytes, with real writes until ENOSPC."""
    with open(mnt / "filler", "wb", buffering=0) as f:
        f.write(b"\0" * max(0, free_bytes(mnt) - leave))
        if leave == 0:
            with pytest.raises(OSError) as e:
                while True:
                    f.write(b"\0" * 4096)
            assert e.value.errno == errno.ENOSPC


def tmp_files(root):
    return [str(p) for p in Path(root).rglob("*") if p.name.endswith(".tmp")]


def test_the_small_final_state_keeps_who_and_why():
    doc = {"run_id": "r1", "status": "complete", "config": {"db": "raft"}, "schedule": [1] * 9,
           "campaign": {"id": "c", "index": 0}, "harness": {"pid": 1, "start_time": 2.0}}
    small = small_final_doc(doc, OSError(errno.ENOSPC, "No space left on device"))
    assert small["status"] == "error" and "No space left" in small["error"]
    assert "schedule" not in small and small["campaign"] == {"id": "c", "index": 0}
    assert "config" not in small_final_doc(doc, OSError(), with_config=False)


@needs_root
def test_a_full_disk_still_ends_run_json_in_error(small_fs):
    run_dir = small_fs / "run"
    run_dir.mkdir()
    doc = {"run_id": "run", "status": "running", "config": {"db": "raft", "nodes": 3},
           "versions": {"python": "3", "kernel": "6"}, "host": "h",
           "system": {"name": "raft", "description": "x" * 400}}
    write_run_json(run_dir, doc)
    fill(small_fs)
    doc.update(status="complete", schedule=[{"f": "partition", "value": "x" * 50}] * 2000)
    err = io.StringIO()
    failure = write_final_run_json(run_dir, doc, err)
    assert failure is not None and failure.errno == errno.ENOSPC
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "error" and "No space left on device" in saved["error"]
    assert saved["run_id"] == "run" and saved["config"] == {"db": "raft", "nodes": 3}
    assert doc["status"] == "error"
    assert tmp_files(small_fs) == [] and err.getvalue() == ""


@needs_root
def test_when_nothing_can_be_written_stderr_says_so(small_fs):
    run_dir = small_fs / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("{}")   # too short to overwrite in place
    fill(small_fs)
    err = io.StringIO()
    write_final_run_json(run_dir, {"run_id": "run", "status": "complete"}, err)
    assert "could not record the run's final state" in err.getvalue()
    assert (run_dir / "run.json").read_text() == "{}"
    assert tmp_files(small_fs) == []


@pytest.mark.slow
@needs_root
def test_a_run_whose_results_disk_fills_ends_error_with_the_reason(small_fs, tmp_path):
    """A real raft run on a results dir with room for its start and not for
    its history: it ends 255, run.json says error with ENOSPC, `ls` says error,
    and no temporary file is left."""
    results = small_fs / "results"
    results.mkdir()
    fill(small_fs, leave=96 * 1024)
    env = {**os.environ, "FAULTLINE_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--nodes", "3", "--concurrency", "3",
         "--rate", "200", "--time-limit", "10", "--results", str(results)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 255, proc.stderr
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "error", (doc, proc.stderr)
    assert "No space left on device" in doc["error"]
    assert tmp_files(small_fs) == []
    ls = subprocess.run([sys.executable, "-m", "harness", "ls", "--results", str(results)],
                        capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    line = next(li for li in ls.stdout.splitlines() if run_dir.name in li)
    assert "error" in line and "crashed" not in line, ls.stdout
