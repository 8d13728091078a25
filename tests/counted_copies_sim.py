"""Run the raft safety test's random faults in the simulation and judge its
event lines with checkers.counted_copies: prints, as JSON, per seed the
anomaly types found and whether the simulation saw a safety violation.
Run from a scratch copy (tests/raft/test_counted_copies_sim.py) so the
patched code is the one judged: `python tests/counted_copies_sim.py FIRST END`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    # Run from a scratch copy: its own modules, never the editable install's.
    sys.path[:0] = [str(HERE.parent)]

from checkers import counted_copies  # noqa: E402


def event_lines(sim) -> dict[str, list[dict]]:  # noqa: ANN001
    """The simulation's records as event lines; `t` is the record's place in
    the one ordered list, so a line is before whatever it caused."""
    lines: dict[str, list[dict]] = {}
    for i, (_, node, event) in enumerate(sim.events):
        lines.setdefault(node, []).append({"t": i, "node": node} | event)
    return lines


def judge(chaos: Callable, seed: int, fault_ticks: int = 300) -> dict:
    """`chaos`: tests/raft/test_raft_safety.py's (seed, ticks, membership) -> Sim."""
    sim = chaos(seed, fault_ticks, False)
    anomalies, stats = counted_copies.check(event_lines(sim))
    return {"seed": seed, "types": sorted({a["type"] for a in anomalies}),
            "claims": stats["claims"], "violations": len(sim.violations)}


def main(argv: list[str]) -> int:
    from tests.raft.test_raft_safety import chaos
    first, last = int(argv[0]), int(argv[1])
    print(json.dumps([judge(chaos, s) for s in range(first, last)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
