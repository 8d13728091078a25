"""The read-commit-point checker over saved hunt runs, offline: per bug (and
the correct build), how many runs its `read-behind-commit-point` rule flags.
Nothing is started; each run is judged through the registry, as `faultline
run` and `faultline check` judge it (docs/hunt.md, "read-behind-commit-point
over the saved hunts").

    .venv/bin/python bench/read_commit_point_hunt.py [--table TABLE.json ...]
        [--planned HUNT_DIR:SEEDS:CORRECT_SEEDS[:SEED_BASE] ...] [--run RUN_DIR ...]

`--table`: a bench/hunt.py table.json, whose runs name their bug and run dir.
`--planned`: a hunt dir whose table was not written (a hunt still running,
or stopped): its runs/NNN are matched to bench/hunt.py's plan for those
arguments (every bug, both default workloads), and a run whose workload or
seed differs from the plan's is left out. `--run`: any run dir (an etcd or
Redis run, say), judged and printed alone. A run dir without verdicts.json
(unfinished) is skipped.

The rule judges a read only where the answering process's start line says
it writes its `hw` lines before its answers (`hw_before_answers`), which no
saved hunt run's does: the raft store has ordered them so since cbf6e05
(2026-11-27 06:05 UTC), and says so since this rule. So a run is judged as
if it said so (the checker's `assume_hw_before_answers`) when its code is
known to descend from cbf6e05: a table's `code` commit, or for a hunt dir
without a table, hw lines naming `counted` (which cbf6e05 brought with the
reorder). Older runs stay `unknown`, as the checker leaves them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hunt import WORKLOADS, plan  # noqa: E402
from scratch import unplanted_bugs  # noqa: E402

from checkers.registry import run_check, skipped_checks  # noqa: E402
from checkers.rundir import load_run  # noqa: E402
from workloads.judging import plan_for  # noqa: E402

NAME = "read-commit-point"
# The raft store's commit that writes a ready's lines before its answers.
LINES_FIRST = "cbf6e05"


@dataclass
class Judged:
    group: str
    run_dir: str
    valid: Any
    assumed: bool
    caught_before: bool = False    # another checker of the run already invalid
    reads: int = 0
    behind: int = 0
    reason: str = ""


def run_dir_of(root: Path) -> Path | None:
    """The run dir under a hunt's runs/NNN (or `root` itself), finished only."""
    dirs = [root] if (root / "run.json").exists() else sorted(
        d for d in root.iterdir() if (d / "run.json").exists())
    return dirs[-1] if dirs and (dirs[-1] / "verdicts.json").exists() else None


def lines_first(code: str | None) -> bool:
    """Whether commit `code` has the raft store's lines-before-answers order."""
    return code is not None and subprocess.run(
        ["git", "merge-base", "--is-ancestor", LINES_FIRST, code.split()[0]],
        cwd=ROOT, capture_output=True, check=False).returncode == 0


def judge(group: str, run_dir: Path, code: str | None = None) -> Judged:
    """`code`: the commit the run ran, if known."""
    r = load_run(run_dir)
    plan = plan_for(r.run)
    skipped = skipped_checks(r.run, plan)
    if NAME in skipped:
        return Judged(group, str(run_dir), "skipped", False, reason=skipped[NAME])
    assume = lines_first(code) if code is not None else any(
        "counted" in ev for lines in (r.events or {}).values() for ev in lines)
    v, _ = run_check(NAME, r, {**plan[NAME], "assume_hw_before_answers": assume})
    stats = v.get("stats") or {}
    saved = json.loads((run_dir / "verdicts.json").read_text())
    before = any(c.get("valid") is False for n, c in (saved.get("checkers") or {}).items()
                 if n != NAME)
    return Judged(group, str(run_dir), v["valid"], assume, before, stats.get("reads_judged", 0),
                  stats.get("reads_behind", 0), str(stats.get("reason", "")))


def from_table(path: Path) -> list[tuple[str, Path, str | None]]:
    doc = json.loads(path.read_text())
    code = (doc.get("args") or {}).get("code")
    return [(r["group"], Path(r["run_dir"]), code) for r in doc["runs"] if r.get("run_dir")]


def from_plan(spec: str) -> list[tuple[str, Path, str | None]]:
    hunt_dir, seeds, correct, *base = spec.split(":")
    planned = plan(sorted(unplanted_bugs()) if int(seeds) else [], list(WORKLOADS),
                   int(seeds), int(base[0]) if base else 1, int(correct))
    out = []
    for i, p in enumerate(planned):
        root = Path(hunt_dir) / "runs" / f"{i:03d}"
        d = run_dir_of(root) if root.is_dir() else None
        if d is None:
            continue
        config = json.loads((d / "run.json").read_text()).get("config") or {}
        if (config.get("workload"), config.get("seed")) == (p.workload, p.seed):
            out.append((p.group, d, None))
        else:
            print(f"left out (not the plan's run): {d}", file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, action="append", default=[])
    parser.add_argument("--planned", action="append", default=[])
    parser.add_argument("--run", type=Path, action="append", default=[])
    args = parser.parse_args()
    runs: list[tuple[str, Path, str | None]] = []
    for t in args.table:
        runs += [(g, d, c) for g, d, c in from_table(t) if run_dir_of(d) is not None]
    for spec in args.planned:
        runs += from_plan(spec)
    groups: dict[str, list[Judged]] = defaultdict(list)
    for group, d, code in runs:
        j = judge(group, run_dir_of(d) or d, code)
        groups[group].append(j)
        if j.valid is False:
            print(f"flagged: {group} {j.run_dir} ({j.behind} reads behind)", file=sys.stderr)
    print("| build | runs flagged | of them caught by no other checker | ok linearizable "
          "reads judged | reads behind | unknown (code before the order) |")
    print("|---|---|---|---|---|---|")
    for group in sorted(groups, key=lambda g: (g != "correct", g)):
        js = groups[group]
        judged = [j for j in js if j.valid in (True, False)]
        flagged = sum(j.valid is False for j in js)
        alone = sum(j.valid is False and not j.caught_before for j in js)
        print(f"| {group} | {flagged}/{len(judged)} | {alone} | "
              f"{sum(j.reads for j in js):,} | {sum(j.behind for j in js):,} | "
              f"{len(js) - len(judged)} |")
    for d in args.run:
        rd = run_dir_of(d) or d
        j = judge("-", rd)
        print(f"{rd}: {j.valid} reads {j.reads} behind {j.behind} {j.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
