"""The cluster records node processes that exit though no kill of its own
hit them, and never its own kills, restarts or teardown."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from echo_db import EchoDB

from harness.run.cluster import EXITS_FILE, Cluster

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@needs_root
@pytest.mark.slow
def test_an_exit_of_its_own_is_recorded_and_the_harness_kills_are_not(tmp_path: Path) -> None:
    run_id = f"tce{uuid.uuid4().hex[:8]}"
    with Cluster(tmp_path / run_id, EchoDB(), ["n1", "n2", "n3"], run_id,
                 state_dir=tmp_path / "state") as c:
        c.start_all(timeout=20)
        # The nemesis' way: SIGKILL through the cluster, then a restart.
        assert c.kill(["n1"]) == ["n1"]
        c.start(["n1"])
        c.pause(["n3"])
        c.resume(["n3"])
        # Not ours: a signal from elsewhere (a crash, an abort).
        os.kill(c._procs["n2"].popen.pid, signal.SIGTERM)
        assert wait_for(lambda: len(c.exits) == 1)
        [record] = c.exits
        assert record["node"] == "n2" and record["status"] == -signal.SIGTERM
        assert record["signal"] == "SIGTERM"
        assert not c.is_running("n2")
        saved = (c.spec("n2").log_dir / EXITS_FILE).read_text().splitlines()
        assert [json.loads(line)["status"] for line in saved] == [-signal.SIGTERM]
        c.start(["n2"])
        c.stop_nodes()
    assert len(c.exits) == 1
    assert not (c.spec("n1").log_dir / EXITS_FILE).exists()
