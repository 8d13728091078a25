"""`faultline replay RUN_DIR [--count N [--parallel K]] [--results DIR]`: run a
saved run again, as it was; with --count, N times, and say how often its
failure came back."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.results.store import results_dir
from harness.run.bounds import MAX_PARALLEL, MAX_REPEATS, Range
from harness.run.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, UserError
from harness.run.reproduction import REPRODUCTION_JSON

COUNT = Range(1, MAX_REPEATS)
PARALLEL = Range(1, MAX_PARALLEL)

EPILOG = ("exit status: the replay's verdict (0 valid, 1 invalid, 2 unknown; with --count, "
          "1 if any replay reproduced the original's failure, 0 if none did, 2 if the "
          "original was not invalid or no replay was checked), 254 bad arguments, an "
          "unusable run dir, or no confirmation (nothing started), 255 harness error; the "
          "output says whether the original verdict reproduced")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="re-run a saved run with its seed and executed schedule",
                       description="Re-run a saved run with its config, seed and nemesis "
                       "schedule as executed (times included) into a new run dir whose "
                       "run.json has replay_of; check it and compare the verdicts. To "
                       "re-check the saved history without re-running, use faultline check.",
                       epilog=EPILOG)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--results", type=Path, help="where the new run goes (default "
                   "$FAULTLINE_RESULTS or ./results)")
    p.add_argument("--count", type=int, default=None, metavar="N",
                   help="replay N times, each in its own process, and print `reproduced K "
                        "of N` (the same verdict and anomaly kinds); the rate is stored in "
                        f"RUN_DIR/{REPRODUCTION_JSON}, which gate reads")
    p.add_argument("--parallel", type=int, default=1, metavar="K",
                   help="with --count: replays at once (default 1)")
    p.add_argument("--live-triggers", action="store_true",
                   help="replay with the trigger faults (those a system fires on its own event "
                        "lines, e.g. a power cut after a commit) armed again, firing at their "
                        "own moment, "
                        "instead of what they fired re-executed at its recorded time")
    p.add_argument("--yes", action="store_true",
                   help="replay without asking: the run dir's system and options are trusted "
                        "(without it, replay asks on a terminal and refuses without one)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from harness.run.lifecycle import HARNESS_ERROR
    from harness.run.replay import ReplayError, comparison_lines, replay
    if not (args.run_dir / "run.json").is_file():
        raise UserError(f"{args.run_dir} is not a run dir (it has no run.json)")
    for problem in (None if args.count is None else COUNT.problem("--count", args.count),
                    PARALLEL.problem("--parallel", args.parallel)):
        if problem is not None:
            raise UserError(problem)
    if args.count is None and args.parallel != 1:
        raise UserError("--parallel goes with --count (one replay runs alone)")
    confirm(args.run_dir, args.yes)
    if args.count is not None:
        return replay_count(args)
    try:
        outcome = replay(args.run_dir, results_dir(args.results),
                         live_triggers=args.live_triggers)
    except ReplayError as e:
        raise UserError(f"cannot replay {args.run_dir}: {e}") from None
    except (UserError, KeyboardInterrupt):
        raise
    except Exception as e:
        print(f"faultline: the replay failed: {type(e).__name__}: {e}", file=sys.stderr)
        return HARNESS_ERROR
    print("\n".join(comparison_lines(outcome)))
    return outcome.exit_code


def replay_count(args: argparse.Namespace) -> int:
    from harness.run.replay import ReplayError
    from harness.run.reproduction import replay_many, report_lines
    say = lambda s: print(f"replay: {s}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        doc = replay_many(args.run_dir, results_dir(args.results), args.count, args.parallel,
                          say, args.live_triggers)
    except ReplayError as e:
        raise UserError(f"cannot replay {args.run_dir}: {e}") from None
    print("\n".join(report_lines(doc)))
    print(f"stored in {args.run_dir / REPRODUCTION_JSON}")
    if doc["original"]["verdict"] != "invalid" or not any(
            r["verdict"] in ("valid", "invalid") for r in doc["replays"]):
        return EXIT_UNKNOWN
    return EXIT_INVALID if doc["reproduced"] else EXIT_VALID


def confirm(run_dir: Path, yes: bool) -> None:
    """Say what the replay will load from `run_dir` (someone else's, perhaps)
    and go on only if the user says so, or gave --yes. The system must load
    from the installed packages, never from the run dir or the cwd."""
    from checkers.rundir import load_json
    from faultline import registry
    from harness.run.replay import ReplayError, replay_config, replay_summary
    try:
        config = replay_config(load_json(run_dir / "run.json"))
        source = registry.installed_source(config.db, [run_dir])
    except (ReplayError, registry.UnknownSystem, registry.UntrustedSystem) as e:
        raise UserError(f"cannot replay {run_dir}: {e}") from None
    except (OSError, ValueError, TypeError) as e:
        raise UserError(f"cannot replay {run_dir}: its run.json is unusable ({e})") from None
    print("\n".join(replay_summary(run_dir, config, source)), file=sys.stderr, flush=True)
    if yes:
        return
    if not sys.stdin.isatty():
        raise UserError("replay runs the system and options above; with no terminal to ask, "
                        "give --yes if you trust this run dir")
    print("Replay it? [y/N] ", end="", file=sys.stderr, flush=True)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise UserError("replay not confirmed: nothing started")
