"""Issue 28, finding 3: Python children (nodes, client workers, campaign
workers) run with the directory `faultline run` was typed in kept off their
sys.path, so a `msgpack.py` planted there never runs (as root) in them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkers.history import read_history
from nodes.child_python import module_argv

TRAP = """\
import os, pathlib
pathlib.Path({marker!r}).write_text(f"imported in pid {{os.getpid()}}\\n")
raise ImportError("booby-trapped msgpack")
"""


def plant_trap(directory: Path) -> Path:
    """A `msgpack.py` in `directory` that leaves `marker` when imported."""
    marker = directory.parent / f"{directory.name}-imported"
    (directory / "msgpack.py").write_text(TRAP.format(marker=str(marker)))
    return marker


MODULES = ["nodes.raft", "harness.run.worker", "harness.campaign.worker"]


def start_in(cwd: Path, argv: list[str]) -> None:
    # Each module imports msgpack at start; stdin closed so a worker exits at once.
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


@pytest.mark.parametrize("module", MODULES)
def test_plain_dash_m_imports_the_planted_module(tmp_path, module):
    """The twin: the trap works on every module below, so those tests could fail."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = plant_trap(cwd)
    start_in(cwd, [sys.executable, "-m", module, "--help"])
    assert marker.exists()


@pytest.mark.parametrize("module", MODULES)
def test_module_argv_never_imports_from_the_cwd(tmp_path, module):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = plant_trap(cwd)
    start_in(cwd, module_argv(module, "--help"))
    assert not marker.exists(), marker.read_text()


def test_module_argv_keeps_pythonpath(tmp_path):
    """PYTHONPATH is a user's own choice (docs/extending.md's plugin uses it)."""
    (tmp_path / "myplugin_probe.py").write_text("print('found')\n")
    out = subprocess.run(module_argv("myplugin_probe"), capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert out.stdout.strip() == "found", out.stderr


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_faultline_run_from_a_booby_trapped_directory(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = plant_trap(cwd)
    results = tmp_path / "results"
    faultline = Path(sys.executable).parent / "faultline"
    # kill restarts nodes mid-run: the restarted ones are children too.
    done = subprocess.run(
        [str(faultline), "run", "--nodes", "3", "--concurrency", "3", "--time-limit", "6",
         "--nemesis", "kill", "--nemesis-interval", "2", "--recovery-time", "2",
         "--seed", "1", "--results", str(results)],
        cwd=cwd, capture_output=True, text=True, timeout=300)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = list(results.iterdir())
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert json.loads((run_dir / "verdicts.json").read_text())["valid"] is True
    # The workers and nodes ran: ops were acknowledged, killed nodes restarted.
    ops = read_history(run_dir / "history.msgpack").ops
    assert sum(op.type == "ok" and op.process != "nemesis" for op in ops) > 10
    assert any(op.f == "start" and op.type == "info" for op in ops)
