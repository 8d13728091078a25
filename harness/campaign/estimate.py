"""How long a campaign takes: its runs, and the Spark check over all of them.

The check is one Spark job after the runs: a session start (a JVM, embedded),
then a cost per run (its tables, plan and verdict files) and per history
event (the checkers' work). It was left out, and a smoke campaign shown as
"about 38 s" took 1 min 49 s. Before the runs exist their size is planned:
`rate` completions a second for the workload and the recovery phase, two
events (invoke, completion) each; once they have run, run.json's op counts
say it. The constants are measured (docs/campaign-estimate.md has the
figures, the load they were taken at, and the command that remakes them).
Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

RUN_OVERHEAD_S = 15.0        # per run: start nodes, dump, tear down
# The check, in CPU seconds of its whole process tree (the CLI, the JVM, its
# Python workers), fitted to cold embedded checks of 1 and 3 smoke runs and
# one 6,100-event run: the wall time when a core is free for it. On a loaded
# machine the wall grows with the load (docs/campaign-estimate.md).
SPARK_SESSION_S = 18.0       # the JVM and session start
CHECK_PER_RUN_S = 0.6        # each run's tables, plan and verdict files
CHECK_PER_EVENT_S = 0.0007   # each history event through the checkers
UNPACED_OPS_PER_S = 1300.0   # completions a second of an unpaced run (bench/harness_throughput.py)
EVENTS_PER_OP = 2            # an invoke and its completion


def planned_events(config: Any) -> int:
    """History events a run of `config` (a RunConfig) should write."""
    rate = config.rate if config.rate and config.rate > 0 else UNPACED_OPS_PER_S
    return int(rate * (config.time_limit + config.recovery_time) * EVENTS_PER_OP)


def run_events(run: dict[str, Any]) -> int:
    """History events of a finished run, from run.json's op counts."""
    counts = c if isinstance(c := run.get("op_counts"), dict) else {}
    done = sum(n for t in ("ok", "fail", "info") if isinstance(n := counts.get(t, 0), int))
    return done * EVENTS_PER_OP


def check_seconds(runs: int, events: int) -> float:
    """The Spark check of `runs` runs holding `events` history events in all."""
    if runs <= 0:
        return 0.0
    return SPARK_SESSION_S + runs * CHECK_PER_RUN_S + events * CHECK_PER_EVENT_S


@dataclass(frozen=True)
class Estimate:
    runs_s: float
    check_s: float

    @property
    def total_s(self) -> float:
        return self.runs_s + self.check_s


def estimate(configs: Iterable[Any], parallel: int = 1,
             overhead_s: float = RUN_OVERHEAD_S) -> Estimate:
    """Wall time of a campaign of these run configs: the runs, `parallel` at a
    time, then one Spark check of them all."""
    configs = list(configs)
    runs = sum(c.time_limit + c.recovery_time + overhead_s for c in configs)
    check = check_seconds(len(configs), sum(planned_events(c) for c in configs))
    return Estimate(runs / max(1, parallel), check)


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_text(e: Estimate) -> str:
    """"about 2 min (runs 38 s, Spark check 1 min)"."""
    return (f"about {duration_text(e.total_s)} (runs {duration_text(e.runs_s)}, "
            f"Spark check {duration_text(e.check_s)})")
