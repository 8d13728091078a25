"""`faultline check-elle FILE`: judge a list-append (or, with --workload
rw-register, an rw-register) history with the Elle-style checker and print
its verdict as JSON. Exit 0 valid, 1 invalid, 2 unknown."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Iterator
from functools import cache
from typing import Any

from checkers.elle.budget import DEFAULT_MEMORY_LIMIT_MB
from checkers.elle.consistency import MODEL_NAMES
from checkers.formats import read_any
from checkers.history import NEMESIS, History, Op
from checkers.verdict import Verdict, exit_code
from harness.commands.process_end import keep_until_exit
from harness.run.bounds import CHECK_BUDGETS, CYCLE_SEARCH
from harness.run.errors import UserError

# The workload and checker registries are imported only when a --workload is
# named or help is printed: judging the default (list-append) history needs
# neither, and importing them (every workload, every checker's adapter) costs
# a few per cent of checking Elle's huge-scc history end to end.


@cache
def txn_workloads() -> dict[str, Any]:
    """The transactional workloads: those judged by one of the Elle-style
    checkers, name -> that checker."""
    from checkers.registry import ELLE, RW_REGISTER
    from workloads.registry import WORKLOADS
    return {name: w.CHECKERS[0] for name, w in sorted(WORKLOADS.items())
            if w.CHECKERS and w.CHECKERS[0] in (ELLE, RW_REGISTER)}


class _TxnWorkloadNames:
    """--workload's choices, read from the registry when argparse first looks."""

    def __iter__(self) -> Iterator[str]:
        return iter(txn_workloads())

    def __contains__(self, name: object) -> bool:
        return name in txn_workloads()


class _DefaultWorkload:
    """--workload's default, list-append, whose name lives in its module."""

    def __str__(self) -> str:
        from workloads import list_append
        return list_append.NAME


def _is_rw_register(workload: object) -> bool:
    if isinstance(workload, _DefaultWorkload):
        return False  # list-append: no registry needed to say so
    from checkers.registry import RW_REGISTER
    return txn_workloads()[str(workload)] is RW_REGISTER


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check-elle", help="check a list-append history for transactional anomalies",
        description="Infer version orders and a dependency graph from a list-append "
                    "history, search it for cycles, and judge it against a consistency "
                    "model. Exit 0 valid, 1 invalid, 2 unknown, 254 unreadable history or "
                    "bad arguments, 255 harness error.")
    p.add_argument("file", help="the history (history.msgpack or a Jepsen history.edn)")
    p.add_argument("--format", choices=("msgpack", "edn"), default=None,
                   help="history format (default: detected)")
    p.add_argument("--model", choices=MODEL_NAMES, default="strict-serializable",
                   help="the consistency model the run asked for (default %(default)s)")
    p.add_argument("--budget", type=float, default=30.0, metavar="SECONDS",
                   help="time allowed for cycle search (default %(default)s)")
    p.add_argument("--memory-limit", type=int, default=DEFAULT_MEMORY_LIMIT_MB, metavar="MB",
                   help="memory the check may take, estimated from the history's size "
                        "before anything is built; past it the verdict is unknown "
                        "(default %(default)s)")
    workload = p.add_argument("--workload", default=_DefaultWorkload(),
                              help="what the txns' micro-ops are (default %(default)s)")
    # Set after add_argument, which formats the choices (so would read the
    # registry) to check the metavar.
    workload.choices = _TxnWorkloadNames()
    for flag, what in (("wfr-keys", "within a txn, writes follow reads"),
                       ("sequential-keys", "every key is sequentially consistent"),
                       ("linearizable-keys", "every key is linearizable")):
        p.add_argument(f"--{flag}", action="store_true",
                       help=f"rw-register: infer version orders assuming {what}")
    p.set_defaults(func=run)


def _load(path: str, fmt: str | None) -> History:
    history = read_any(path, fmt)
    for w in history.warnings:
        print(f"faultline: warning: {w}", file=sys.stderr)
    return history


def _refuse_unfit(verdict: Verdict, workload: object) -> None:
    """A history none of whose txns the workload's checker can read is the
    wrong input (or the wrong --workload), not an unknown verdict: 254."""
    malformed = [a for a in verdict["anomalies"] if a["type"] == "malformed-txn"]
    if malformed and verdict["stats"].get("txns") == 0:
        from harness.run.errors import UserError
        # (the workload named only here: naming the default imports its module)
        raise UserError(f"none of the history's txns is a {workload} txn ("
                        f"{malformed[0]['explanation']}); is --workload right?")


def _refuse_non_txns(ops: list[Op]) -> None:
    """Client ops of which none is a txn do not fit any Elle model: 254, as
    check-lin refuses ops its model has no meaning for."""
    fs = {op.f for op in ops if op.process != NEMESIS}
    if fs and "txn" not in fs:
        raise UserError(f"the history's ops are {', '.join(sorted(map(str, fs)))}, none a "
                        "txn: check-elle judges transactions (check-lin judges single ops)")


def run(args: argparse.Namespace) -> int:
    for problem in (CYCLE_SEARCH.problem("--budget", args.budget),
                    CHECK_BUDGETS["memory_limit_mb"].problem("--memory-limit",
                                                             args.memory_limit)):
        if problem is not None:
            raise UserError(problem)
    # One history, read and judged, then the process ends: everything it
    # makes lives until then, so the cyclic collector's passes over it (each
    # time a paused block ends, and during networkx's import) free nothing.
    # They cost a tenth of huge-scc's 1 s end to end.
    gc.disable()
    if not _is_rw_register(args.workload):
        fast = _fast_verdict(args)  # (what it read and built: freed by the process's end)
        if fast is not None:
            _print(fast)
            return exit_code(fast["valid"])
    from checkers import elle

    history = _load(args.file, args.format)
    # freed by the process's end, at no cost: the history and what the check
    # builds from it (~0.06 s to free on a 100k-txn history)
    built: list[Any] = []
    keep_until_exit(history, built)
    ops = history.ops
    _refuse_non_txns(ops)
    if _is_rw_register(args.workload):
        from checkers.elle import rw_register
        verdict = rw_register.check(ops, None, model=args.model,
                                    cycle_search_budget_s=args.budget,
                                    memory_limit_mb=args.memory_limit, wfr_keys=args.wfr_keys,
                                    sequential_keys=args.sequential_keys,
                                    linearizable_keys=args.linearizable_keys)
    else:
        verdict = elle.check(ops, None, model=args.model, cycle_search_budget_s=args.budget,
                             memory_limit_mb=args.memory_limit,
                             prefix_keys=history.prefix_keys, leave=built)
    _refuse_unfit(verdict, args.workload)
    _print(verdict)
    return exit_code(verdict["valid"])


def _print(verdict: Verdict) -> None:
    for w in verdict["stats"].get("warnings", ()):
        print(f"faultline: warning: {w}", file=sys.stderr)
    json.dump(verdict, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


# A msgpack list-append history from this size on is first tried by the fast
# path (`checkers.elle.fast`), which imports numpy (~0.08 s): below it the
# object path, which does not, costs less (docs/benchmarks.md, issue 29).
FAST_FROM_BYTES = 2 << 20


def _fast_verdict(args: argparse.Namespace) -> Verdict | None:
    """The fast path's verdict on a clean msgpack list-append history, or
    None: the history is left to the object path (which reads it again)."""
    import os

    from checkers.formats import detect_format
    from checkers.history import read_txn_ops

    try:
        if os.path.getsize(args.file) < FAST_FROM_BYTES:
            return None
        if (args.format or detect_format(args.file)) != "msgpack":
            return None
        txn_ops = read_txn_ops(args.file)
    except OSError:
        return None  # the object path's reader says what is wrong
    if txn_ops is None:
        return None
    from checkers.elle.fast import fast_check
    built: list[Any] = []
    verdict = fast_check(txn_ops, args.model, args.memory_limit, leave=built)
    if verdict is not None:
        keep_until_exit(txn_ops, built)
    return verdict
