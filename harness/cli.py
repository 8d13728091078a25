"""`faultline`: the command line. Each subcommand lives in its own module under
`harness.commands` and registers itself from the list below."""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from checkers.history import HistoryError
from checkers.plugin_trust import UntrustedPlugin
from harness.run.errors import (
    EXIT_BAD_INPUT,
    EXIT_HARNESS_ERROR,
    EXIT_INTERRUPTED,
    EXIT_STATUS_HELP,
    HarnessError,
    UserError,
)

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
    "harness.commands.shrink",
    "harness.commands.report",
    "harness.commands.systems",
    "harness.commands.spark",
    "harness.commands.serve",
]


__all__ = ["build_parser", "main"]


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 254 (bad arguments), never 2 (unknown),
    and says so in one line (the usage is one `--help` away)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def _command_name(module: str) -> str:
    """The subcommand a module registers: harness.commands.check_elle -> check-elle."""
    return module.rsplit(".", 1)[1].replace("_", "-")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or with `command` only of that one (so
    `faultline check-elle` does not import what `faultline run` needs)."""
    parser = Parser(
        prog="faultline",
        description="Jepsen-style fault injection: run, check and gate chaos campaigns.",
        epilog=EXIT_STATUS_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        if command is None or _command_name(name) == command:
            importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    if argv is None:
        # Run as the program, which ends next: the interpreter's last garbage
        # collection then need not walk every object the command made (after
        # checking a 10k-txn history, ~10% of the process's CPU time).
        gc.freeze()
    return code


def _main(argv: list[str] | None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    named = {_command_name(m) for m in COMMAND_MODULES}
    try:   # the command modules load the fault and checker plug-ins
        parser = build_parser(args_in[0] if args_in and args_in[0] in named else None)
    except UntrustedPlugin as e:
        print(f"faultline: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (254)
        return int(e.code or 0)
    try:
        return int(args.func(args) or 0)
    except (UserError, HistoryError, UntrustedPlugin) as e:
        print(f"faultline: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("faultline: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except HarnessError as e:
        print(f"faultline: {e}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    except Exception as e:  # a bug of ours: say so in one line, with the status that says so
        print(f"faultline: harness error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
