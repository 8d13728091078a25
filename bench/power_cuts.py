"""What each triggered power cut did: was it aimed at a young write's ack, how
much of the dirty window was left when the power went off, and how many
acknowledged writes it lost (the durability checker's lost writes, each
charged to the first cut that ended after its ack).

    .venv/bin/python bench/power_cuts.py RUN_DIR_OR_DETECTION_DIR ...

A detection dir (bench/detection.py's results/detection/<time>/) stands for
every run under it. Prints one line per cut and a total: young cuts that lost
an acknowledged write K/N, and the same for the fallback cuts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checkers.history import NEMESIS, read_history  # noqa: E402

TRIGGER = "power-cut-after-commit"


def run_dirs(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        if (path / "run.json").exists():
            out.append(path)
        else:
            out += sorted(p.parent for p in path.glob("runs/*/*/run.json"))
    return out


def cuts(run: Path) -> list[dict[str, Any]]:
    """Pure given the run dir's files: one dict per triggered power cut."""
    ops = read_history(run / "history.msgpack").ops
    nemesis = [o for o in ops if o.process == NEMESIS and o.f == "lose-unsynced"]
    found = []
    for invoke, done in zip(nemesis[0::2], nemesis[1::2], strict=False):
        params = invoke.value if isinstance(invoke.value, dict) else {}
        if params.get("trigger") != TRIGGER:
            continue
        after = params.get("after") or {}
        found.append({"start": invoke.time, "end": done.time, "young": after.get("young"),
                      "age_ms": after.get("age_ms"),
                      "frozen_after_ms": after.get("frozen_after_ms"),
                      "dirty_left_ms": after.get("dirty_left_ms"), "lost_acked": 0})
    verdicts = json.loads((run / "verdicts.json").read_text()).get("checkers", {})
    for anomaly in (verdicts.get("durability") or {}).get("anomalies", []):
        if anomaly.get("type") != "lost-write" or not isinstance(anomaly.get("ack"), dict):
            continue
        acked = anomaly["ack"]["time"]
        # The client may record the ok a moment after the power went off.
        cut = next((c for c in found if c["end"] >= acked), None)
        if cut is not None:
            cut["lost_acked"] += 1
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    totals = {True: [0, 0], False: [0, 0]}
    for run in run_dirs(args.paths):
        if not (run / "verdicts.json").exists():
            continue
        print(run)
        for c in cuts(run):
            young = bool(c["young"])
            totals[young][0] += 1
            totals[young][1] += c["lost_acked"] > 0
            print(f"  at {c['start'] / 1e9:6.2f} s  {'young' if young else 'fallback'}"
                  f"  age {c['age_ms']} ms  frozen after {c['frozen_after_ms']} ms"
                  f"  dirty window left {c['dirty_left_ms']} ms"
                  f"  acknowledged writes lost {c['lost_acked']}")
    for young, label in ((True, "young"), (False, "fallback")):
        n, k = totals[young]
        print(f"{label} cuts that lost an acknowledged write: {k}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
