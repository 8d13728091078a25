"""Who led when, for a system that prints no election events: a thread polls
the adapter's `leader()` (through `Cluster.leader`, as the nemesis does) while
the workload runs and keeps each change, in history time, for run.json
`leaders` (the report's leader changes and lanes, and fault coverage)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

POLL_S = 0.5
SOURCE = "polled DB.leader()"


def record_change(changes: list[list[Any]], t_ns: int, leader: str | None) -> bool:
    """Append [t_ns, leader] when the leader differs from the last seen."""
    if changes and changes[-1][1] == leader:
        return False
    changes.append([t_ns, leader])
    return True


class LeaderWatch:
    """Polls `leader` every `poll_s` from `start` until `stop`; `doc()` is run.json's `leaders`."""

    def __init__(self, leader: Callable[[], str | None], start_ns: int,
                 poll_s: float = POLL_S) -> None:
        self._leader, self._start_ns, self._poll_s = leader, start_ns, poll_s
        self.changes: list[list[Any]] = []
        self.polls = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                leader = self._leader()
            except Exception:  # a node down or cut off is what the faults do; not a crash
                leader, self.errors = None, self.errors + 1
            self.polls += 1
            record_change(self.changes, time.monotonic_ns() - self._start_ns, leader)
            self._stop.wait(self._poll_s)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.doc()

    def doc(self) -> dict[str, Any]:
        return {"source": SOURCE, "poll_s": self._poll_s, "polls": self.polls,
                "errors": self.errors, "changes": list(self.changes)}
