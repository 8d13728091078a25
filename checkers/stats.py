"""How many ops of each kind succeeded: a run where some kind never succeeded
shows nothing about it, so its other verdicts are vacuous (Jepsen's stats checker)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from checkers.history import NEMESIS, Op
from checkers.nothing_to_judge import NO_CLIENT_OPS
from checkers.outcomes import ERROR, REFUSED, outcome
from checkers.verdict import Verdict, verdict


def check(history: list[Op], run: dict[str, Any] | None = None) -> Verdict:
    by_f: dict[str, Counter[str]] = {}
    for op in history:
        if op.process == NEMESIS or op.type == "invoke":
            continue
        counts = by_f.setdefault(op.f, Counter())
        counts[op.type] += 1
        if op.type == "fail":
            counts[outcome(op.type, op.f, op.error)] += 1
    # "fail" is refused + error: a refusal is the system's definite no (a cas
    # whose compare was false), an error an op it could not serve.
    stats = {f: {"ok": c["ok"], "fail": c["fail"], REFUSED: c[REFUSED], ERROR: c[ERROR],
                 "info": c["info"]}
             for f, c in sorted(by_f.items())}
    never = [f for f, c in stats.items() if c["ok"] == 0]
    if not by_f:
        return verdict("unknown", stats={"by_f": stats, "reason": NO_CLIENT_OPS})
    if never:
        return verdict("unknown", [{"type": "no-successful-ops", "f": f,
                                    "explanation": f"no {f} op succeeded "
                                    f"({stats[f][REFUSED]} refused, {stats[f][ERROR]} failed "
                                    f"with an error, {stats[f]['info']} unknown)"}
                                   for f in never],
                       {"by_f": stats,
                        "reason": f"no successful {', '.join(never)} ops: the run shows "
                                  "nothing about them"})
    return verdict(True, stats={"by_f": stats})
