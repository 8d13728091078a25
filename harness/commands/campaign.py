"""`faultline campaign CAMPAIGN.toml | --resume ID [--parallel K] [--results DIR]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.campaign.estimate import estimate, estimate_text
from harness.campaign.spec import CampaignError, load_campaign
from harness.results.store import check_results_dir, results_dir
from harness.run.bounds import MAX_PARALLEL
from harness.run.errors import UserError

EPILOG = ("exit status: 0 every run valid, 1 any invalid, 2 any unknown, 254 bad "
          "arguments or campaign file (nothing started), 255 a run failed (harness error; "
          "--resume re-runs it)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="run a matrix of tests, then check them all with Spark",
                       description="Expand a campaign file (db x workload x nemesis x node "
                       "options x seeds x repeats) into runs, run them, check every history "
                       "in one Spark job, and write results/campaigns/<id>/ (runs.json, "
                       "verdicts.parquet, summary.json, summary.txt).", epilog=EPILOG)
    p.add_argument("file", nargs="?", type=Path, metavar="CAMPAIGN.toml")
    p.add_argument("--resume", metavar="ID",
                   help="finish campaign ID: skip complete runs, re-run the rest, check all")
    p.add_argument("--parallel", type=int, metavar="K",
                   help="runs at once (default 1; on resume, what the campaign used)")
    p.add_argument("--results", type=Path, help="results dir (default $FAULTLINE_RESULTS "
                   "or ./results)")
    p.add_argument("--master", help="Spark master URL (default: embedded local[*])")
    p.add_argument("--dry-run", action="store_true",
                   help="validate the file and list its runs without running anything")
    p.set_defaults(func=main)


def say(text: str) -> None:
    print(f"campaign: {text}", file=sys.stderr, flush=True)


def main(args: argparse.Namespace) -> int:
    from harness.campaign.runner import planned, resume_campaign, start_campaign
    if (args.file is None) == (args.resume is None):
        raise UserError("give a campaign file or --resume ID (one of them)")
    if args.parallel is not None and not 1 <= args.parallel <= MAX_PARALLEL:
        raise UserError(f"--parallel must be from 1 to {MAX_PARALLEL}, not {args.parallel}")
    results = results_dir(args.results)
    if not args.dry_run:
        check_results_dir(results)
    try:
        if args.dry_run:
            if args.file is None:
                raise UserError("--dry-run needs a campaign file")
            campaign = load_campaign(args.file)
            print("\n".join(planned(campaign)))
            planned_time = estimate((r.config for r in campaign.runs), args.parallel or 1)
            print(f"{len(campaign.runs)} runs, {estimate_text(planned_time)} "
                  f"at --parallel {args.parallel or 1}")
            return 0
        if args.resume:
            result = resume_campaign(args.resume, results, args.parallel, args.master, say)
        else:
            result = start_campaign(args.file, results, args.parallel or 1, args.master, say)
    except CampaignError as e:
        raise UserError(str(e)) from None
    print((result.campaign_dir / "summary.txt").read_text(), end="")
    print(f"campaign dir: {result.campaign_dir}")
    return result.exit_code
