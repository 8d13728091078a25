"""`faultline gate CAMPAIGN_ID | RUN_DIR... [--allow-unknown] [--junit FILE]`:
the release gate over checked verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from checkers.durable import write_atomic
from harness.campaign.store import RUNS_JSON, campaign_dir, read_json
from harness.results.gate import (
    ERROR,
    SKIPPED,
    GateCase,
    cases_of_run_dir,
    coverage_lines,
    decide,
    junit_xml,
)
from harness.results.store import results_dir
from harness.run.errors import UserError
from harness.run.reproduction import FLAKY, NOT_REPRODUCED, SOLID, rate_line, read_reproduction

EPILOG = ("exit status: 0 every run complete and every verdict valid, 1 any invalid, 2 "
          "any unknown and none invalid (0 with --allow-unknown) or any run not complete "
          "(never passes), 254 bad arguments, 255 harness error")
WORD = {True: "valid", False: "INVALID", "unknown": "unknown", ERROR: "ERROR"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="pass or fail a release on checked verdicts",
                       description="Read the verdicts of a campaign's runs (or of run dirs) "
                       "and exit 0/1/2; optionally write a JUnit XML report with one "
                       "testcase per run and checker.", epilog=EPILOG)
    p.add_argument("targets", nargs="+", metavar="CAMPAIGN_ID|RUN_DIR")
    p.add_argument("--results", type=Path, help="where campaigns live (default "
                   "$FAULTLINE_RESULTS or ./results)")
    p.add_argument("--allow-unknown", action="store_true", help="treat unknown as a pass")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    p.set_defaults(func=main)


def campaign_cases(cdir: Path, dirs: dict[str, Path] | None = None) -> list[GateCase]:
    """A campaign's runs; a run that never finished is an unknown case, not a pass.
    `dirs` gets each case's run name -> run dir."""
    try:
        entries = read_json(cdir / RUNS_JSON)
    except (OSError, ValueError) as err:
        raise UserError(f"cannot read {cdir / RUNS_JSON}: {err}") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UserError(f"{cdir / RUNS_JSON} is not a list of runs")
    if not entries:
        # Nothing judged is nothing passed.
        return [GateCase(cdir.name, "runs", ERROR, "the campaign has no runs")]
    cases = []
    for i, e in enumerate(entries):
        run_dir = e.get("run_dir")
        name = e.get("run_id") or f"{cdir.name}#{e.get('index', i) + 1}"
        if e.get("status") != "complete" or not run_dir:
            cases.append(GateCase(name, "run", ERROR,
                                  f"{e.get('label', name)}: the run did not complete "
                                  f"({e.get('error') or e.get('status')})"))
        else:
            cases += cases_of_run_dir(Path(run_dir), name)
            if dirs is not None:
                dirs[name] = Path(run_dir)
    return cases


def resolve(targets: list[str], results: Path, dirs: dict[str, Path] | None = None
            ) -> tuple[list[GateCase], str]:
    """Cases from one campaign (id or dir) or from run dirs; the JUnit suite name.
    `dirs` gets each case's run name -> run dir."""
    dirs = {} if dirs is None else dirs
    if len(targets) == 1:
        target = Path(targets[0])
        cdir = campaign_dir(results, targets[0])
        if (target / RUNS_JSON).is_file():
            cdir = target
        if (cdir / RUNS_JSON).is_file():
            return campaign_cases(cdir, dirs), f"faultline campaign {cdir.name}"
    cases = []
    for t in targets:
        run_dir = Path(t)
        if not (run_dir / "run.json").is_file() and not (run_dir / "verdicts.json").is_file():
            raise UserError(f"{t} is neither a campaign under {results / 'campaigns'} nor a "
                            f"run dir (no run.json)")
        cases += cases_of_run_dir(run_dir)
        dirs[run_dir.name] = run_dir
    return cases, "faultline"


def reproductions(cases: list[GateCase], dirs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Per invalid run, its stored replay rate (`faultline replay --count`), if any."""
    out = {}
    for run in dict.fromkeys(c.run for c in cases if c.valid is False):
        doc = read_reproduction(dirs[run]) if run in dirs else None
        if doc is not None:
            out[run] = doc
    return out


def main(args: argparse.Namespace) -> int:
    dirs: dict[str, Path] = {}
    cases, suite = resolve(args.targets, results_dir(args.results), dirs)
    rates = reproductions(cases, dirs)
    shown: set[str] = set()
    code = decide(cases, args.allow_unknown)
    if args.junit:
        try:
            write_atomic(args.junit, junit_xml(cases, suite))
        except OSError as e:
            raise UserError(f"cannot write {args.junit}: {e.strerror}") from None
    for c in cases:
        if c.valid is not True:
            first, *rest = c.detail.split("\n") if c.detail else [""]
            print(f"  {WORD.get(c.valid, str(c.valid)):<8} {c.run} {c.checker}"
                  f"{': ' + first if first else ''}")
            for line in rest:
                print(f"           {line}")
            if c.valid is False and c.run in rates and c.run not in shown:
                shown.add(c.run)     # once a run, under its first invalid checker
                print(f"           {rate_line(rates[c.run])}")
    for line in coverage_lines(cases):
        print(line)
    invalid_runs = {c.run for c in cases if c.valid is False}
    if invalid_runs:
        labels = [doc.get("label") for doc in rates.values()]
        print(f"reproduction: {len(invalid_runs)} invalid runs: {labels.count(SOLID)} solid, "
              f"{labels.count(FLAKY)} flaky, {labels.count(NOT_REPRODUCED)} not reproduced, "
              f"{len(invalid_runs) - len(rates)} never replayed (faultline replay RUN_DIR "
              "--count N)")
    invalid = sum(c.valid is False for c in cases)
    errors = sum(c.valid == ERROR for c in cases)
    skipped = sum(c.valid == SKIPPED for c in cases)
    unknown = sum(c.valid not in (True, False, ERROR, SKIPPED) for c in cases)
    runs = len({c.run for c in cases})
    verdict = {0: "PASS", 1: "FAIL", 2: "UNDECIDED"}[code]
    print(f"gate: {verdict}: {runs} runs, {len(cases) - skipped} checks, {invalid} invalid, "
          f"{unknown} unknown{' (allowed)' if args.allow_unknown and unknown else ''}, "
          f"{errors} not judgeable (incomplete or unchecked runs never pass)"
          + (f", {skipped} skipped (nothing to judge them by)" if skipped else ""))
    sys.stdout.flush()
    return code
