"""`faultline history show|validate|convert`: look at, check the shape of, and
convert histories in any format `checkers.formats` reads."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from checkers.formats import FORMATS, detect_format, read_any
from checkers.history import History, Op, client_ops, validate
from checkers.nothing_to_judge import NO_CLIENT_OPS
from checkers.rundir import HISTORY
from harness.run.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, UserError
from harness.run.history import HistoryWriter

MAX_VALUE_CHARS = 200


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("history", help="show, validate or convert a history",
                              description="Show, validate or convert an op history.")
    sub = p.add_subparsers(dest="history_command", metavar="ACTION")
    sub.required = True

    show = sub.add_parser("show", help="print one line per op")
    show.add_argument("file", metavar="FILE|RUN_DIR")
    _format_arg(show)
    show.set_defaults(func=run_show)

    check = sub.add_parser(
        "validate", help="check that a history is well-formed",
        description="Print a torn tail and every well-formedness problem (an invoke "
                    "without completion, a completion without invoke, indexes out of "
                    "order...). Exit 0 if there are none, 1 if there are, 2 if the history has "
                    "no client operations, 254 if it cannot be read.")
    check.add_argument("file", metavar="FILE|RUN_DIR")
    _format_arg(check)
    check.set_defaults(func=run_validate)

    convert = sub.add_parser(
        "convert", help="convert a Jepsen/Porcupine history to msgpack",
        description="Convert a history (EDN, Porcupine, msgpack) into our msgpack "
                    "format. Never overwrites OUT.")
    convert.add_argument("input", metavar="IN")
    convert.add_argument("output", metavar="OUT")
    _format_arg(convert)
    convert.set_defaults(func=run_convert)


def _format_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="input format (default: detected from the content)")
    p.add_argument("--independent", action="store_true",
                   help="EDN only: a client op's [k v] value is key k, value v")


def history_path(path: str) -> str:
    """A history file as given, or a run dir's history."""
    if Path(path).is_dir():
        inside = Path(path) / HISTORY
        if not inside.is_file():
            raise UserError(f"{path} is a directory with no {HISTORY}: not a run dir")
        return str(inside)
    return path


def _load(path: str, fmt: str | None, independent: bool) -> tuple[History, str]:
    path = history_path(path)
    if not Path(path).is_file():
        raise UserError(f"{path} is not a file")
    fmt = fmt or detect_format(path)
    return read_any(path, fmt, independent=independent), fmt


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS - 3] + "..."
    return text


def format_op(op: Op, line_clock: bool) -> str:
    """One readable line: index, time, process, type, f, value, then the optional fields."""
    when = f"line {op.time}" if line_clock else f"{op.time / 1e9:.6f}s"
    parts = [f"{op.index:>7}", f"{when:>14}", f"{op.process!s:>8}", f"{op.type:<6}",
             f"{op.f:<8}", _short(op.value)]
    if op.key is not None:
        parts.append(f"key={_short(op.key)}")
    if op.node is not None:
        parts.append(f"node={op.node}")
    if op.error is not None:
        parts.append(f"error={op.error}")
    return " ".join(parts)


def run_show(args: argparse.Namespace) -> int:
    history, fmt = _load(args.file, args.format, args.independent)
    line_clock = fmt.startswith("porcupine")
    out = sys.stdout
    for op in history.ops:
        out.write(format_op(op, line_clock) + "\n")
    for w in history.warnings:
        print(f"faultline: warning: {w}", file=sys.stderr)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    history, _ = _load(args.file, args.format, args.independent)
    problems = validate(history.ops)
    for w in history.warnings:
        print(f"warning: {w}")
    for p in problems:
        print(p)
    n_bad = len(problems) + len(history.warnings)
    verdict = "well-formed" if n_bad == 0 else f"{n_bad} problem{'s' * (n_bad != 1)}"
    if n_bad == 0 and not client_ops(history.ops):
        # Nothing to be well-formed about: unknown, not a pass.
        print(f"{args.file}: {len(history.ops)} ops, unknown: {NO_CLIENT_OPS}")
        return EXIT_UNKNOWN
    print(f"{args.file}: {len(history.ops)} ops, {verdict}")
    return EXIT_VALID if n_bad == 0 else EXIT_INVALID


def run_convert(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.exists() or out.is_symlink():
        raise UserError(f"{out} already exists; refusing to overwrite it")
    if not out.parent.is_dir():
        raise UserError(f"{out.parent} is not a directory")
    history, fmt = _load(args.input, args.format, args.independent)
    # Write beside OUT, then link into place: OUT appears complete or not at all,
    # and the link fails rather than replace a file created meanwhile.
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with HistoryWriter(tmp) as w:
            for op in history.ops:
                try:
                    w.append(op)
                except (TypeError, ValueError, OverflowError) as e:
                    raise UserError(f"op {op.index} cannot be written as msgpack: {e}") \
                        from None
        try:
            os.link(tmp, out)
        except FileExistsError:
            raise UserError(f"{out} already exists; refusing to overwrite it") from None
    finally:
        os.unlink(tmp)
    for warning in history.warnings:
        print(f"faultline: warning: {warning}", file=sys.stderr)
    print(f"wrote {len(history.ops)} ops from {args.input} ({fmt}) to {out}")
    return 0
