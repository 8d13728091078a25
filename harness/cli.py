"""`faultline`: the command line. Each subcommand lives in its own module under
`harness.commands` and registers itself through the loaders below."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeAlias

from checkers.history import HistoryError
from checkers.plugin_trust import UntrustedPlugin
from harness.commands.process_end import leave_unfreed
from harness.run.errors import (
    EXIT_BAD_INPUT,
    EXIT_HARNESS_ERROR,
    EXIT_INTERRUPTED,
    EXIT_STATUS_HELP,
    HarnessError,
    UserError,
)

# A subcommand module's `register(subparsers)`: adds the command and sets
# `func(args) -> int` as its parser default.
Register: TypeAlias = "Callable[[argparse._SubParsersAction[Any]], None]"
Loader: TypeAlias = Callable[[], Register]

# The subcommands in the order `faultline --help` lists them, by name (the
# loader's, dashed: check_elle -> check-elle).
COMMANDS: dict[str, Loader] = {}


def command(load: Loader) -> Loader:
    """Declare a subcommand by the function that imports its module's
    `register`: a module loads only when its command (or every command's
    help) is asked for, so `faultline check-elle` does not import what
    `faultline run` needs."""
    COMMANDS[load.__name__.replace("_", "-")] = load
    return load


@command
def check_elle() -> Register:
    from harness.commands.check_elle import register
    return register


@command
def ls() -> Register:
    from harness.commands.ls import register
    return register


@command
def history() -> Register:
    from harness.commands.history import register
    return register


@command
def check() -> Register:
    from harness.commands.check import register
    return register


@command
def run() -> Register:
    from harness.commands.run import register
    return register


@command
def check_lin() -> Register:
    from harness.commands.check_lin import register
    return register


@command
def clean() -> Register:
    from harness.commands.clean import register
    return register


@command
def campaign() -> Register:
    from harness.commands.campaign import register
    return register


@command
def gate() -> Register:
    from harness.commands.gate import register
    return register


@command
def replay() -> Register:
    from harness.commands.replay import register
    return register


@command
def shrink() -> Register:
    from harness.commands.shrink import register
    return register


@command
def report() -> Register:
    from harness.commands.report import register
    return register


@command
def systems() -> Register:
    from harness.commands.systems import register
    return register


@command
def spark() -> Register:
    from harness.commands.spark import register
    return register


@command
def serve() -> Register:
    from harness.commands.serve import register
    return register


__all__ = ["build_parser", "main"]


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 254 (bad arguments), never 2 (unknown),
    and says so in one line (the usage is one `--help` away)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or with `command` only of that one (so
    `faultline check-elle` does not import what `faultline run` needs)."""
    parser = Parser(
        prog="faultline",
        description="Jepsen-style fault injection: run, check and gate chaos campaigns.",
        epilog=EXIT_STATUS_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, load in COMMANDS.items():
        if command is None or name == command:
            load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    if argv is None:
        # Run as the program, which ends next.
        leave_unfreed()
    return code


def _main(argv: list[str] | None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    try:   # the command modules load the fault and checker plug-ins
        parser = build_parser(args_in[0] if args_in and args_in[0] in COMMANDS else None)
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
