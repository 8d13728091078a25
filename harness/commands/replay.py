"""`faultline replay RUN_DIR [--results DIR]`: run a saved run again, as it was."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.results.store import results_dir
from harness.run.errors import UserError

EPILOG = ("exit status: the replay's verdict (0 valid, 1 invalid, 2 unknown), 254 bad "
          "arguments, an unusable run dir, or no confirmation (nothing started), 255 harness "
          "error; the output says whether the original verdict reproduced")


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
    p.add_argument("--yes", action="store_true",
                   help="replay without asking: the run dir's system and options are trusted "
                        "(without it, replay asks on a terminal and refuses without one)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from harness.run.lifecycle import HARNESS_ERROR
    from harness.run.replay import ReplayError, comparison_lines, replay
    if not (args.run_dir / "run.json").is_file():
        raise UserError(f"{args.run_dir} is not a run dir (it has no run.json)")
    confirm(args.run_dir, args.yes)
    try:
        outcome = replay(args.run_dir, results_dir(args.results))
    except ReplayError as e:
        raise UserError(f"cannot replay {args.run_dir}: {e}") from None
    except (UserError, KeyboardInterrupt):
        raise
    except Exception as e:
        print(f"faultline: the replay failed: {type(e).__name__}: {e}", file=sys.stderr)
        return HARNESS_ERROR
    print("\n".join(comparison_lines(outcome)))
    return outcome.exit_code


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
