"""Issue 28, finding 12: the live line's clock read "[35.0/30s]" during final
reads. Only the workload runs against the time limit; after it the line names
the phase and counts that phase's own time."""

from __future__ import annotations

import io

from harness.run.progress import FINAL_READS, RECOVER, WORKLOAD, Progress, clock


def test_the_clock_never_overruns_the_limit() -> None:
    assert clock(WORKLOAD, 12.34, 30, 12.34) == "[ 12.3/30s] workload"
    assert clock(WORKLOAD, 30.4, 30, 30.4) == "[ 30.0/30s] workload"   # joining workers
    assert clock(FINAL_READS, 35.0, 30, 2.5) == "[30s done] final reads 2.5s"
    assert clock(RECOVER, 33.0, 30, 1.0) == "[30s done] recovering 1.0s"


def test_progress_names_the_phase_during_final_reads() -> None:
    out = io.StringIO()
    progress = Progress(30.0, out, plain_every=0)
    progress.update(WORKLOAD, {"ok": 10}, [])
    progress.started -= 35.0                           # the workload ran its 30 s and more
    progress.update(FINAL_READS, {"ok": 12}, [])
    first, last = out.getvalue().splitlines()
    assert first.startswith("[  0.0/30s] workload")
    assert last.startswith("[30s done] final reads 0.0s") and "/30s]" not in last
