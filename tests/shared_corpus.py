"""Where the externally written histories with known verdicts live.

The corpus sits in the workspace's `shared/` beside the clone, not in the
repository; `FAULTLINE_CORPUS` points elsewhere when a clone lives apart
from it. Tests that need it skip naming the places they looked."""

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]


def _candidates() -> list[Path]:
    places = [_REPO.parent / "shared" / "corpus"]
    if os.environ.get("FAULTLINE_CORPUS"):
        places.insert(0, Path(os.environ["FAULTLINE_CORPUS"]))
    return places


def find_porcupine_corpus() -> Path:
    """The first place holding `porcupine/MANIFEST.tsv`, else the first place
    looked at (so a skip reason can name it)."""
    for place in _candidates():
        if (place / "porcupine" / "MANIFEST.tsv").exists():
            return place / "porcupine"
    return _candidates()[0] / "porcupine"


PORCUPINE = find_porcupine_corpus()
MISSING_REASON = ("shared corpus not found (looked in "
                  + ", ".join(str(p) for p in _candidates())
                  + "; set FAULTLINE_CORPUS)")


def find_corpus(sub: str) -> Path | None:
    """The first place holding the directory `sub` (e.g. "knossos/data"), else None."""
    return next((p / sub for p in _candidates() if (p / sub).is_dir()), None)


def missing_reason(sub: str) -> str:
    return (f"corpus {sub} not found (looked in "
            + ", ".join(str(p) for p in _candidates()) + "; set FAULTLINE_CORPUS)")
