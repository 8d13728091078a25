"""A uniform random sample of mutmut's mutants, one name a line, for a
mutation run on a busy machine: `make mutate MUTANTS="$(scripts/mutation_sample.py
150 'checkers/elle/*.py')"`. The score of a sample estimates the area's score
(docs/mutation.md says how many ran); run the whole area when the machine is free.

Usage: mutation_sample.py N GLOB [SEED]. GLOB names source files under
mutants/ (mutmut writes them, with every mutant's name, when any run starts).
Only mutants not yet run are drawn.
"""

from __future__ import annotations

import glob
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def not_run(pattern: str) -> list[str]:
    names = []
    for meta in sorted(glob.glob(str(ROOT / "mutants" / f"{pattern}.meta"))):
        codes = json.loads(Path(meta).read_text()).get("exit_code_by_key") or {}
        names += [name for name, code in codes.items() if code is None]
    return names


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    n, pattern = int(sys.argv[1]), sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) == 4 else 0
    names = not_run(pattern)
    print("\n".join(sorted(random.Random(seed).sample(names, min(n, len(names))))))


if __name__ == "__main__":
    main()
