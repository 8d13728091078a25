"""Without CAP_NET_ADMIN `faultline run` stops at once: one sentence, nothing made."""

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to drop capabilities for the test")


def test_run_without_net_admin_is_one_sentence_and_creates_nothing(tmp_path):
    results = tmp_path / "results"
    done = subprocess.run(
        ["setpriv", "--inh-caps=-all", "--bounding-set=-net_admin,-sys_admin", "--",
         sys.executable, "-m", "harness", "run", "--time-limit", "5",
         "--results", str(results)],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 254
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs root" in lines[0] and "Traceback" not in done.stderr
    assert not results.exists()
