"""One real run per bug switch, as bench/detection.py makes it (3 nodes,
register, 30 s, the nemesis from nodes.raft.bugs.CALIBRATION, default
checkers, no thresholds): each must be caught by a checker its plan names.

commit-dirty: a run is caught when one power cut lands right after the ack of
a young write (nemesis.triggers): every such cut measured so far lost an
acknowledged write (58 of 58, README), and each run had 1-6 of them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from nodes.raft import bugs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import detection  # noqa: E402
import power_cuts  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and LazyFS need root")]


# Scenario A shows only when a partition cuts a node off while its log is as
# long as the others' (bugs.CALIBRATION says why): at 0.25 op/s 20 of 20 runs
# of 30 s caught it, the first 10 with 1 to 8 such pre-votes each (README). A run twice as
# long gives it twice the partitions to land in.
TIME_LIMIT_S = {bugs.PRE_VOTE_WHILE_FOLLOWING: 60.0}


@pytest.mark.parametrize("switch", sorted(bugs.CALIBRATION))
def test_a_real_run_catches_the_switch(switch: str, tmp_path: Path) -> None:
    time_limit = TIME_LIMIT_S.get(switch, 30.0)
    planned = detection.Planned(switch, f"{switch} seed 1",
                                detection.switch_config(switch, 1, time_limit)
                                | {"bugs": [switch]})
    outcome = detection.execute(planned, tmp_path, 0)
    log = (tmp_path / "runs" / "000" / "output.log").read_text()[-3000:]
    if switch == bugs.COMMIT_DIRTY and outcome.run_dir and \
            (Path(outcome.run_dir) / "verdicts.json").exists():
        # What each power cut did, to tell a cut that came late from one
        # that never found a young write.
        log += "".join(f"\ncut: {c}" for c in power_cuts.cuts(Path(outcome.run_dir)))
    assert outcome.exit_code == 1, log
    assert set(outcome.invalid_checkers) & set(bugs.CALIBRATION[switch]["caught_by"]), log
