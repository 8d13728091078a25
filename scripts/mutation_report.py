"""Mutation score of `make mutate`, as markdown on stdout (docs/mutation.md).

Reads mutmut's per-file results (mutants/<path>.meta, exit code per mutant)
and the hand-kept list of equivalent mutants (docs/mutation-equivalent.tsv:
mutant name, tab, why no test can tell it from the original). The score of an
area is killed / (mutants run - equivalent): a mutant no test reaches ("no
tests") counts as surviving, a timeout as killed (the mutant hung a test).
Mutants not run yet are reported as such, so a partial run says how partial.

`--forget-survivors` marks the surviving mutants not run instead, so the next
`mutmut run` (`make mutate`) tries them against tests written since.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "docs" / "mutation-equivalent.tsv"
AREAS = {
    "checkers": (lambda p: p.startswith("checkers/"), 0.90),
    "raft core": (lambda p: p in ("nodes/raft/core.py", "nodes/raft/epoch_cache.py"), 0.85),
}
KILLED_CODES = {1, 3, 36, 24, -24, 152, 255}  # killed, pytest internal error, timeouts


def status(code: int | None) -> str:
    if code is None:
        return "not run"
    if code in KILLED_CODES:
        return "killed"
    if code == 0:
        return "survived"
    if code in (5, 33):
        return "no tests"
    return "other"


def _status(name: str, code: int | None, equivalent: dict[str, str]) -> str:
    """A listed equivalent mutant counts as run (and left out of the score)
    only once it was run: a sample's "run" is then what this mutants/ ran."""
    return "equivalent" if name in equivalent and code is not None else status(code)


def read_results() -> dict[str, dict[str, int | None]]:
    """Source path -> mutant name -> exit code."""
    out: dict[str, dict[str, int | None]] = {}
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        rel = meta.relative_to(ROOT / "mutants").as_posix()[: -len(".meta")]
        codes = json.loads(meta.read_text()).get("exit_code_by_key") or {}
        if codes and any(pred(rel) for pred, _ in AREAS.values()):
            out[rel] = codes
    return out


def read_equivalent() -> dict[str, str]:
    if not EQUIVALENT.exists():
        return {}
    rows = (line.split("\t", 1) for line in EQUIVALENT.read_text().splitlines()
            if line.strip() and not line.startswith("#"))
    return {name.strip(): why.strip() for name, why in rows}


def mutant_diff(name: str, path: str) -> str:
    """The changed lines of one mutant (what `mutmut show NAME` prints in full)."""
    try:
        from mutmut.mutation.diff_apply import get_diff_for_mutant
        shown = get_diff_for_mutant(name, path=Path(path))
    except Exception:  # an old or partial mutants/ dir: the name alone still helps
        return ""
    lines = [ln for ln in shown.splitlines()
             if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return " / ".join(ln[0] + " " + ln[1:].strip() for ln in lines)[:300]


def forget_survivors() -> int:
    """Mark surviving mutants not run, so the next `mutmut run` tries them
    against tests added since (mutmut keeps a mutant's result otherwise)."""
    forgotten = 0
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        doc = json.loads(meta.read_text())
        codes = doc.get("exit_code_by_key") or {}
        for name, code in codes.items():
            if status(code) in ("survived", "no tests"):
                codes[name] = None
                forgotten += 1
        meta.write_text(json.dumps(doc, indent=4))
    return forgotten


def main() -> None:
    os.chdir(ROOT)  # mutmut reads its config and mutants/ from here
    if "--forget-survivors" in sys.argv:
        print(f"{forget_survivors()} surviving mutants marked not run", file=sys.stderr)
        return
    results = read_results()
    equivalent = read_equivalent()
    with_diffs = "--no-diffs" not in sys.argv
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print("# Mutation testing\n")
    print(f"Measured {today} by `make mutate` (mutmut over the fast tests, "
          "`-m 'not slow'`). Regenerate with `make mutate`; this file is its output.\n")
    print("| area | mutants | run | killed | survived | no tests | equivalent "
          "| score | goal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for area, (pred, goal) in AREAS.items():
        counts: Counter[str] = Counter()
        for path, codes in results.items():
            if pred(path):
                for name, code in codes.items():
                    counts[_status(name, code, equivalent)] += 1
        total = sum(counts.values())
        run = total - counts["not run"]
        judged = run - counts["equivalent"]
        score = counts["killed"] / judged if judged else 0.0
        print(f"| {area} | {total} | {run} | {counts['killed']} | {counts['survived']} "
              f"| {counts['no tests']} | {counts['equivalent']} | {score:.1%} | {goal:.0%} |")
    print("\nScore = killed / (run - equivalent); \"no tests\" counts as surviving.\n")
    print("## By file\n")
    print("| file | run | killed | survived | no tests | not run | score |")
    print("|---|---|---|---|---|---|---|")
    for path, codes in results.items():
        c = Counter(_status(n, v, equivalent) for n, v in codes.items())
        run = len(codes) - c["not run"]
        judged = run - c["equivalent"]
        score = f"{c['killed'] / judged:.1%}" if judged else "-"
        print(f"| {path} | {run} | {c['killed']} | {c['survived']} | {c['no tests']} "
              f"| {c['not run']} | {score} |")
    print("\n## Equivalent mutants excluded\n")
    if equivalent:
        for name, why in sorted(equivalent.items()):
            print(f"- `{name}`: {why}")
    else:
        print("None listed.")
    print("\n## Surviving mutants\n")
    print("`mutmut show NAME` prints one in full.\n")
    for path, codes in results.items():
        alive = [n for n, v in codes.items()
                 if n not in equivalent and status(v) in ("survived", "no tests")]
        if not alive:
            continue
        print(f"### {path} ({len(alive)})\n")
        for name in alive:
            diff = mutant_diff(name, path) if with_diffs else ""
            print(f"- `{name}`" + (f" ({status(codes[name])})" if status(codes[name]) != "survived"
                                   else "") + (f": `{diff}`" if diff else ""))
        print()


if __name__ == "__main__":
    main()
