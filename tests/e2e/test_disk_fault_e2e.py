"""Disk faults in a real run: raft nodes on LazyFS mounts with EIO, slow and
corrupted disks, a verdict, nothing left mounted; its replay sets the same
rules on the same nodes."""

import json
import os
from pathlib import Path

import pytest

from checkers.history import read_history
from harness.cli import main
from harness.run.resources import read_journal
from nemesis.lazyfs import check_installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
    pytest.mark.skipif(check_installed() is not None, reason=check_installed() or ""),
]

NEMESIS = "disk:eio=0.2+ops=write+files=*.seg,disk:slow=5+fsync=100,disk:bitflip+at=rest"


def mounted_under(path: Path) -> list[str]:
    with open("/proc/mounts") as mounts:
        return [line for line in mounts if str(path.resolve()) in line]


def disk_injects(run_dir: Path) -> list[tuple[str, list[str], dict]]:
    doc = json.loads((run_dir / "run.json").read_text())
    return [(e["fault"], e["value"]["nodes"], e["value"].get("seeds") or e["value"].get("flips"))
            for e in doc["schedule"] if e["f"] == "disk" and e["error"] is None]


def test_a_run_with_disk_faults_is_judged_leaves_no_mount_and_replays(tmp_path, capsys):
    results = tmp_path / "results"
    code = main(["run", "--db", "raft", "--workload", "register", "--nemesis", NEMESIS,
                 "--nodes", "3", "--concurrency", "3", "--rate", "50", "--time-limit", "12",
                 "--nemesis-interval", "1.5", "--recovery-time", "3", "--seed", "5",
                 "--results", str(results)])
    (run_dir,) = list(results.iterdir())
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "complete"
    ops = read_history(run_dir / "history.msgpack").ops
    fs = {op.f for op in ops if op.process == "nemesis" and op.error is None}
    assert {"disk", "restore-disk"} <= fs, fs
    injected = disk_injects(run_dir)
    assert {fault for fault, _, _ in injected} == set(NEMESIS.split(",")), injected
    # The correct build stops on a disk error or rides it out: no checker fails.
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    assert verdicts["valid"] is True, verdicts
    assert code == 0
    assert mounted_under(run_dir) == []
    assert read_journal(run_dir / "resources.jsonl").live == []
    capsys.readouterr()

    main(["replay", str(run_dir), "--yes", "--results", str(tmp_path / "replays")])
    (replayed,) = list((tmp_path / "replays").iterdir())
    again = disk_injects(replayed)
    # The rules' seeds and the nodes: the same faults, exactly (flips at rest
    # land where the files' sizes then say, so only their nodes must match).
    assert [(f, n) for f, n, _ in again] == [(f, n) for f, n, _ in injected]
    assert [s for f, _, s in again if "rest" not in f] == \
        [s for f, _, s in injected if "rest" not in f]
    assert mounted_under(replayed) == []


def test_sigkill_of_a_disk_fault_run_leaves_no_mount_and_nothing_to_clean(tmp_path):
    import signal
    import time

    from harness.run.resources import NETNS_DIR, mounted_paths
    from tests.harness.test_run_lifecycle import clean, start_run, what_is_left
    proc, run_dir = start_run(tmp_path, "--seed", "5", "--nemesis", "disk:slow=5+nodes=all",
                              "--nemesis-interval", "0.5")
    run_id = run_dir.name
    try:
        mounts = [m for m in mounted_paths() if run_id in m and not m.startswith(str(NETNS_DIR))]
        assert len(mounts) == 3, mounts          # the data dirs really are on LazyFS
        proc.send_signal(signal.SIGKILL)
        time.sleep(2.0)
        assert what_is_left(run_id) == []        # mounts included
        proc.wait()
        done = clean(tmp_path, run_id)
        assert done.returncode == 0 and done.stdout.strip() == "nothing to clean"
    finally:
        proc.kill()
        clean(tmp_path, run_id)


WHOLE_CLUSTER_EIO = "disk:eio+nodes=all"


def whole_cluster_eio_run(tmp_path: Path, *bug: str) -> tuple[int, dict]:
    results = tmp_path / "results"
    code = main(["run", "--db", "raft", "--workload", "register", "--nemesis", WHOLE_CLUSTER_EIO,
                 "--nodes", "3", "--rate", "200", "--time-limit", "30", "--seed", "1",
                 *bug, "--results", str(results)])
    (run_dir,) = list(results.iterdir())
    injected = disk_injects(run_dir)
    assert injected and all(nodes == ["n1", "n2", "n3"] for _, nodes, _ in injected), injected
    assert mounted_under(run_dir) == []
    return code, json.loads((run_dir / "verdicts.json").read_text())


def test_a_whole_cluster_disk_failure_leaves_the_correct_build_valid(tmp_path):
    """The hunt's `disk:eio+nodes=all` on the correct build: every node stops
    on its first EIO, the heal starts them, nothing is lost. Measured valid in
    3/3 runs (seeds 1-3, 30 s, load 20-30)."""
    code, verdicts = whole_cluster_eio_run(tmp_path)
    assert verdicts["valid"] is True, verdicts
    assert code == 0


def test_a_whole_cluster_disk_failure_catches_a_node_that_ignores_write_errors(tmp_path):
    """Its twin: `ignore-write-error` counts a refused write as written; with
    every disk failing, entries written while it lasts are on no disk.
    Measured caught in 3/3 runs (seeds 1-3, 30 s, load 20-30): seed 1 by
    durability (65 lost writes), linearizability, divergence and node-logs,
    seed 2 by durability (61), linearizability, divergence and node-state,
    seed 3 by divergence alone (a node never converged); docs/hunt.md, "A
    whole cluster's disk"."""
    from nodes.raft.bugs import IGNORE_WRITE_ERROR
    code, verdicts = whole_cluster_eio_run(tmp_path, "--bug", IGNORE_WRITE_ERROR)
    assert verdicts["valid"] is False, verdicts
    assert code == 1
