"""The node checkers (node-state, node-logs, node-exits) over saved runs:
how many runs each flagged, and the anomalies' kinds.

    .venv/bin/python bench/node_checks.py RUN_DIR_OR_RESULTS_DIR ...

Each argument is a run dir or a directory searched for run dirs (any depth).
The checkers run in-process with today's code, whatever judged the run when
it ran; verdicts.json is not rewritten. Prints one line per run,
`CHECKER invalid K/N (unknown U)` per checker, and in how many runs the
node states could be judged against the history.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checkers.registry import (  # noqa: E402
    NODE_EXITS_CHECKER,
    NODE_LOGS_CHECKER,
    NODE_STATE,
    run_check,
    runnable,
)
from checkers.rundir import load_run  # noqa: E402
from workloads.judging import plan_for  # noqa: E402

NAMES = (NODE_STATE.name, NODE_LOGS_CHECKER.name, NODE_EXITS_CHECKER.name)


def run_dirs(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if (path / "run.json").exists():
            out.append(path)
        else:
            out.extend(sorted(p.parent for p in path.rglob("run.json")))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    invalid: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    judged: Counter[str] = Counter()
    against_history = 0
    for run_dir in run_dirs(args.paths):
        r = load_run(run_dir)
        plan = {n: o for n, o in runnable(r.run, plan_for(r.run)).items() if n in NAMES}
        found = []
        for name, options in plan.items():
            v, _ = run_check(name, r, options)
            judged[name] += 1
            against_history += bool(v["stats"].get("judged_against_history"))
            if v["valid"] is False:
                invalid[name] += 1
                kinds = Counter(a.get("type") for a in v["anomalies"])
                found.append(f"{name}: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
            elif v["valid"] == "unknown":
                unknown[name] += 1
                found.append(f"{name}: unknown ({v['stats'].get('reason')})")
        config = r.run.get("config") or {}
        print(f"{run_dir.name} {config.get('db')} {config.get('workload')} seed "
              f"{config.get('seed')}: {'; '.join(found) or 'valid'}")
    for name in NAMES:
        print(f"{name} invalid {invalid[name]}/{judged[name]} (unknown {unknown[name]})")
    print(f"node-state judged against the history in {against_history}/{judged[NODE_STATE.name]}"
          " (every node answered at one position, a leader known)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
