"""How far `faultline shrink` cuts invalid histories: every history of the
shared corpus whose expected verdict is invalid (and any run dirs given),
ops before and after, the share kept, judge calls and seconds.

    .venv/bin/python bench/shrink_corpus.py [--corpus /work/shared/corpus] [RUN_DIR...]

Prints a Markdown table (docs/reproduction.md keeps the dated figures).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus_dir import corpus  # noqa: E402

from checkers.formats import read_any  # noqa: E402
from checkers.models import get_model  # noqa: E402
from checkers.shrink import ShrinkRefused, lin_provenance, shrink  # noqa: E402
from harness.commands.shrink import from_run_dir, make_judge  # noqa: E402

# Porcupine's model names -> ours (checkers.models).
MODELS = {"etcd-cas-register": "cas-register", "kv": "kv"}
TARGET = 0.10


def corpus_cases(corpus: Path) -> list[tuple[str, Path, str]]:
    """(label, file, model) of every history the corpus says is invalid."""
    cases = []
    manifest = corpus / "porcupine" / "MANIFEST.tsv"
    with open(manifest) as f:
        rows = csv.DictReader((line for line in f if not line.startswith("#")),
                              delimiter="\t")
        for r in rows:
            if r["expected"] == "illegal":
                cases.append((f"porcupine/{r['subdir']}/{r['file']}",
                              corpus / "porcupine" / r["subdir"] / r["file"],
                              "kv" if r["model"].startswith("kv") else MODELS[r["model"]]))
    with open(corpus / "generated" / "MANIFEST.tsv") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["expected"] == "illegal":
                cases.append((f"generated/{r['file']}", corpus / "generated" / r["file"],
                              r["model"]))
    return cases


def measure(label: str, ops: list, name: str, options: dict, run: dict) -> dict:
    judge = make_judge(name, options, run)
    provenance = lin_provenance(get_model(options["model"])) \
        if name == "linearizability" else None
    started = time.monotonic()
    try:
        s = shrink(ops, judge, provenance=provenance)
    except ShrinkRefused as e:
        return {"label": label, "checker": name, "refused": str(e)}
    return {"label": label, "checker": name, "anomaly": s.target.kind, "before": s.ops_before,
            "after": s.ops_after, "ratio": s.ratio, "checks": s.checks,
            "seconds": time.monotonic() - started, "budget": s.budget_hit}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=corpus("porcupine").parent,
                    help="the shared corpus (default: FAULTLINE_CORPUS, else shared/corpus "
                         "beside the clone)")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("runs", nargs="*", type=Path)
    args = ap.parse_args()
    rows = []
    if not args.no_corpus:
        for label, path, model in corpus_cases(args.corpus):
            ops = read_any(str(path), None).ops
            rows.append(measure(label, ops, "linearizability", {"model": model},
                                {"config": {}}))
            print(_row(rows[-1]), file=sys.stderr, flush=True)
    for run_dir in args.runs:
        ops, run, name, options = from_run_dir(run_dir, None)
        rows.append(measure(run_dir.name, ops, name, options, run))
        print(_row(rows[-1]), file=sys.stderr, flush=True)
    print("| history | checker | anomaly | ops before | ops after | kept | checks | s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(_row(r))
    done = [r for r in rows if "after" in r]
    within = sum(r["ratio"] <= TARGET for r in done)
    print(f"\n{len(rows)} invalid histories: {len(done)} shrunk, {within}/{len(done)} to at "
          f"most {TARGET:.0%} of their ops, {len(rows) - len(done)} refused; largest share "
          f"kept {max((r['ratio'] for r in done), default=0):.1%}; "
          f"{sum(r['budget'] for r in done)} stopped at the check budget")
    return 0


def _row(r: dict) -> str:
    if "refused" in r:
        return f"| {r['label']} | {r['checker']} | refused: {r['refused']} | | | | | |"
    return (f"| {r['label']} | {r['checker']} | {r['anomaly']} | {r['before']} | {r['after']} "
            f"| {r['ratio']:.1%} | {r['checks']} | {r['seconds']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
