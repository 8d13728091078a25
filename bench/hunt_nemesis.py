"""What the default nemesis (the hunt) reaches and catches, against the old default.

    sudo .venv/bin/python bench/hunt_nemesis.py elections [--system raft]
        [--workload register] [--nodes 3] [--time-limit 20] [--seeds 1,2,3]
    sudo .venv/bin/python bench/hunt_nemesis.py switches [--time-limit 30] [--seeds 1]
        [--only NAME,...] [--parallel 2]

`elections`: for each seed, one run under the old default (`--nemesis
partition,kill`) and one under the new (no `--nemesis`; `--new-only`: that
one only); prints each run's
verdict, its elections (the elections checker's count, where the system
leaves event lines), the hunt's decisions and distinct signatures, then
K/N valid and the mean elections per run for each.
`switches`: each bug switch of nodes/raft/bugs.py CALIBRATION with its node
count, node options, client options and rate, but no `--nemesis` (the
default hunt instead of its designed fault); prints K/N caught per switch.
`--parallel N` runs N of its runs at a time (each in its own results
subdirectory, `<switch>-s<seed>`; the runs are independent), else one at a
time; each run's dir is printed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodes.raft.bugs import CALIBRATION  # noqa: E402

OLD_DEFAULT = "partition,kill"


def run(args: list[str], results: Path) -> dict[str, Any]:
    """One `faultline run`; what its run dir says."""
    results.mkdir(parents=True, exist_ok=True)
    before = set(results.iterdir())
    started = time.monotonic()
    code = subprocess.run([str(ROOT / ".venv/bin/faultline"), "run", "--results", str(results),
                           *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    new = sorted(set(results.iterdir()) - before)
    out: dict[str, Any] = {"exit": code, "seconds": round(time.monotonic() - started),
                           "dir": str(new[-1]) if new else None}
    if not new:
        return out
    try:
        verdicts = json.loads((new[-1] / "verdicts.json").read_text())
        doc = json.loads((new[-1] / "run.json").read_text())
    except (OSError, ValueError):
        return out
    checkers = verdicts.get("checkers") or {}
    out["invalid"] = sorted(n for n, v in checkers.items() if v.get("valid") is False)
    out["elections"] = ((checkers.get("elections") or {}).get("stats") or {}).get("elections")
    hunt = [e["value"] for e in doc.get("schedule") or []
            if isinstance(e.get("value"), dict) and "decisions" in e["value"]]
    if hunt:
        out["decisions"] = len(hunt[0]["decisions"])
        out["signatures"] = len(hunt[0]["coverage"])
        out["moves"] = [d["move"] for d in hunt[0]["decisions"]]
    return out


def elections(a: argparse.Namespace) -> None:
    base = ["--system", a.system, "--workload", a.workload, "--nodes", str(a.nodes),
            "--time-limit", str(a.time_limit)]
    rows: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for seed in a.seeds:
        for label, extra in (("old", ["--nemesis", OLD_DEFAULT]), ("new", [])):
            if label == "old" and a.new_only:
                continue
            out = run([*base, "--seed", str(seed), *extra], a.results)
            rows[label].append(out)
            print(f"{label} seed {seed}: exit {out['exit']} elections {out.get('elections')} "
                  f"decisions {out.get('decisions', '-')} signatures "
                  f"{out.get('signatures', '-')} invalid {out.get('invalid')} "
                  f"moves {out.get('moves', '-')} {out['dir']}", flush=True)
    for label, outs in rows.items():
        if not outs:
            continue
        valid = sum(o["exit"] == 0 for o in outs)
        counts = [o["elections"] for o in outs if isinstance(o.get("elections"), int)]
        mean = f"{sum(counts) / len(counts):.1f}" if counts else "-"
        print(f"{label} ({OLD_DEFAULT if label == 'old' else 'hunt'}): valid {valid}/{len(outs)}"
              f", elections per run {counts} (mean {mean})")


def switch_args(name: str, time_limit: float) -> list[str]:
    """Pure: the run of one switch with its CALIBRATION row but no `--nemesis`."""
    row = CALIBRATION[name]
    args = ["--system", "raft", "--workload", "register", "--nodes",
            str(row.get("nodes", 3)), "--time-limit", str(time_limit), "--bug", name,
            "--rate", str(row.get("rate", 200.0))]
    for key, value in (row.get("node_options") or {}).items():
        args += ["--node-option", f"{key}={json.dumps(value)}"]
    for key, value in (row.get("workload_options") or {}).items():
        args += ["--client-option", f"{key}={json.dumps(value)}"]
    return args


def switches(a: argparse.Namespace) -> None:
    names = a.only or sorted(CALIBRATION)
    planned = [(name, seed) for name in names for seed in a.seeds]

    def one(item: tuple[str, int]) -> dict[str, Any]:
        name, seed = item
        # Its own results dir: `run` finds its run dir as the one that appeared.
        out = run([*switch_args(name, a.time_limit), "--seed", str(seed)],
                  a.results / f"{name}-s{seed}")
        print(f"  {name} seed {seed}: exit {out['exit']} invalid {out.get('invalid')} "
              f"moves {out.get('moves', '-')} {out['dir']}", flush=True)
        return out

    with ThreadPoolExecutor(max_workers=a.parallel) as pool:
        outs = dict(zip(planned, pool.map(one, planned), strict=True))
    for name in names:
        row = CALIBRATION[name]
        mine = [outs[(name, seed)] for seed in a.seeds]
        caught = sum(o["exit"] == 1 for o in mine)
        print(f"{name}: caught {caught}/{len(mine)} by "
              f"{sorted({c for o in mine for c in o.get('invalid') or []})} "
              f"(designed fault {','.join(row['nemesis'])}; exits {[o['exit'] for o in mine]}; "
              f"elections {[o.get('elections') for o in mine]}) "
              f"{[o['dir'] for o in mine]}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("elections", "switches"))
    p.add_argument("--system", default="raft")
    p.add_argument("--workload", default="register")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=20.0)
    p.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 3])
    p.add_argument("--only", type=lambda s: s.split(","), default=None)
    p.add_argument("--parallel", type=int, default=1,
                   help="switches: runs at a time (each in its own results subdirectory)")
    p.add_argument("--new-only", action="store_true",
                   help="elections: the new default only (false positives of the correct build)")
    p.add_argument("--results", type=Path, default=Path("/tmp/faultline-hunt-nemesis"))
    a = p.parse_args()
    if a.parallel < 1:
        p.error("--parallel must be >= 1")
    a.results.mkdir(parents=True, exist_ok=True)
    (elections if a.mode == "elections" else switches)(a)


if __name__ == "__main__":
    main()
