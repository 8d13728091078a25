"""Real runs per bug switch, as bench/detection.py makes them (3 nodes,
register, 30 s, the nemesis from nodes.raft.bugs.CALIBRATION, default
checkers, no thresholds): each must be caught by a checker its plan names.

commit-dirty: a run is caught when one power cut lands right after the ack of
a young write (nodes.raft.faults.triggers): every such cut measured so far lost an
acknowledged write (58 of 58, docs/calibration.md), and each run had 1-6 of them;
with fsyncs slowed to 200 ms, 6 of 6 runs at load 16-19 had 1-3 (11 cuts, all young).
vote-before-persist: every power cut right after a vote line lands well inside
the slowed fsync of the voter's next quorum-state write (`dirty_left_ms`).
unknown-epoch-next-start: each `fast-failover` arming plays KIP-279's
scenario 1 through (30 of 30 armings in the calibration's 10 runs), and one
fetch answered wrongly diverges the logs.
vote-after-state-loss: each `lose-state` that acts leaves the lost voter's
vote or candidacy needed before a leader can answer it, and invariants
flags every one since its window ends only at a leader's answer, not at a
Follower line (a CI trial at load 14 escaped when the lost node, back ~1 s
after the kill, followed the dead leader the survivor still named and voted
after): seed 1 beside `stress-ng --cpu 2` (load 8-17), 32 of 32 faults
that acted were flagged over 11 runs, the old rule 29 (docs/calibration.md,
2026-11-27). A draw that finds the cluster still electing waits for a
leader instead of doing nothing (1 of 15 injects did nothing before, 0 of 15
after)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from nodes.raft import bugs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import detection  # noqa: E402

from checkers.history import NEMESIS, read_history  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and LazyFS need root")]


# Scenario A shows only when a partition cuts a node off while its log is as
# long as the others' (bugs.CALIBRATION says why): at 0.25 op/s 20 of 20 runs
# of 30 s caught it, the first 10 with 1 to 8 such pre-votes each (README). A run twice as
# long gives it twice the partitions to land in.
TIME_LIMIT_S = {bugs.PRE_VOTE_WHILE_FOLLOWING: 60.0}


# One run per switch, and it must be caught: each switch's configuration
# (nodes.raft.bugs.CALIBRATION) gives the bug its window by design, not by the
# draw: the triggers act on the very line that opens the window and slow the
# disk so it stays open; partitions are held long enough for the bug to show.
# A miss is a defect to find, not a sample to retry. FAULTLINE_DETECTION_SEED
# (default 1) picks the run, to run the file again over other seeds.
SEED = int(os.environ.get("FAULTLINE_DETECTION_SEED", "1"))


def fired(run: Path) -> list:
    return [op for op in read_history(run / "history.msgpack").ops
            if op.process == NEMESIS and op.type == "invoke" and isinstance(op.value, dict)
            and "after" in op.value]


def caught(switch: str, outcome: detection.Outcome) -> bool:
    return outcome.exit_code == 1 and bool(
        set(outcome.invalid_checkers) & set(bugs.CALIBRATION[switch]["caught_by"]))


@pytest.mark.parametrize("switch", sorted(bugs.CALIBRATION))
def test_a_real_run_catches_the_switch(switch: str, tmp_path: Path) -> None:
    planned = detection.Planned(switch, f"{switch} seed {SEED}",
                                detection.switch_config(switch, SEED,
                                                        TIME_LIMIT_S.get(switch, 30.0))
                                | {"bugs": [switch]})
    outcome = detection.execute(planned, tmp_path, 0)
    if caught(switch, outcome):
        return
    log = (tmp_path / "runs" / "000" / "output.log").read_text()[-2500:]
    if outcome.run_dir and (Path(outcome.run_dir) / "history.msgpack").exists():
        # What each triggered fault did, to tell one that came late from one
        # that never found the moment it waits for.
        log += "".join(f"\nfired: {op.f} {op.value}" for op in fired(Path(outcome.run_dir)))
    pytest.fail(f"{switch} escaped seed {SEED}: exit {outcome.exit_code}, invalid "
                f"{outcome.invalid_checkers}\n{log}")
