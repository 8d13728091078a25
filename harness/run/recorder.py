"""The one place ops enter the history: stamps time, assigns index, counts.

Client dispatch and the nemesis thread both record through it, so it is
thread-safe; every op reaches the OS as it is recorded (HistoryWriter)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from checkers.history import Op
from checkers.outcomes import outcome
from harness.run.history import HistoryWriter


class Recorder:
    def __init__(self, path: Path, start_ns: int | None = None) -> None:
        self.start_ns = time.monotonic_ns() if start_ns is None else start_ns
        self._writer = HistoryWriter(path)
        self._lock = threading.Lock()
        self._open: dict[int | str, Op] = {}
        self.counts: Counter[str] = Counter()

    def now(self) -> int:
        return time.monotonic_ns() - self.start_ns

    def record(self, process: int | str, type: str, f: str, value: Any = None,
               key: Any = None, node: str | None = None, error: str | None = None,
               level: str | None = None, workload: str | None = None) -> Op:
        with self._lock:
            op = self._writer.append(Op(0, self.now(), process, type, f, value, key, node, error,
                                        level, workload))
            if type == "invoke":
                self._open[process] = op
            else:
                self._open.pop(process, None)
                if process != "nemesis":
                    self.counts[type] += 1
                    if type == "fail":
                        self.counts[outcome(type, f, error)] += 1
            return op

    def open_ops(self) -> list[Op]:
        with self._lock:
            return sorted(self._open.values(), key=lambda o: o.index)

    def close_open(self, error: str = "run-ended") -> int:
        """Info completions for every op still open; returns how many."""
        ops = self.open_ops()
        for inv in ops:
            self.record(inv.process, "info", inv.f, inv.value, inv.key, inv.node, error,
                        workload=inv.workload)
        return len(ops)

    def close(self) -> None:
        with self._lock:
            self._writer.close()
