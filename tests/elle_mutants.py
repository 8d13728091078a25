"""Generated list-append histories with planted faults, and a fingerprint of
the checker's verdict on each: the regression corpus that keeps a faster
checker answering exactly what the checker before it answered
(tests/data/elle_fingerprints.json, written by `python tests/elle_mutants.py`
with the reference checker)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from checkers.elle.simulate import serial_history
from checkers.history import Op

FINGERPRINTS = Path(__file__).parent / "data" / "elle_fingerprints.json"
CASES = 120
MODELS = ("read-committed", "snapshot-isolation", "strict-serializable")


def mutant(seed: int) -> list[Op]:
    """A serial history, then some ok reads broken the ways buggy stores break
    them: cut short, last two swapped, an element repeated, a failed txn's
    element read, an element dropped from the middle, a read emptied."""
    rng = random.Random(seed)
    ops = serial_history(rng.randint(5, 120), keys=rng.randint(1, 4),
                         concurrency=rng.randint(1, 6), max_writes_per_key=rng.randint(2, 12),
                         p_fail=rng.choice([0.0, 0.2]), p_info=rng.choice([0.0, 0.2]),
                         p_stale=rng.choice([0.0, 0.0, 0.1]), rng=rng)
    failed = [m[2] for o in ops if o.type == "fail" for m in o.value if m[0] == "append"]
    for o in ops:
        if o.type != "ok" or rng.random() > 0.15:
            continue
        for m in o.value:
            if m[0] != "r" or not m[2]:
                continue
            r = m[2]
            how = rng.randrange(6)
            if how == 0:
                m[2] = r[:-1]
            elif how == 1 and len(r) > 1:
                m[2] = r[:-2] + [r[-1], r[-2]]
            elif how == 2:
                m[2] = r + [r[0]]
            elif how == 3 and failed:
                m[2] = r + [rng.choice(failed)]
            elif how == 4 and len(r) > 2:
                i = rng.randrange(1, len(r) - 1)
                m[2] = r[:i] + r[i + 1:]
            elif how == 5:
                m[2] = []
    return ops


def fingerprint(ops: list[Op], model: str) -> dict[str, Any]:
    from checkers import elle

    v = elle.check(ops, model=model)
    return {"valid": v["valid"], "anomaly_counts": v["stats"]["anomaly_counts"],
            "edges": v["stats"]["edges"], "not": v["stats"]["not"],
            "cycle_types": sorted(a["type"] for a in v["anomalies"] if "cycle" in a)}


def all_fingerprints() -> list[dict[str, Any]]:
    return [fingerprint(mutant(seed), MODELS[seed % len(MODELS)]) for seed in range(CASES)]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent.parent))
    FINGERPRINTS.write_text(json.dumps(all_fingerprints(), indent=0, sort_keys=True) + "\n")
