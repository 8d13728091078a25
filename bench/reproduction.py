"""Issue 33's done-when table: on failing runs of the bug switches and of the
unplanted bugs, how often each failure comes back, how small its history
shrinks, and how few faults its schedule keeps.

    sudo .venv/bin/python bench/reproduction.py [--out DIR] [--switch NAME ...]
        [--unplanted NAME ...] [--time-limit 15] [--unplanted-time-limit 20]
        [--count 5] [--parallel 2] [--schedule-replays 2] [--schedule-budget 12]
        [--seeds N] [--phase runs|schedule|all] [--table]

Targets: every bug switch of nodes.raft.bugs.CALIBRATION under its designed
plan (bench/detection.switch_config: register, 3 nodes unless the row says
otherwise, seed 1), and every bug of bench/unplanted (bench/hunt.py's default
run: 5 nodes, no --nemesis, seed 1; register, or the workload given as
NAME:WORKLOAD) run from a scratch copy with the patch applied. For each target:

1. `faultline run` with seed 1, then 2, ... up to `--seeds N` (default 1)
   until one is invalid; the seeds tried are stored and shown (a miss is
   never hidden); a target none of whose seeds failed is listed and left there.
2. `faultline replay RUN --count N --parallel K --yes`: the reproduction rate;
   for a plan with a trigger fault (power-cut-after-commit, ...), also with
   `--live-triggers`, the triggers armed again instead of their recorded
   firing replayed at its recorded instant (the schedule phase uses it too).
3. `faultline shrink RUN`: ops before and after and whether the shrunk
   history is still invalid with the same anomaly, or the reason it refuses.
4. (`--phase schedule`) `faultline shrink RUN --schedule --replays R
   --budget B`: fault injections before and after, and the rate.

Every command runs from the target's tree (the repo, or a scratch copy made
afresh for each phase, so the schedule phase runs the code of the time it
starts). Each step's outcome is stored in DIR/state.json as soon as it is
known, and a step already stored is not run again: the same command resumes.
`--table` prints the Markdown table from DIR/state.json and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from detection import cli_args, switch_config  # noqa: E402
from run_outcomes import copy_first_env  # noqa: E402
from scratch import scratch_copy, unplanted_bugs  # noqa: E402

from nemesis.base import TRIGGER_FAULTS, split_spec  # noqa: E402
from nodes.raft.bugs import CALIBRATION  # noqa: E402

TARGET_SHARE = 0.10      # the bar: a shrunk history keeps at most 10% of its ops
TARGET_FAULTS = 3        # ... and a shrunk schedule at most 3 faults
UNPLANTED_NODES = 5
SEED = 1
Row = dict[str, Any]


def targets(switches: list[str], unplanted: list[str], time_limit: float,
            unplanted_time_limit: float) -> list[Row]:
    """Pure: every target's name, kind and `faultline run` arguments, a switch
    and an unplanted bug in turn (a bench stopped early covers both kinds)."""
    mine = [{"name": name, "kind": "switch",
             "args": cli_args(switch_config(name, SEED, time_limit) | {"bugs": [name]})}
            for name in switches]
    theirs = []
    for spec in unplanted:
        bug, _, workload = spec.partition(":")
        theirs.append({"name": spec, "kind": "unplanted", "bug": bug,
                       "args": ["--workload", workload or "register", "--nodes",
                                str(UNPLANTED_NODES), "--time-limit",
                                f"{unplanted_time_limit:g}", "--seed", str(SEED)]})
    out = []
    for i in range(max(len(mine), len(theirs))):
        out += mine[i:i + 1] + theirs[i:i + 1]
    return out


def live(target: Row) -> bool:
    """Pure: the target's plan arms a trigger fault (which fires on node events)."""
    args = target["args"]
    if "--nemesis" not in args:
        return False
    specs = args[args.index("--nemesis") + 1].split(",")
    return any(split_spec(spec)[0] in TRIGGER_FAULTS for spec in specs)


def share(before: int, after: int) -> float:
    return after / before if before else 1.0


def row_cells(r: Row) -> list[str]:
    """Pure: one table row: run, its failure, replay rate, history shrink,
    schedule shrink."""
    run = r.get("run") or {}
    if not run:
        return [r["name"], "not run yet", "", "", ""]
    tried = run.get("seeds_tried") or [SEED]
    seeds = (f"seed {tried[-1]}" if len(tried) == 1 else
             f"seed {tried[-1]} ({len(tried)} tried: exits "
             f"{', '.join(str(e) for e in run.get('exits') or [])})")
    if run.get("exit") != 1:
        return [r["name"], f"not invalid (exit {run.get('exit')}; "
                f"{seeds.replace('seed ', 'last seed ', 1)})", "-", "-", "-"]
    failure = ", ".join(run.get("invalid") or []) + f"; {seeds}"
    rep = r.get("replay")
    replay = (f"{rep['reproduced']}/{rep['count']} ({rep['label']}); same verdict "
              f"{rep['same_verdict']}/{rep['count']}") if rep else "not run"
    if (rl := r.get("replay_live")):
        replay += (f"; live triggers {rl['reproduced']}/{rl['count']}, same verdict "
                   f"{rl['same_verdict']}/{rl['count']}")
    h = r.get("history")
    if not h:
        history = "not run"
    elif h.get("refused"):
        # "cannot shrink RUN_DIR by C: why" -> the why (the run dir is the row's)
        history = f"refused: {h['refused'].split(': ', 1)[-1]}"
    else:
        kept = "verdict kept" if h.get("verdict_kept") else "VERDICT LOST"
        mark = "" if share(h["before"], h["after"]) <= TARGET_SHARE else " (over 10%)"
        history = (f"{h['checker']}: {h['before']} -> {h['after']} ops "
                   f"({share(h['before'], h['after']):.1%}){mark}, {kept}")
    s = r.get("schedule")
    if not s:
        schedule = "not run"
    elif s.get("faults_after") is None:
        schedule = f"{s.get('faults_before', '?')} faults: no result ({s.get('why')})"
    else:
        changes = [f"shortened to {f:g}" for f in (s.get("shortened") or {}).values()]
        changes += [f"moved {d:g} s later" for d in (s.get("moved_later_s") or {}).values()]
        schedule = (f"{s['faults_before']} -> {s['faults_after']} faults"
                    + "".join(f", {c}" for c in changes)
                    + f", {s['time_limit']:g} s; failed {s['reproduced']}/{s['count']} "
                    f"(full schedule {s['needed_rate']:.0%}); {s['replays_spent']} replays"
                    + ("; budget ran out (best so far)" if s.get("stopped") else ""))
    return [r["name"], failure, replay, history, schedule]


def table(rows: list[Row]) -> list[str]:
    """Pure: the Markdown table and the issue's three counts."""
    lines = ["| run | invalid by | replay --count 5: reproduced | history shrink | "
             "schedule shrink |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row_cells(r)) + " |" for r in rows]
    failing = [r for r in rows if (r.get("run") or {}).get("exit") == 1]
    rated = [r for r in failing if r.get("replay")]
    shrunk = [r for r in failing if (h := r.get("history")) and not h.get("refused")]
    small = [r for r in shrunk if share(r["history"]["before"], r["history"]["after"])
             <= TARGET_SHARE and r["history"].get("verdict_kept")]
    refused = [r for r in failing if (r.get("history") or {}).get("refused")]
    tried = [r for r in failing if r.get("schedule")]
    few = [r for r in tried if (s := r["schedule"]).get("faults_after") is not None
           and s["faults_after"] <= TARGET_FAULTS and s["count"]
           and s["reproduced"] / s["count"] >= s["needed_rate"]]
    lines += ["", f"- failing runs: {len(failing)} of {len(rows)} targets; a replay rate "
              f"for {len(rated)} of them",
              f"- history shrunk to at most 10% of its ops with the verdict kept: "
              f"{len(small)} of {len(shrunk)} shrinkable; {len(refused)} refused with the "
              "reason (checkers that judge nodes, not the history)",
              f"- schedule shrunk to at most {TARGET_FAULTS} faults failing at least as often "
              f"as the full schedule: {len(few)} of {len(tried)} tried"]
    return lines


# --- the edge: processes and files -------------------------------------------

def faultline(tree: Path, args: list[str], log: Path) -> int:
    """`python -m harness ARGS` with `tree`'s code first on the path; output to `log`.
    A scratch copy is not the working directory: plug-ins are never loaded
    from the working directory (checkers.plugin_trust), and a replay's worker
    loads the raft package's rows before anything else imports it."""
    with open(log, "ab") as f:
        f.write(f"\n$ faultline {' '.join(args)}\n".encode())
        f.flush()
        return subprocess.run([sys.executable, "-m", "harness", *args],
                              cwd=tree if tree == ROOT else tree.parent,
                              env=copy_first_env(tree), stdout=f, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, check=False).returncode


def tree_for(target: Row, out: Path, phase: str) -> Path:
    if target["kind"] == "switch":
        return ROOT
    dest = out / "scratch" / f"{target['bug']}-{phase}"
    if dest.exists():
        shutil.rmtree(dest)
    return scratch_copy(dest, unplanted_bugs()[target["bug"]].patch)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def with_seed(args: list[str], seed: int) -> list[str]:
    """Pure: the `faultline run` arguments with `--seed` set to `seed`."""
    out = list(args)
    out[out.index("--seed") + 1] = str(seed)
    return out


def do_runs(target: Row, out: Path, tree: Path, log: Path, seeds: int,
            say: Callable[[str], None]) -> Row:
    """`faultline run` with seeds 1..`seeds` until one is invalid; the last
    run's outcome, with every seed tried and its exit status."""
    tried: list[int] = []
    exits: list[int] = []
    run: Row = {}
    for seed in range(SEED, SEED + seeds):
        args = with_seed(target["args"], seed)
        say(f"{target['name']}: faultline run {' '.join(args)}")
        run = do_run({**target, "args": args}, out, tree, log)
        tried.append(seed)
        exits.append(run["exit"])
        say(f"{target['name']}: seed {seed}: exit {run['exit']} invalid {run['invalid']} "
            f"{run['seconds']} s {run['dir']}")
        if run["exit"] == 1:
            break
    return run | {"seeds_tried": tried, "exits": exits}


def do_run(target: Row, out: Path, tree: Path, log: Path) -> Row:
    runs = out / "runs" / target["name"].replace(":", "-")
    runs.mkdir(parents=True, exist_ok=True)
    before = set(runs.iterdir())
    started = time.monotonic()
    code = faultline(tree, ["run", *target["args"], "--results", str(runs)], log)
    new = sorted(d for d in set(runs.iterdir()) - before if (d / "run.json").exists())
    verdicts = read_json(new[-1] / "verdicts.json") if new else None
    schedule = (read_json(new[-1] / "run.json") or {}).get("schedule") if new else None
    return {"exit": code, "dir": str(new[-1]) if new else None,
            "seconds": round(time.monotonic() - started),
            "faults": sum(1 for e in schedule or [] if e.get("f") == (e.get("fault") or "")
                          .split(":")[0]),
            "invalid": sorted(n for n, v in ((verdicts or {}).get("checkers") or {}).items()
                              if isinstance(v, dict) and v.get("valid") is False)}


def do_replay(run_dir: Path, tree: Path, log: Path, a: argparse.Namespace,
              live_triggers: bool = False) -> Row | None:
    faultline(tree, ["replay", str(run_dir), "--count", str(a.count), "--parallel",
                     str(a.parallel), "--yes", "--results", str(a.out / "replays")]
              + (["--live-triggers"] if live_triggers else []), log)
    doc = read_json(run_dir / "reproduction.json")
    if not doc:
        return None
    return {k: doc[k] for k in ("reproduced", "count", "same_verdict", "label")}


def last_line(log: Path) -> str:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def do_history(run_dir: Path, tree: Path, log: Path) -> Row:
    mine = log.with_suffix(".shrink.log")
    code = faultline(tree, ["shrink", str(run_dir)], mine)
    with open(log, "a") as f:
        f.write(mine.read_text(errors="replace"))
    doc = read_json(run_dir / "shrunk" / "shrink.json")
    if code != 1 or not doc:
        return {"refused": last_line(mine).removeprefix("faultline: "), "exit": code}
    verdicts = read_json(run_dir / "shrunk" / "verdicts.json") or {}
    mine_v = (verdicts.get("checkers") or {}).get(doc["checker"]) or {}
    kinds = {a.get("type") for a in mine_v.get("anomalies") or []}
    wanted = doc["anomaly"].split(" ")[0].split(":")[0]
    return {"checker": doc["checker"], "anomaly": doc["anomaly"], "before": doc["ops_before"],
            "after": doc["ops_after"], "checks": doc["checks"],
            "verdict_kept": mine_v.get("valid") is False and verdicts.get("valid") is False,
            "kinds": sorted(k for k in kinds if k), "wanted": wanted}


def do_schedule(run_dir: Path, tree: Path, log: Path, a: argparse.Namespace,
                live_triggers: bool) -> Row:
    faultline(tree, ["shrink", str(run_dir), "--schedule", "--replays",
                     str(a.schedule_replays), "--parallel", str(a.parallel), "--budget",
                     str(a.schedule_budget), "--yes", "--results",
                     str(a.out / "schedule-replays")]
              + (["--live-triggers"] if live_triggers else []), log)
    state = read_json(run_dir / "schedule-shrink.json") or {}
    result = dict(state.get("result") or {"why": "no result stored"})
    result["replays_spent"] = sum(t.get("count", 0) for t in (state.get("tried") or {}).values())
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "results" / "reproduction" /
                   datetime.now(UTC).strftime("%Y%m%dT%H%M%S"))
    p.add_argument("--switch", nargs="*", default=None, help="default: every CALIBRATION row")
    p.add_argument("--unplanted", nargs="*", default=None,
                   help="NAME or NAME:WORKLOAD (default: every bench/unplanted bug, register)")
    p.add_argument("--time-limit", type=float, default=15.0)
    p.add_argument("--unplanted-time-limit", type=float, default=20.0)
    p.add_argument("--count", type=int, default=5)
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--schedule-replays", type=int, default=2)
    p.add_argument("--schedule-budget", type=int, default=12)
    p.add_argument("--seeds", type=int, default=1,
                   help="seeds 1..N tried in turn until a run is invalid")
    p.add_argument("--phase", choices=("runs", "schedule", "all"), default="all")
    p.add_argument("--table", action="store_true", help="print the table from DIR/state.json")
    a = p.parse_args()
    # Absolute: every command runs from its target's tree, an unplanted bug's
    # scratch copy included, where a relative path would land.
    a.out = a.out.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    state_path = a.out / "state.json"
    state = read_json(state_path) or {"started": datetime.now(UTC).isoformat(
        timespec="seconds"), "rows": {}}
    if a.table:
        print("\n".join(table(list(state["rows"].values()))))
        return 0
    switches = sorted(CALIBRATION) if a.switch is None else a.switch
    unplanted = sorted(unplanted_bugs()) if a.unplanted is None else a.unplanted
    plan = targets(switches, unplanted, a.time_limit, a.unplanted_time_limit)

    def save() -> None:
        state["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        state_path.write_text(json.dumps(state, indent=2) + "\n")

    def say(s: str) -> None:
        print(f"[{datetime.now(UTC):%H:%M:%S}] {s}  (load {os.getloadavg()[0]:.1f})",
              flush=True)

    # --phase all goes target by target (each finished before the next starts),
    # so a bench stopped by a deadline leaves whole rows.
    steps = [(phase, t) for t in plan for phase in ("runs", "schedule")] if a.phase == "all" \
        else [(a.phase, t) for t in plan]
    for phase, t in steps:
        row = state["rows"].setdefault(t["name"], {"name": t["name"], "kind": t["kind"],
                                                   "args": t["args"]})
        log = a.out / "logs" / f"{t['name'].replace(':', '-')}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        run = row.get("run")
        if phase == "runs":
            if row.get("replay") is not None and row.get("history") is not None and \
                    (not live(t) or row.get("replay_live") is not None):
                continue
            tree = tree_for(t, a.out, phase)
            if run is None:
                row["run"] = run = do_runs(t, a.out, tree, log, a.seeds, say)
                save()
            if run["exit"] != 1 or not run["dir"]:
                continue
            if row.get("replay") is None:
                # A batch an interrupted bench left finished stands (not --live-triggers).
                done = read_json(Path(run["dir"]) / "reproduction.json")
                row["replay"] = ({k: done[k] for k in ("reproduced", "count",
                                                        "same_verdict", "label")}
                                 if done and done.get("count") == a.count
                                 and not done.get("live_triggers")
                                 else do_replay(Path(run["dir"]), tree, log, a))
                save()
                say(f"{t['name']}: replay {row['replay']}")
            if row.get("history") is None:
                row["history"] = do_history(Path(run["dir"]), tree, log)
                save()
                say(f"{t['name']}: history shrink {row['history']}")
            if live(t) and row.get("replay_live") is None:
                done = read_json(Path(run["dir"]) / "reproduction.json")
                row["replay_live"] = ({k: done[k] for k in ("reproduced", "count",
                                                             "same_verdict", "label")}
                                      if done and done.get("count") == a.count
                                      and done.get("live_triggers")
                                      else do_replay(Path(run["dir"]), tree, log, a, True))
                save()
                say(f"{t['name']}: replay with live triggers {row['replay_live']}")
        else:
            if not run or run["exit"] != 1 or not run["dir"] or \
                    ((s := row.get("schedule")) and not s.get("stopped")):
                continue
            tree = tree_for(t, a.out, phase)
            say(f"{t['name']}: schedule shrink")
            row["schedule"] = do_schedule(Path(run["dir"]), tree, log, a, live(t))
            save()
            say(f"{t['name']}: schedule shrink {row['schedule']}")
    state["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    save()
    print("\n".join(table([state["rows"][t["name"]] for t in plan
                           if t["name"] in state["rows"]])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
