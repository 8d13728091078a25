"""`faultline check-lin FILE --model M`: check one history for linearizability."""

from __future__ import annotations

import argparse
import json

from checkers.formats import FORMATS, read_any
from checkers.history import Op, client_ops
from checkers.lin_report import write_html
from checkers.linearizability import check
from checkers.models import MODELS, ModelError, get_model
from checkers.nothing_to_judge import nothing_to_judge
from checkers.verdict import Verdict, exit_code, verdict
from harness.run.bounds import CHECK_BUDGETS
from harness.run.errors import UserError
from harness.run.key_values import parse_options

SINGLE_DEFAULT = "cas-register"
KEYED_DEFAULT = "register-kv"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "check-lin", help="check a history for linearizability",
        description="Check a history for linearizability. Exit status: 0 linearizable, "
                    "1 not linearizable, 2 unknown (budget exhausted, or no client "
                    "operations), 254 unreadable history or bad arguments, 255 harness "
                    "error.")
    p.add_argument("file", help="history file")
    p.add_argument("--model", default=None, choices=sorted(MODELS),
                   help=f"default: {SINGLE_DEFAULT}, or {KEYED_DEFAULT} when the history's "
                        "ops name keys (a faultline run's register and kv histories do)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="history format (default: detect from the file)")
    p.add_argument("--html", metavar="OUT", help="also write an HTML view of the verdict")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS")
    p.add_argument("--memory-limit", type=int, default=2048, metavar="MB")
    p.add_argument("--stop-on-first-failure", action="store_true",
                   help="stop at the first key found not linearizable")
    p.add_argument("--model-option", action="append", default=[], metavar="K=V",
                   help="model option, V parsed as JSON if it can be: initial=0, "
                        'initial={"x":0} (multi-register) (repeatable)')
    p.add_argument("--json", action="store_true", help="print the whole verdict as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for problem in (CHECK_BUDGETS["time_limit"].problem("--time-limit", args.time_limit),
                    CHECK_BUDGETS["memory_limit_mb"].problem("--memory-limit",
                                                             args.memory_limit)):
        if problem is not None:
            raise UserError(problem)
    history = read_any(args.file, args.format)
    for w in history.warnings:
        print(f"warning: {w}")
    model_options = parse_options(args.model_option, "--model-option")
    ops = client_ops(history.ops)
    model = choose_model(args.model, ops)
    try:
        operations = get_model(model, model_options).operations()
    except ModelError as e:
        raise UserError(str(e)) from None
    unfit = sorted({op.f for op in ops} - operations)
    if unfit:
        raise UserError(f"the history's {', '.join(map(repr, unfit))} ops are not "
                        f"operations of model {model} (it judges "
                        f"{', '.join(sorted(operations))}): choose a model they fit")
    reason = nothing_to_judge(history.ops)
    if reason is not None:
        v = verdict("unknown", stats={"model": model, "reason": reason})
    else:
        v = check(history.ops, model=model, time_limit=args.time_limit,
                  memory_limit_mb=args.memory_limit,
                  stop_on_first_failure=args.stop_on_first_failure,
                  model_options=model_options)
    if args.json:
        print(json.dumps(v, indent=2, default=repr))
    else:
        print(summary(v))
    if args.html:
        write_html(v, args.html)
    return exit_code(v["valid"])


def choose_model(named: str | None, ops: list[Op]) -> str:
    """The model to judge `ops` with. Ops of several keys are several registers:
    one register's model would judge them as one and call the history broken
    (a faultline run's register history moves to a fresh key every 1,000 ops)."""
    keys = {repr(op.key) for op in ops}
    if named is None:
        return KEYED_DEFAULT if keys - {repr(None)} else SINGLE_DEFAULT
    if len(keys) > 1 and not MODELS[named].by_key:
        raise UserError(f"the history's ops name {len(keys)} keys, and model {named} judges "
                        f"one register: use --model {KEYED_DEFAULT} (or kv), which checks "
                        "each key on its own")
    return named


def summary(v: Verdict) -> str:
    word = "valid" if v["valid"] is True else "INVALID" if v["valid"] is False else "unknown"
    stats = v["stats"]
    lines = [f"linearizability ({stats.get('model')}): {word}; "
             f"{stats.get('keys_checked', 0)}/{stats.get('keys', 0)} key(s) checked"
             + (f" ({stats['reason']})" if stats.get("reason") else "")]
    for a in v["anomalies"]:
        if a["type"] == "nonlinearizable":
            op = a["op"] or {}
            lines.append(f"  key {a['key']!r}: after {a['linearized_count']} ops (state "
                         f"{a['state']!r}), cannot place process {op.get('process')}'s "
                         f"{op.get('what')} (history index {op.get('index')}); "
                         f"{len(a['concurrent'])} concurrent ops")
            if a.get("why"):
                lines.append(f"    {a['why']}")
        else:
            lines.append(f"  key {a.get('key')!r}: {a['type']}: {a.get('reason')}")
    return "\n".join(lines)
