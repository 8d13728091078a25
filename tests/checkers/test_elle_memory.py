"""Elle's memory bound (issue 28, finding 8): a check whose estimate (from the
history's size, before anything is built) is over its budget is unknown with
the reason; under it the check runs as before. 500k txns took 4.2 GB with no
bound at all."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from checkers import elle
from checkers.elle import rw_register
from checkers.elle.budget import DEFAULT_MEMORY_LIMIT_MB, estimate_bytes, history_size
from checkers.elle.simulate import serial_history
from checkers.history import pack_op
from harness.cli import main

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import g_single  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def stale_history(txns: int, seed: int = 3) -> list:
    """A list-append history whose stale reads make cycles: the costly case."""
    return serial_history(txns, keys=10, concurrency=10, max_writes_per_key=256,
                          p_stale=0.05, rng=random.Random(seed))


def test_a_history_over_the_budget_is_unknown_and_nothing_is_built():
    ops = stale_history(20_000)
    size = history_size(ops)
    assert size.txns == 20_000 and size.mops > size.txns
    limit = estimate_bytes(size) // 2**20 - 1
    v = elle.check(ops, memory_limit_mb=limit)
    assert v["valid"] == "unknown"
    assert "memory limit" in v["stats"]["reason"] and f"{limit} MiB" in v["stats"]["reason"]
    assert v["stats"]["memory_estimate_bytes"] == estimate_bytes(size)
    # No graph: none of what building one reports.
    assert "edges" not in v["stats"] and v["anomalies"] == []
    # Its twin, with room: the stale reads are found.
    v = elle.check(ops, memory_limit_mb=limit + 2, cycle_search_budget_s=5)
    assert v["valid"] is False and "edges" in v["stats"]


def test_the_default_budget_checks_ordinary_histories():
    assert elle.check(g_single(False).ops)["valid"] is False
    assert elle.check(g_single(True).ops)["valid"] is True
    assert elle.check(g_single(False).ops, memory_limit_mb=None)["valid"] is False


def test_rw_register_has_the_same_bound():
    ops = serial_history(2_000, keys=5, concurrency=5, rng=random.Random(1))
    v = rw_register.check(ops, memory_limit_mb=1)
    assert v["valid"] == "unknown" and "memory limit" in v["stats"]["reason"]


def _write(path: Path, ops: list) -> str:
    path.write_bytes(b"".join(pack_op(op) for op in ops))
    return str(path)


def test_check_elle_memory_limit_option(tmp_path, capsys):
    # 2000 txns: an estimate of some 15 MiB
    bad = _write(tmp_path / "bad.msgpack", stale_history(2_000))
    assert main(["check-elle", bad]) == 1
    capsys.readouterr()
    assert main(["check-elle", bad, "--memory-limit", "1"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert "memory limit" in out["stats"]["reason"]
    assert main(["check-elle", bad, "--workload", "rw-register", "--memory-limit", "1"]) == 2


@pytest.mark.parametrize("argv, words", [
    (["--memory-limit", "0"], "--memory-limit must be positive"),
    (["--memory-limit", "99999999999"], "--memory-limit must be at most"),
    (["--budget", "nan"], "--budget must be a finite number"),
    (["--budget", "inf"], "--budget must be a finite number"),
    (["--budget", "1e308"], "--budget must be at most"),
    (["--budget", "-1"], "--budget must not be negative"),
])
def test_check_elle_refuses_unbounded_options(argv, words, tmp_path, capsys):
    path = _write(tmp_path / "ok.msgpack", g_single(True).ops)
    assert main(["check-elle", path, *argv]) == 254
    assert words in capsys.readouterr().err


def test_check_sets_the_elle_budget_of_saved_runs(tmp_path, capsys):
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "run.json").write_text(json.dumps({
        "run_id": "r", "status": "complete",
        "config": {"db": "raft", "workload": "list-append", "checkers": ["elle"]}}))
    _write(rd / "history.msgpack", stale_history(2_000))
    assert main(["check", "--in-process", "--elle-memory-limit", "1", str(rd)]) == 2
    verdicts = json.loads((rd / "verdicts.json").read_text())
    assert "memory limit" in json.dumps(verdicts)
    assert main(["check", "--in-process", str(rd)]) == 1
    capsys.readouterr()
    assert main(["check", "--in-process", "--elle-memory-limit", "0", str(rd)]) == 254
    assert "--elle-memory-limit must be positive" in capsys.readouterr().err


def test_the_default_budget_fits_the_machine():
    # Room for a check of some 800k txns (the history itself besides), a
    # third of a 24 GiB machine at most.
    assert 4096 <= DEFAULT_MEMORY_LIMIT_MB <= 8192


@pytest.mark.slow
def test_the_estimate_is_above_the_measured_peak_of_a_large_check():
    """A real large history (100k txns, large cyclic components: the costly
    case), checked in a fresh process by the calibration bench: the estimate
    must stay above the peak RSS the check added, and not far above it."""
    out = subprocess.run([sys.executable, "bench/elle_memory.py", "--child", "--txns", "100000",
                          "--stale", "0.05", "--seed", "2", "--budget", "5", "--max-mops", "4"],
                         cwd=REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    r = json.loads(out)
    assert r["valid"] is False and r["largest_component"] > 50_000
    assert r["check_peak_mib"] < r["estimate_mib"] < 2 * r["check_peak_mib"]
