"""`faultline`: the command line. Each subcommand lives in its own module under
`harness.commands` and registers itself from the list below."""

from __future__ import annotations

import argparse
import importlib
import sys

from checkers.history import HistoryError

# One module per subcommand; each has `register(subparsers)` which sets
# `func(args) -> int` as the parser default.
COMMAND_MODULES: list[str] = [
    "harness.commands.check_elle",
    "harness.commands.ls",
    "harness.commands.history",
    "harness.commands.check",
    "harness.commands.run",
    "harness.commands.check_lin",
    "harness.commands.clean",
    "harness.commands.campaign",
    "harness.commands.gate",
    "harness.commands.replay",
    "harness.commands.report",
]


class UserError(Exception):
    """A mistake of the user's: printed as one sentence, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faultline",
        description="Jepsen-style fault injection: run, check and gate chaos campaigns.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, HistoryError) as e:
        print(f"faultline: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("faultline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
