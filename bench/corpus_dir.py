"""Where the shared corpus is, for the bench scripts (run as `python
bench/NAME.py`, so this directory is on sys.path): FAULTLINE_CORPUS, else
shared/ beside the clone (a worktree elsewhere sets FAULTLINE_CORPUS, or has
a `shared` link beside it). The tests look the same way
(tests/shared_corpus.py)."""

from __future__ import annotations

import os
from pathlib import Path


def corpus(sub: str) -> Path:
    """The corpus's `sub` directory (e.g. "porcupine"), in the first place
    that has one; the first candidate's if none does (its absence is then
    the caller's error to word)."""
    places = [Path(__file__).resolve().parents[2] / "shared" / "corpus"]
    if os.environ.get("FAULTLINE_CORPUS"):
        places.insert(0, Path(os.environ["FAULTLINE_CORPUS"]))
    return next((p for p in places if (p / sub).is_dir()), places[0]) / sub
