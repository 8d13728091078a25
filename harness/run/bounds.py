"""The ranges a run's numbers may take, checked before anything is built.

A number past its range is a typo or an attack, never a test: `time_limit =
1e308` would make a schedule loop for ever, `repeats = 100000000` a campaign
plan of gigabytes. Each bound is far beyond any real use and small enough
that what is built from it stays small."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DAY_S = 86_400.0


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    low_allowed: bool = True   # False: the value must be above `low`
    unit: str = ""

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        low = f"{self.low:g}" if self.low_allowed else f"{self.low:g} (excluded)"
        return f"from {low} to {self.high:g}{unit}"

    def problem(self, name: str, value: Any) -> str | None:
        """One sentence saying why `value` cannot be `name`'s, or None."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} must be a number {self.text()}, not {value!r}"
        if not math.isfinite(value):
            return f"{name} must be a finite number {self.text()}, not {value}"
        if value < self.low or (value == self.low and not self.low_allowed):
            what = ("must not be negative" if self.low == 0 and self.low_allowed
                    else "must be positive" if self.low == 0 else f"must be at least {self.low:g}")
            return f"{name} {what} ({self.text()}), not {value:g}"
        if value > self.high:
            return f"{name} must be at most {self.high:g} ({self.text()}), not {value:g}"
        return None


def positive(high: float, unit: str = "") -> Range:
    return Range(0, high, low_allowed=False, unit=unit)


def non_negative(high: float, unit: str = "") -> Range:
    return Range(0, high, unit=unit)


# RunConfig's plain numbers, by field (nodes and concurrency have bounds of
# their own, from the address plan and the machine).
RUN_FIELDS: dict[str, Range] = {
    "rate": non_negative(1_000_000, "ops/s"),
    "time_limit": positive(7 * DAY_S, "s"),
    "nemesis_interval": positive(DAY_S, "s"),
    "nemesis_min_duration": non_negative(DAY_S, "s"),
    "recovery_time": non_negative(DAY_S, "s"),
    "final_read_timeout": positive(DAY_S, "s"),
    "op_timeout": positive(DAY_S, "s"),
    "seed": Range(-(2**63), 2**63 - 1),
    "companion_ops": Range(0, 1),
}
# The checkers' budgets a run may set (lin_options; null: no limit).
CHECK_BUDGETS: dict[str, Range] = {
    "time_limit": positive(7 * DAY_S, "s"),
    "memory_limit_mb": positive(1024 * 1024, "MiB"),
}
# Elle's cycle search: 0 searches nothing (what the graph proves still stands).
CYCLE_SEARCH = non_negative(7 * DAY_S, "s")
# An availability threshold (a share, or seconds).
THRESHOLD = non_negative(7 * DAY_S)
# A campaign: runs one file may plan, repeats of a matrix, runs at once.
MAX_CAMPAIGN_RUNS = 100_000
MAX_REPEATS = 10_000
MAX_PARALLEL = 64
# A loopback TCP port a server listens on (1024 and up: no privileged port).
PORT = Range(1024, 65535)
# History events a Spark check splits a run's key groups from (0: every run).
SPLIT_FROM = Range(0, 10**12)


class NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonFinite(text)
    return value


def json_option(raw: str) -> Any:
    """`raw` as JSON (ValueError if it is not JSON); NonFinite, naming what,
    if it holds a number that is not finite."""
    import json
    return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
