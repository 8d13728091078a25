"""bench/hunt.py: the runs it plans (default run: no nemesis chosen, nothing
tuned to a bug) and the lines it prints over their outcomes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
import nemesis.base  # noqa: E402, F401 (first: bench/nemesis.py would shadow the package)

sys.path.append(str(ROOT / "bench"))

import hunt  # noqa: E402
from run_outcomes import Outcome, copy_first_env  # noqa: E402
from scratch import copy_tree  # noqa: E402


def test_plan_runs_every_bug_on_every_workload_then_the_correct_build():
    planned = hunt.plan(["a", "b"], ["register", "list-append"], 3, 7, 4)
    assert len(planned) == 2 * 2 * 3 + 4
    assert planned[0] == hunt.Planned("a", "register", 7)
    assert {p.seed for p in planned if p.group == "b"} == {7, 8, 9}
    correct = [p for p in planned if p.group == hunt.CORRECT]
    assert [p.workload for p in correct] == ["register", "list-append"] * 2


def test_a_run_is_the_default_one():
    args = hunt.run_args(hunt.Planned("a", "register", 3), 5, 60.0)
    assert args == ["--workload", "register", "--nodes", "5", "--time-limit", "60",
                    "--seed", "3"]
    assert not any(a.startswith("--nemesis") or a == "--bug" for a in args)


def outcome(group: str, code: int, *invalid: str) -> Outcome:
    return Outcome(group, f"{group} run", code, list(invalid))


def test_summary_counts_catches_errors_and_false_positives():
    outcomes = [outcome("a", 1, "linearizability"), outcome("a", 0), outcome("a", 255),
                outcome("b", 0), outcome("b", 2),
                outcome("correct", 0), outcome("correct", 1, "divergence"),
                outcome("correct", 255)]
    assert hunt.summarize(outcomes, ["a", "b"]) == [
        "a caught 1/2 by linearizability 1 (1 harness errors)",
        "b caught 0/2 by -",
        "overall caught 1/4 (25%); bugs never caught: 1/2 (1 harness errors)",
        "correct false-positives 1/2 by divergence 1 (1 harness errors)",
    ]


def test_bug_rows_give_each_bug_its_category_and_rate_per_workload():
    outcomes = [Outcome("a", "a register seed 1", 1, ["linearizability"]),
                Outcome("a", "a list-append seed 1", 0),
                Outcome("a", "a list-append seed 2", 255),
                Outcome("correct", "correct register seed 1", 0)]
    rows = hunt.bug_rows(outcomes, {"a": "read path", "b": "liveness"})
    assert rows[0] == "| bug | category | register | list-append | all | caught by |"
    assert rows[2:] == ["| a | read path | 1/1 | 0/1 (+1 err) | 1/2 (+1 err) | "
                        "linearizability 1 |"]


def _raft_core_seen_by_a_node_child(tree: Path, env: dict[str, str] | None) -> Path:
    """Where a child started as the nodes are (`-P`, nodes.child_python) from
    `tree` finds nodes.raft.core."""
    out = subprocess.run([sys.executable, "-P", "-c",
                          "import nodes.raft.core as c; print(c.__file__)"],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()).resolve()


def test_a_node_child_run_from_a_scratch_copy_imports_the_copy(tmp_path):
    tree = copy_tree(tmp_path / "copy")
    assert _raft_core_seen_by_a_node_child(tree, copy_first_env(tree)).is_relative_to(
        tree.resolve())
    hunt.check_copy_imports_itself(tree)


def test_without_the_copy_on_pythonpath_a_node_child_imports_the_install(tmp_path):
    # The twin: what every hunt bug run did before copy_first_env (nodes ran unpatched).
    tree = copy_tree(tmp_path / "copy")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert not _raft_core_seen_by_a_node_child(tree, env).is_relative_to(tree.resolve())


def test_copy_first_env_keeps_a_users_pythonpath_after_the_copy(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    assert copy_first_env(tmp_path)["PYTHONPATH"].split(":") == [str(tmp_path), "/somewhere"]


def test_stressed_keeps_the_load_running_for_the_block_only():
    from run_outcomes import stressed
    marker = f"faultline-stress-test-{os.getpid()}"
    # A real process stands in for stress-ng: `sleep` renamed by exec -a.
    command = ["bash", "-c", f"exec -a {marker} sleep 60"]

    def running() -> bool:
        return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0

    with stressed(command):
        for _ in range(50):
            if running():
                break
            subprocess.run(["sleep", "0.1"])
        assert running()
    assert not running()
    with stressed(None):
        assert not running()
