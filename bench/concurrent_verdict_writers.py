"""How many runs' rows survive K processes updating one verdicts.parquet at once.

    .venv/bin/python bench/concurrent_verdict_writers.py [--repo DIR] [--writers 8] [--trials 10]

`--repo` runs the writers against another checkout (e.g. /work/main, to see
the rows lost before the update was locked). Prints, per trial, the runs kept
and the writers that failed, then K/N trials that kept every row.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

WRITER = r"""
import sys, time
from pathlib import Path
import pandas as pd
from checkers.spark.check_job import _row, update_table
out, run, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
rows = pd.DataFrame([_row(run, "stats", "k", {"valid": True}, 0.1)])
while not go.exists():
    time.sleep(0.001)
update_table(out, rows)
"""


def trial(repo: Path, writers: int) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as d:
        out, go = Path(d), Path(d) / "go"
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(out), f"run-{i}", str(go)],
                                  cwd=repo, stderr=subprocess.DEVNULL)
                 for i in range(writers)]
        go.touch()
        failed = sum(p.wait() != 0 for p in procs)
        try:
            kept = len(set(pq.read_table(out / "verdicts.parquet").column("run").to_pylist()))
        except OSError:
            kept = 0
    return kept, failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args()
    whole = 0
    for t in range(args.trials):
        kept, failed = trial(args.repo, args.writers)
        whole += kept == args.writers
        print(f"trial {t + 1}: {kept}/{args.writers} runs kept, {failed} writer(s) failed")
    print(f"{whole}/{args.trials} trials kept every run's rows ({args.repo})")


if __name__ == "__main__":
    main()
