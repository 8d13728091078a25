"""`faultline shrink RUN_DIR | HISTORY [--checker NAME] [--out DIR]`: the
smallest history found that the same checker still calls invalid for the
same reason (checkers.shrink), written as a run dir of its own."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from checkers.history import Op
from checkers.registry import ELLE, LINEARIZABILITY, OPS_OF, RW_REGISTER, ops_of
from checkers.rundir import HISTORY, RUN_JSON, VERDICTS_JSON, load_json
from checkers.shrink import DEFAULT_MAX_CHECKS, Judge, ShrinkRefused, Shrunk, lin_provenance
from checkers.verdict import Verdict
from harness.run.bounds import Range
from harness.run.errors import EXIT_INVALID, EXIT_UNKNOWN, UserError

SHRUNK_DIR = "shrunk"
SHRINK_JSON = "shrink.json"
# The checkers that judge the history alone, so a smaller history can be re-judged.
HISTORY_CHECKERS = (LINEARIZABILITY.name, ELLE.name, RW_REGISTER.name)
MAX_CHECKS = Range(1, 1_000_000)
REPLAYS = Range(1, 100)
BUDGET = Range(1, 10_000)
EPILOG = ("exit status: 1 the shrunk history is invalid (it always is when one is written; "
          "--schedule: a smaller schedule still fails), 2 (--schedule) no result yet (the "
          "budget ran out: run it again to go on) or the full schedule did not fail, "
          "254 bad arguments, an unusable input, or a history that is not invalid for a "
          "checker that judges the history alone (one sentence, nothing written), 255 "
          "harness error")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("shrink", help="minimize an invalid history, keeping its anomaly",
                       description="Cut an invalid history down while the checker still "
                       "finds the same anomaly: first to the anomaly's key and window (the "
                       "ops its counterexample or cycle names, the ops overlapping them, the "
                       "writes of the values they read), then by delta debugging over ops, "
                       "each candidate re-checked. Writes RUN_DIR/shrunk/ (or --out): a run "
                       "dir whose history.msgpack checks invalid on its own, its verdicts, "
                       "the counterexample page, and shrink.json (sizes before and after).",
                       epilog=EPILOG)
    p.add_argument("target", type=Path, metavar="RUN_DIR|HISTORY")
    p.add_argument("--checker", choices=HISTORY_CHECKERS,
                   help="which invalid verdict to keep (default: a run dir's first invalid "
                        "one of these; for a history file, linearizability)")
    p.add_argument("--model", help="a history file's model: the linearizability model "
                   "(default as check-lin chooses) or the Elle consistency model")
    p.add_argument("--out", type=Path, help="where the shrunk run dir goes (default "
                   f"RUN_DIR/{SHRUNK_DIR}; required for a history file)")
    p.add_argument("--schedule", action="store_true",
                   help="shrink the run's fault schedule instead, on real processes: drop "
                        "fault episodes (delta debugging), shorten each kept one, cut the "
                        "workload's time and move faults later within it, each "
                        "candidate replayed --replays times and kept when it fails at least "
                        "as often as the original reproduced (its reproduction.json, else "
                        "every time); resumable: the same command goes on where it stopped")
    p.add_argument("--replays", type=int, default=2, metavar="K",
                   help="--schedule: replays per candidate (default %(default)s)")
    p.add_argument("--parallel", type=int, default=1, metavar="P",
                   help="--schedule: replays at once (default %(default)s)")
    p.add_argument("--budget", type=int, default=40, metavar="N",
                   help="--schedule: replays this invocation may run (default %(default)s)")
    p.add_argument("--results", type=Path, help="--schedule: where the replays go (default "
                   "$FAULTLINE_RESULTS or ./results)")
    p.add_argument("--live-triggers", action="store_true",
                   help="--schedule: replay with the trigger faults armed again, firing "
                        "at their own moment (see faultline replay)")
    p.add_argument("--yes", action="store_true",
                   help="--schedule: replay without asking (see faultline replay)")
    p.add_argument("--max-checks", type=int, default=DEFAULT_MAX_CHECKS, metavar="N",
                   help="re-checks delta debugging may make (default %(default)s); past it "
                        "the result is smaller but maybe not minimal, and says so")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    problem = MAX_CHECKS.problem("--max-checks", args.max_checks)
    if problem is not None:
        raise UserError(problem)
    say = lambda s: print(f"shrink: {s}", file=sys.stderr, flush=True)  # noqa: E731
    if args.schedule:
        return shrink_schedule(args, say)
    if args.target.is_dir():
        ops, run, name, options = from_run_dir(args.target, args.checker)
        out = args.out or args.target / SHRUNK_DIR
    elif args.target.is_file():
        if args.out is None:
            raise UserError("a history file's shrunk run dir needs a place: give --out DIR")
        ops, run, name, options = from_history(args.target, args.checker, args.model)
        out = args.out
    else:
        raise UserError(f"{args.target} is neither a run dir nor a history file")
    judge = make_judge(name, options, run)
    provenance = None
    if name == LINEARIZABILITY.name:
        from checkers.models import ModelError, get_model
        try:
            model = get_model(options.get("model", "cas-register"),
                              options.get("model_options"))
        except ModelError as e:
            raise UserError(str(e)) from None
        provenance = lin_provenance(model)
    from checkers.shrink import shrink
    try:
        shrunk = shrink(ops, judge, provenance=provenance, max_checks=args.max_checks,
                        progress=say)
    except ShrinkRefused as e:
        raise UserError(f"cannot shrink {args.target} by {name}: {e}") from None
    write_shrunk(out, args.target, run, name, options, shrunk)
    print("\n".join(summary_lines(args.target, out, name, shrunk)))
    return EXIT_INVALID


def shrink_schedule(args: argparse.Namespace, say: Any) -> int:
    from harness.commands.replay import PARALLEL, confirm
    from harness.results.store import results_dir
    from harness.run.schedule_shrink import ScheduleShrink, result_lines
    for problem in (REPLAYS.problem("--replays", args.replays),
                    PARALLEL.problem("--parallel", args.parallel),
                    BUDGET.problem("--budget", args.budget)):
        if problem is not None:
            raise UserError(problem)
    if not (args.target / RUN_JSON).is_file():
        raise UserError(f"{args.target} is not a run dir (it has no {RUN_JSON})")
    confirm(args.target, args.yes)
    from harness.run.replay import ReplayError
    try:
        shrinker = ScheduleShrink(args.target, results_dir(args.results), args.replays,
                                  args.parallel, args.budget, say, args.live_triggers)
    except ReplayError as e:
        raise UserError(f"cannot replay {args.target}: {e}") from None
    result = shrinker.run()
    print("\n".join(result_lines(result, args.replays)))
    if result.get("run_dir") is not None and not result.get("stopped"):
        return EXIT_INVALID
    return EXIT_UNKNOWN


def from_run_dir(run_dir: Path, checker: str | None
                 ) -> tuple[list[Op], dict[str, Any], str, dict[str, Any]]:
    from checkers.rundir import read_history
    from workloads.judging import plan_for
    if not (run_dir / HISTORY).is_file() or not (run_dir / RUN_JSON).is_file():
        raise UserError(f"{run_dir} is not a run dir with a history (no {RUN_JSON} or "
                        f"{HISTORY})")
    run = load_json(run_dir / RUN_JSON)
    plan = plan_for(run)
    if checker is None:
        try:
            stored = load_json(run_dir / VERDICTS_JSON).get("checkers") or {}
        except Exception:  # unchecked: judge with the plan's first history checker
            stored = {}
        invalid = [n for n in HISTORY_CHECKERS if n in plan
                   and (stored.get(n) or {}).get("valid") is False]
        judged = [n for n in HISTORY_CHECKERS if n in plan]
        others = [n for n, v in stored.items() if isinstance(v, dict)
                  and v.get("valid") is False and n not in HISTORY_CHECKERS]
        if not judged or (others and not invalid):
            said = f"its invalid verdicts ({', '.join(others)})" if others else \
                f"its checkers ({', '.join(plan)})"
            raise UserError(f"cannot shrink {run_dir}: {said} judge the nodes or the whole "
                            "run, not the history alone, so no smaller history can be "
                            "re-checked for them")
        checker = (invalid or judged)[0]
    elif checker not in plan:
        raise UserError(f"{run_dir} was not judged by {checker} (its checkers: "
                        f"{', '.join(plan)})")
    ops, options = read_history(run_dir / HISTORY).ops, dict(plan[checker])
    workload = options.pop(OPS_OF, None)
    if workload is not None:
        # The checker judged its workload's ops alone (a companion's or the
        # main one's): the shrunk history is cut from those.
        ops = ops_of(ops, workload, str((run.get("config") or {}).get("workload", "")))
    return ops, run, checker, options


def from_history(path: Path, checker: str | None, model: str | None
                 ) -> tuple[list[Op], dict[str, Any], str, dict[str, Any]]:
    from checkers.formats import read_any
    from checkers.history import client_ops
    ops = read_any(str(path), None).ops
    name = checker or LINEARIZABILITY.name
    if name == LINEARIZABILITY.name:
        from harness.commands.check_lin import choose_model
        options = {"model": choose_model(model, client_ops(ops))}
        config = {"checkers": [name], "lin_model": options["model"]}
    else:
        options = {"model": model} if model else {}
        config = {"checkers": [name], **({"consistency_model": model} if model else {})}
    return ops, {"run_id": path.name, "config": config}, name, options


def make_judge(name: str, options: dict[str, Any], run: dict[str, Any]) -> Judge:
    from checkers.history import History
    from checkers.registry import CHECKS
    from checkers.rundir import Run

    def judge(ops: list[Op]) -> Verdict:
        return CHECKS[name].fn(Run(Path("."), run, History(ops)), options)
    return judge


def shrunk_run_json(original: Path, run: dict[str, Any], name: str,
                    options: dict[str, Any], s: Shrunk) -> dict[str, Any]:
    """Pure: the shrunk run dir's run.json: the original's, judged by `name`
    alone (no node files come along), saying where it came from."""
    config = dict(run.get("config") or {})
    config["checkers"] = [name]
    if name == LINEARIZABILITY.name and options.get("model"):
        config["lin_model"] = options["model"]
    doc = {**{k: v for k, v in run.items() if k not in ("schedule", "planned_schedule")},
           "config": config, "artifacts": [], "status": "complete",
           "run_id": f"{run.get('run_id', original.name)}-shrunk"}
    doc["shrunk_of"] = {"path": str(original.resolve()), "checker": name,
                        "anomaly": s.target.text()}
    return doc


def shrink_document(original: Path, name: str, s: Shrunk) -> dict[str, Any]:
    """Pure: shrink.json, the sizes and what each pass kept."""
    return {"original": str(original.resolve()), "checker": name, "anomaly": s.target.text(),
            "ops_before": s.ops_before, "ops_after": s.ops_after,
            "ratio": round(s.ratio, 4), "events_before": s.events_before,
            "events_after": s.events_after, "checks": s.checks, "steps": s.steps,
            "budget_reached": s.budget_hit, "origin_indices": s.origin}


def write_shrunk(out: Path, original: Path, run: dict[str, Any], name: str,
                 options: dict[str, Any], s: Shrunk) -> None:
    from checkers.history import pack_op
    from harness.report.views import judge
    if out.exists():
        if not (out / SHRINK_JSON).is_file():
            raise UserError(f"{out} exists and is not a shrunk run dir: not overwriting it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / HISTORY).write_bytes(b"".join(pack_op(op) for op in s.ops))
    (out / RUN_JSON).write_text(json.dumps(shrunk_run_json(original, run, name, options, s),
                                           indent=2, default=repr) + "\n")
    (out / SHRINK_JSON).write_text(json.dumps(shrink_document(original, name, s),
                                              indent=2) + "\n")
    # verdicts.json (bound to the history), linearizability.html and report.html
    judge(out)


def summary_lines(original: Path, out: Path, name: str, s: Shrunk) -> list[str]:
    lines = [f"shrunk {original} by {name} ({s.target.text()}): {s.ops_before} -> "
             f"{s.ops_after} ops ({s.ratio:.1%}), {s.events_before} -> {s.events_after} "
             f"history events, {s.checks} checks"
             + ("; the check budget ran out, so it may shrink further" if s.budget_hit
                else "")]
    lines += [f"  {step}" for step in s.steps]
    page = "linearizability.html" if name == LINEARIZABILITY.name else "report.html"
    lines.append(f"shrunk run dir: {out} (counterexample: {out / page})")
    command = {LINEARIZABILITY.name: "check-lin", ELLE.name: "check-elle",
               RW_REGISTER.name: "check-elle --workload rw-register"}[name]
    lines.append(f"check it alone: faultline {command} {out / HISTORY}")
    return lines
