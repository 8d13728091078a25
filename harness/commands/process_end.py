"""What a command's objects cost when the process ends right after it.

Freeing a large history object by object takes time the process does not
need to spend: when `faultline` runs as the program, it ends after one
command, and the operating system takes back its memory at once. (On a
100k-txn list-append history, freeing the ops `check-elle` read took ~0.11
s of CPU, ~5% of the command.)
"""

from __future__ import annotations

import gc
from typing import Any

# The last command's objects handed over (one command's at most: a process
# that runs many, as the tests do, keeps no more than the last one's).
_KEPT: list[Any] = []


def keep_until_exit(*objects: Any) -> None:
    """Keep `objects` alive until the process ends, instead of freeing them
    when the command returns (replacing what was kept before)."""
    _KEPT[:] = objects


def leave_unfreed() -> None:
    """Called as the process ends (after its one command): what was kept is
    made a cycle and frozen out of the collector's reach, so neither the
    interpreter's teardown of modules nor its last collection frees it, and
    every other object the command made is frozen too (that last collection
    need not walk them: after checking a 10k-txn history, ~10% of the
    process's CPU time)."""
    _KEPT.append(_KEPT)
    gc.freeze()
