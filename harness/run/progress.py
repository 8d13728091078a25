"""What a running test shows: elapsed/limit, ops, outcomes, rate, active faults.

A live line on a terminal (rich); plain periodic lines when output is a file
or a CI log, so logs stay readable."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import IO

from checkers.outcomes import ERROR, INFO, OK, REFUSED

# The phases the live line names. Only the workload runs against the time
# limit; the clock of the others counts their own time, so the line never
# reads "[35.0/30s]" while final reads run.
WORKLOAD, RECOVER, FINAL_READS = "main", "recover", "final"
PHASE_WORDS = {WORKLOAD: "workload", RECOVER: "recovering", FINAL_READS: "final reads"}


def clock(phase: str, elapsed: float, limit: float, phase_elapsed: float) -> str:
    """"[ 12.3/30s] workload", then "[30s done] final reads 2.1s"."""
    word = PHASE_WORDS.get(phase, phase)
    if phase == WORKLOAD:
        return f"[{min(elapsed, limit):5.1f}/{limit:.0f}s] {word}"
    return f"[{limit:.0f}s done] {word} {phase_elapsed:.1f}s"


def status_line(phase: str, elapsed: float, limit: float, counts: Mapping[str, int],
                rate: float, faults: list[str], phase_elapsed: float = 0.0) -> str:
    done = sum(counts.get(t, 0) for t in ("ok", "fail", "info"))
    active = ", ".join(faults) if faults else "none"
    return (f"{clock(phase, elapsed, limit, phase_elapsed)}  ops {done} "
            f"(ok {counts.get(OK, 0)} refused {counts.get(REFUSED, 0)} "
            f"error {counts.get(ERROR, 0)} info {counts.get(INFO, 0)})"
            f"  {rate:6.0f} ops/s  faults: {active}")


class Progress:
    def __init__(self, time_limit: float, stream: IO[str] | None = None,
                 plain_every: float = 5.0) -> None:
        self.stream = stream or sys.stderr
        self.time_limit = time_limit
        self.started = time.monotonic()
        self._plain_every = plain_every
        self._last_plain = 0.0
        self._last_done = 0
        self._last_at = self.started
        self._rate = 0.0
        self._live = None
        self._phase: str | None = None
        self._phase_started = self.started
        if self.stream.isatty():
            from rich.console import Console
            from rich.live import Live
            self._live = Live("", console=Console(file=self.stream), refresh_per_second=4,
                              transient=False)
            self._live.start()

    def start_clock(self) -> None:
        """Elapsed time counts from here: the workload's start, not the cluster's
        (starting many nodes must not eat into the shown time limit)."""
        self.started = time.monotonic()

    def update(self, phase: str, counts: Mapping[str, int], faults: list[str]) -> None:
        now = time.monotonic()
        done = sum(counts.get(t, 0) for t in ("ok", "fail", "info"))
        if now - self._last_at >= 1.0:
            self._rate = (done - self._last_done) / (now - self._last_at)
            self._last_done, self._last_at = done, now
        if phase != self._phase:
            self._phase, self._phase_started = phase, now
        line = status_line(phase, now - self.started, self.time_limit, counts, self._rate, faults,
                           now - self._phase_started)
        if self._live is not None:
            self._live.update(line)
        elif now - self._last_plain >= self._plain_every:
            self._last_plain = now
            print(line, file=self.stream, flush=True)

    def say(self, message: str) -> None:
        if self._live is not None:
            self._live.console.print(message)
        else:
            print(message, file=self.stream, flush=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
