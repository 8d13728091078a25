"""Jepsen's exit statuses, everywhere (issue 14, finding 2 and 5): 0 valid,
1 invalid, 2 unknown, 254 bad arguments or unusable input (one sentence,
nothing started, nothing left), 255 harness error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from checkers.history import Op
from harness.cli import main
from harness.run.history import HistoryWriter

ROOT = os.geteuid() == 0


def one_sentence(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


def write_history(path: Path, ops: list[Op]) -> Path:
    with HistoryWriter(path) as w:
        for op in ops:
            w.append(op)
    return path


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("FAULTLINE_STATE_DIR", str(d))
    return d


def assert_nothing_started(results: Path, state_dir: Path) -> None:
    assert not results.exists() or not any(results.iterdir())
    assert not state_dir.exists() or not any(state_dir.iterdir())


@pytest.mark.parametrize("argv, words", [
    (["--bug", "no-such-bug"], "unknown bug switch no-such-bug"),
    (["--nodes", "300"], "--nodes must be at most 245"),
    (["--nemesis", "partition:majorities-ring"], "cannot act on 3 node(s)"),
    (["--nodes", "1", "--nemesis", "partition"], "no partition can cut a link"),
    (["--workload", "kv", "--client-option", "activ_keys=3"], "unknown --client-option"),
    (["--workload", "kv", "--client-option", "ops_per_key=-1"], "must be a positive integer"),
    (["--nodes", "many"], "invalid int value"),
    # Each client is a worker process: 100k of them ran until the machine ran out.
    (["--concurrency", "100000"], "--concurrency must be at most"),
    (["--consistency-model", "serialisable"], "--consistency-model must be one of"),
    (["--threshold", "max_unavailable=3"], "unknown --threshold 'max_unavailable'"),
    (["--threshold", "max_unavailable_s=soon"], "must be a non-negative number"),
    (["--op-timeout", "0"], "--op-timeout must be positive"),
    (["--recovery-time", "-1"], "--recovery-time must not be negative"),
    (["--time-limit", "inf"], "--time-limit must be a finite number"),
    (["--time-limit", "nan"], "--time-limit must be a finite number"),
    (["--rate", "nan"], "--rate must be a finite number"),
    (["--nemesis-interval", "inf"], "--nemesis-interval must be a finite number"),
    # Faults that need what the system's adapter lacks: each failed once the
    # cluster was up (255, "ValueError: ..."), or ran and did nothing.
    (["--db", "etcd", "--nemesis", "lose-state"], "cannot run on system etcd"),
    (["--db", "etcd", "--nemesis", "reformat"], "etcd cannot re-format a node"),
    (["--db", "etcd", "--nemesis", "membership:auto-join"], "node option auto_join"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_bad_run_arguments_are_254_and_start_nothing(argv, words, tmp_path, state_dir, capsys):
    results = tmp_path / "results"
    assert main(["run", "--results", str(results), *argv]) == 254
    assert words in one_sentence(capsys)
    assert_nothing_started(results, state_dir)


def test_the_concurrency_bound_follows_from_the_machines_limits(monkeypatch):
    """Whichever of open files (two pipe ends per client), processes and free
    memory runs out first bounds --concurrency."""
    import resource

    import psutil

    from harness.run import clients

    gib = 1 << 30
    limits = {resource.RLIMIT_NOFILE: (1024, 4096), resource.RLIMIT_NPROC: (10_000, 10_000)}
    monkeypatch.setattr(resource, "getrlimit", limits.__getitem__)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": 64 * gib}))
    assert clients.max_concurrency() == (1024 - clients.RESERVED) // 2
    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": 2 * gib}))
    assert clients.max_concurrency() == gib // (clients.WORKER_MIB << 20)
    limits[resource.RLIMIT_NPROC] = (300, 300)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": 64 * gib}))
    assert clients.max_concurrency() == 300 - clients.RESERVED
    limits[resource.RLIMIT_NOFILE] = (resource.RLIM_INFINITY,) * 2
    limits[resource.RLIMIT_NPROC] = (resource.RLIM_INFINITY,) * 2
    assert clients.max_concurrency() == 32 * gib // (clients.WORKER_MIB << 20)


@pytest.mark.skipif(not ROOT, reason="a results-dir refusal is only reached as root "
                    "(privileges are checked first)")
def test_unusable_results_dir_is_254_before_anything_starts(tmp_path, state_dir, capsys):
    a_file = tmp_path / "results-file"
    a_file.write_text("not a dir")
    assert main(["run", "--results", str(a_file), "--time-limit", "1"]) == 254
    assert "is not a directory" in one_sentence(capsys)
    assert main(["run", "--results", str(a_file / "sub"), "--time-limit", "1"]) == 254
    assert "is not a directory" in one_sentence(capsys)
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        assert main(["run", "--results", str(ro), "--time-limit", "1"]) == 254
        assert "not writable" in one_sentence(capsys)
        assert main(["run", "--results", str(ro / "new"), "--time-limit", "1"]) == 254
        assert "not writable" in one_sentence(capsys)
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert not state_dir.exists() or not any(state_dir.iterdir())


@pytest.mark.skipif(not ROOT, reason="needs root to mount a read-only tmpfs")
def test_commands_that_write_refuse_an_unwritable_dir_before_starting(tmp_path, state_dir,
                                                                      capsys):
    """campaign, check and report write into a results or run dir: one that
    cannot be written was a 255 with a raw OSError after the work was done."""
    import json
    a_file = tmp_path / "results-file"
    a_file.write_text("not a dir")
    campaign = tmp_path / "c.toml"
    campaign.write_text('name = "t"\n[[matrix]]\ndb = ["raft"]\nworkload = ["register"]\n'
                        'nemesis = [["partition"]]\nseeds = [1]\n')
    assert main(["campaign", str(campaign), "--results", str(a_file)]) == 254
    assert "is not a directory" in one_sentence(capsys)
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        run_dir = ro / "20261123T000000.000000Z-abcdef"
        run_dir.mkdir()
        write_history(run_dir / "history.msgpack", [Op(0, 1, 0, "invoke", "read"),
                                                     Op(1, 2, 0, "ok", "read", None)])
        (run_dir / "run.json").write_text(json.dumps({
            "run_id": run_dir.name, "status": "complete", "artifacts": [],
            "config": {"db": "raft", "workload": "register"}}))
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        for argv in (["campaign", str(campaign), "--results", str(ro)],
                     ["check", "--in-process", str(run_dir)], ["report", str(run_dir)]):
            assert main(argv) == 254, argv
            assert "not writable" in one_sentence(capsys), argv
        assert not (ro / "campaigns").exists() and not (run_dir / "verdicts.json").exists()
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert_nothing_started(tmp_path / "none", state_dir)


def test_a_harness_bug_is_255_in_one_line(monkeypatch, capsys, tmp_path):
    import harness.commands.ls as ls

    def boom(args):
        raise RuntimeError("simulated harness bug")
    monkeypatch.setattr(ls, "run", boom)
    # The parser bound the function at registration: rebuild it after patching.
    assert main(["ls", "--results", str(tmp_path)]) == 255
    assert "harness error: RuntimeError: simulated harness bug" in one_sentence(capsys)


def test_unreadable_histories_are_254(tmp_path, capsys):
    garbage = tmp_path / "garbage.msgpack"
    garbage.write_bytes(b"\xc1\xc1\xc1 not msgpack")
    for argv in (["check-lin", str(garbage)], ["history", "validate", str(garbage)],
                 ["check-lin", str(tmp_path / "missing")]):
        assert main(argv) == 254, argv
        capsys.readouterr()


def test_empty_history_is_unknown_never_valid(tmp_path, capsys):
    """Finding 5: an empty history, or one with only nemesis ops, judges nothing."""
    empty = write_history(tmp_path / "empty.msgpack", [])
    nemesis_only = write_history(tmp_path / "nemesis.msgpack", [
        Op(0, 1, "nemesis", "invoke", "kill", None), Op(1, 2, "nemesis", "info", "kill", None)])
    for path in (empty, nemesis_only):
        assert main(["check-lin", str(path)]) == 2
        assert "no client operations" in capsys.readouterr().out
        assert main(["history", "validate", str(path)]) == 2
        assert "no client operations" in capsys.readouterr().out


def test_run_check_of_a_run_without_client_ops_is_unknown(tmp_path, capsys):
    import json

    from harness.results.store import create_run_dir
    run_dir = create_run_dir(tmp_path)
    write_history(run_dir / "history.msgpack", [])
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "config": {"db": "raft", "workload": "register"}}))
    assert main(["check", "--in-process", str(run_dir)]) == 2
    doc = json.loads((run_dir / "verdicts.json").read_text())
    assert doc["valid"] == "unknown"
    assert all(v["valid"] == "unknown" and v["stats"]["reason"] == "no client operations"
               for v in doc["checkers"].values())


def test_check_of_a_garbage_run_dir_is_254_not_an_old_verdict(tmp_path, capsys):
    """Finding 5: garbage in a run dir is a clear error, never the old VALID."""
    import json

    from checkers.verdict_store import write_verdicts
    from harness.results.store import create_run_dir
    run_dir = create_run_dir(tmp_path)
    write_history(run_dir / "history.msgpack", [Op(0, 1, 0, "invoke", "read"),
                                                 Op(1, 2, 0, "ok", "read", None)])
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "config": {"db": "raft", "workload": "register"}}))
    write_verdicts(run_dir, {"valid": True, "checkers": {}})
    (run_dir / "run.json").write_text("{garbage")
    assert main(["check", "--in-process", str(run_dir)]) == 254
    assert "not a usable run dir" in capsys.readouterr().err
    (run_dir / "run.json").write_text(json.dumps({"run_id": run_dir.name,
                                                  "status": "complete"}))
    (run_dir / "history.msgpack").write_bytes(b"\xc1\xc1\xc1\xc1 garbage")
    assert main(["check", "--in-process", str(run_dir)]) == 254
    capsys.readouterr()
    assert main(["gate", str(run_dir), "--allow-unknown"]) == 2
    assert "judged another history" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["--node-option", "tick_ms=fast"], "--node-option tick_ms must be a positive integer"),
    (["--node-option", "tickms=20"], "unknown --node-option 'tickms' for raft"),
    (["--db", "etcd", "--node-option", "pre_vote=maybe"], "must be true or false"),
    # Each started the cluster, whose nodes then refused to start (255).
    (["--node-option", 'bugs=["no-such-bug"]'], "unknown bug switch no-such-bug"),
    (["--node-option", 'voters=["n9"]'], "names n9, not one of this run's nodes (n1..n3)"),
    (["--node-option", "voters=[]"], "a non-empty list of node names"),
    (["--db", "etcd", "--node-option", "heartbeat_ms=1000"], "at least 5 x heartbeat_ms"),
    (["--db", "etcd", "--node-option", "election_ms=60000"], "at most 50000"),
])
def test_bad_node_options_are_254_before_anything_starts(argv, words, tmp_path, state_dir,
                                                         capsys):
    results = tmp_path / "results"
    assert main(["run", "--results", str(results), *argv]) == 254
    assert words in capsys.readouterr().err
    assert_nothing_started(results, state_dir)


def test_many_nodes_and_faults_without_a_turn_are_warned_of_before_the_run(
        tmp_path, state_dir, monkeypatch):
    """Finding 2: `--nodes 100 --time-limit 5` ran with no warning and its
    progress line read [36.2/5s]. The warnings come before any node starts; the
    shown clock starts with the workload."""
    import io

    from harness.run.config import RunConfig
    from harness.run.lifecycle import Run
    from harness.run.progress import Progress
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    out = io.StringIO()
    run = Run(RunConfig(nodes=100, time_limit=5.0, nemesis=["partition", "kill", "pause"],
                        nemesis_interval=3.0, seed=1), tmp_path / "results", stream=out)
    run._open_run_dir()
    said = out.getvalue()
    assert "warning: 100 nodes on 2 CPU(s)" in said
    assert "the time limit counts from the workload's start" in said
    assert "warning: the schedule never injects" in said
    assert said.index("warning") < said.index("run ")       # before the run begins
    progress = Progress(5.0, io.StringIO(), plain_every=0)
    progress.started -= 30.0                                  # 30 s of starting nodes
    progress.start_clock()
    progress.update("main", {"ok": 1}, [])
    assert progress.stream.getvalue().startswith("[  0.0/5s]")
