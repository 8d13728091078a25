"""`clock`: a node's wall clock set off, jumped, or flapped, through libfaketime.

Each node starts with libfaketime preloaded (`LD_PRELOAD`) and a control file
of its own (`FAKETIME_TIMESTAMP_FILE`) holding its offset ("+0" until a fault
writes to it); `FAKETIME_NO_CACHE=1` makes the library read that file at
every clock call, so an offset takes effect at once (measured cost:
docs/faults.md). The monotonic clock is left alone
(`FAKETIME_DONT_FAKE_MONOTONIC=1`), and so are timed waits on it
(`FAKETIME_FORCE_MONOTONIC_FIX=0`: with the library's default, every hand-off
to a Python thread pool took ~0.4 s, and a Python node timed out nearly every
request). Faking the monotonic clock too is not offered: measured with
0.9.10, it rebases the monotonic clock onto the wall clock (a node's event
line times would no longer match the history's) and a Python
`Event.wait(0.2)` then never returned (docs/faults.md).

Variants (`clock:skew=5`, `clock:bump=-2`, `clock:strobe=1,period=0.2`):
    skew=S    the node's clock set S seconds off (until the heal)
    bump=S    the node's clock jumped by S seconds from where it is (they add up)
    strobe=S  the clock flapping between S seconds off and right, every
              `period` seconds (default 0.5), until the heal
Without one: a skew, its size and sign drawn by the planner. Each may end in
`,leader`: the node leading at inject time rather than one drawn by the plan
(a lease is the leader's; a follower's clock rarely matters).

A skew's params may name each node's own offset instead (`offsets`: node ->
seconds, as the composition `clock-cut` sets the leader's clock behind and
its followers' ahead in one step); the heal sets every one back.

Only a system whose node processes read the clock through libc can take it:
its adapter declares so (`nodes.abilities.PreloadClock`); a Go binary such as etcd
reads the clock through the vDSO and is refused before the run starts.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.faults import CLOCK
from checkers.history import NOOP
from nemesis.fault import ClusterControl, FaultContext, planned_or_leader
from nodes.abilities import PreloadClock

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
MODES = ("skew", "bump", "strobe")
DEFAULT_PERIOD_S = 0.5
MIN_PERIOD_S = 0.01
# The default skew: at least MIN_SKEW_S and at most DEFAULT_MAX_SKEW_S
# seconds, either way (the compositions that set clocks apart draw theirs
# from the same range).
MIN_SKEW_S = 1.0
DEFAULT_MAX_SKEW_S = 30.0
LEADER = "leader"


@dataclass(frozen=True)
class ClockVariant:
    mode: str
    seconds: float | None        # None: drawn by the planner
    period_s: float = DEFAULT_PERIOD_S
    leader: bool = False         # the node leading at inject time


def parse_variant(variant: str | None) -> ClockVariant:
    """Pure: `skew=5`, `bump=-2`, `strobe=1,period=0.2`; None: a skew of a
    size drawn later."""
    if variant is None:
        return ClockVariant("skew", None)
    parts = [p.strip() for p in variant.split(",") if p.strip()]
    leader = LEADER in parts
    parts = [p for p in parts if p != LEADER]
    head, *rest = parts or [""]
    mode, eq, value = head.partition("=")
    if mode not in MODES:
        raise ValueError(f"clock variant must start with one of {', '.join(MODES)} "
                         f"(e.g. skew=5, maybe with ,leader), not {head!r}")
    seconds = _number(value, f"clock:{mode}") if eq else None
    if mode == "strobe" and seconds is None:
        seconds = 1.0
    period = DEFAULT_PERIOD_S
    for part in rest:
        key, eq, value = part.partition("=")
        if key == "period" and eq and mode == "strobe":
            period = _number(value, "clock strobe period")
            if period < MIN_PERIOD_S:
                raise ValueError(f"clock strobe period must be at least {MIN_PERIOD_S} s")
        else:
            raise ValueError(f"unknown clock option {part!r} (strobe takes period=P; "
                             "any mode takes leader)")
    return ClockVariant(mode, seconds, period, leader)


def _number(text: str, what: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise ValueError(f"{what} takes seconds, e.g. 5 or -0.5, not {text!r}") from None
    if value != value or abs(value) > 10 * 365 * 86400:
        raise ValueError(f"{what} of {text!r} s is out of range")
    return value


def plan(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    """Pure: which node (or the leader, found at inject time), and by how much
    (drawn when the variant leaves it open)."""
    v = parse_variant(variant)
    seconds = v.seconds
    if seconds is None:
        seconds = round(rng.uniform(MIN_SKEW_S, DEFAULT_MAX_SKEW_S) * rng.choice((-1, 1)), 3)
    whom: dict[str, Any] = {"targets": LEADER} if v.leader else {
        "nodes": [rng.choice(sorted(nodes))]}
    params: dict[str, Any] = {**whom, "mode": v.mode, "seconds": seconds}
    if v.mode == "strobe":
        params["period_s"] = v.period_s
    return params


def offset_text(seconds: float) -> str:
    """Pure: what libfaketime reads as an offset from the real clock."""
    return f"{'+' if seconds >= 0 else '-'}{abs(seconds):.6f}"


def faketime_env(control: Path) -> dict[str, str]:
    """Pure: what a node's environment gains so its wall clock follows `control`."""
    return {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME_TIMESTAMP_FILE": str(control),
            "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


def check_installed() -> str | None:
    if LIBFAKETIME.is_file():
        return None
    return (f"clock faults need libfaketime ({LIBFAKETIME} is missing): "
            "apt-get install libfaketime")


def write_offset(control: Path, seconds: float) -> None:
    """Atomically: libfaketime may read the file at any moment."""
    tmp = control.with_suffix(".tmp")
    try:
        tmp.write_text(offset_text(seconds) + "\n")
        os.replace(tmp, control)
    except BaseException:
        # a full disk fails the write half-done: no stray file outlives the run
        tmp.unlink(missing_ok=True)
        raise


class ClockFault:
    """Writes offsets into the nodes' control files; heal writes +0 to every one
    it changed. `clocks`: node -> control file (made before the nodes start)."""

    name, heal_f = CLOCK.name, CLOCK.heal_f

    def __init__(self, variant: str | None, clocks: Mapping[str, Path]) -> None:
        self.variant = variant
        parse_variant(variant)
        self.clocks = dict(clocks)
        self.offsets: dict[str, float] = {}
        self.touched: set[str] = set()     # nodes set off since the last heal
        self._strobe_stop: threading.Event | None = None
        self._strobe: threading.Thread | None = None

    def plan(self, rng: random.Random, nodes: Sequence[str]) -> dict[str, Any]:
        return plan(rng, nodes, self.variant)

    def _set(self, node: str, seconds: float) -> None:
        write_offset(self.clocks[node], seconds)
        self.offsets[node] = seconds
        if seconds:
            self.touched.add(node)

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        if "mode" not in params:
            params = {**plan(rng, cluster.names, self.variant), **params}
        apart = params.get("offsets")
        if params["mode"] == "skew" and isinstance(apart, Mapping) and apart:
            return self._skew_apart({str(n): float(s) for n, s in apart.items()})
        aimed = planned_or_leader(cluster, params)
        nodes = aimed.nodes
        mode, seconds = params["mode"], float(params["seconds"])
        missing = [n for n in nodes if n not in self.clocks]
        if missing:
            raise RuntimeError(f"{' '.join(missing)} started without a clock control file")
        value: dict[str, Any] = {"nodes": nodes, "mode": mode, "seconds": seconds,
                                 **aimed.recorded()}
        if mode == "strobe":
            self._stop_strobe()
            period = float(params.get("period_s", DEFAULT_PERIOD_S))
            value["period_s"] = period
            self._start_strobe(nodes, seconds, period)
        else:
            for n in nodes:
                self._set(n, seconds if mode == "skew" else self.offsets.get(n, 0.0) + seconds)
        value["offsets"] = {n: self.offsets.get(n, 0.0) for n in nodes}
        return value

    def _skew_apart(self, offsets: dict[str, float]) -> dict[str, Any]:
        """Each node of `offsets` set its own seconds off, in one step."""
        missing = [n for n in sorted(offsets) if n not in self.clocks]
        if missing:
            raise RuntimeError(f"{' '.join(missing)} started without a clock control file")
        for n in sorted(offsets):
            self._set(n, offsets[n])
        return {"nodes": sorted(offsets), "mode": "skew",
                "offsets": {n: self.offsets.get(n, 0.0) for n in sorted(offsets)}}

    def _start_strobe(self, nodes: list[str], seconds: float, period: float) -> None:
        stop = threading.Event()

        def flap() -> None:
            on = True
            while not stop.is_set():
                for n in nodes:
                    self._set(n, seconds if on else 0.0)
                on = not on
                stop.wait(period)

        for n in nodes:
            self._set(n, seconds)
        self._strobe_stop = stop
        self._strobe = threading.Thread(target=flap, name="clock-strobe", daemon=True)
        self._strobe.start()

    def _stop_strobe(self) -> None:
        if self._strobe_stop is not None:
            self._strobe_stop.set()
        if self._strobe is not None:
            self._strobe.join()
        self._strobe_stop = self._strobe = None

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        self._stop_strobe()
        changed = sorted(self.touched)   # a strobe may have just flapped back to 0
        for n in sorted(self.offsets):
            self._set(n, 0.0)
        self.offsets.clear()
        self.touched.clear()
        if not changed:
            return {"nodes": [], NOOP: "no clock was off"}
        return {"nodes": changed, "offsets": dict.fromkeys(changed, 0.0)}


def check_preload(db: object) -> None:
    """Raises, in the adapter's words where it has some, unless `db`'s node
    processes take a preloaded clock (a fault that sets clocks needs it)."""
    if not isinstance(db, PreloadClock):
        raise ValueError("its adapter does not declare whether its node processes read the "
                         "clock through libc (nodes.abilities.PreloadClock), so libfaketime "
                         "may not reach them")
    if not db.clock_preload:
        raise ValueError(db.clock_note)


def clock_fault(ctx: FaultContext) -> ClockFault:
    check_preload(ctx.db)
    return ClockFault(ctx.variant, ctx.extras.get("clocks") or {})
