"""Judge a finished bench/hunt.py table's runs again with one checker of the
working tree, offline (nothing started), and print each run whose verdict
differs from the one saved in its verdicts.json (and every correct-build
run): how a checker change moves a measured hunt.

    .venv/bin/python bench/rejudge.py TABLE.json CHECKER
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checkers.registry import run_check  # noqa: E402
from checkers.rundir import load_run  # noqa: E402
from workloads.judging import plan_for  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("checker")
    args = parser.parse_args(argv)
    changed = 0
    runs = [r for r in json.loads(args.table.read_text())["runs"] if r.get("run_dir")]
    for r in runs:
        run_dir = Path(r["run_dir"])
        run = load_run(run_dir)
        new, _ = run_check(args.checker, run, plan_for(run.run)[args.checker])
        saved = json.loads((run_dir / "verdicts.json").read_text())["checkers"]
        old = (saved.get(args.checker) or {}).get("valid")
        kinds = sorted({a.get("type") for a in new.get("anomalies") or []})
        if new["valid"] != old or r["group"] == "correct":
            print(r["group"], run_dir.parent.name, "saved", old, "now", new["valid"], kinds)
        changed += new["valid"] != old
    print(f"{changed} of {len(runs)} verdicts of {args.checker} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
