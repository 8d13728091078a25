"""How far each node's own timers fell behind wall time, from its `tick_late`
lines: the grace the invariants' time limits give a node, measured in the run
instead of guessed for a loaded machine.

The node's timers count ticks, and a tick that runs a whole interval or more
late drops the ones it missed (nodes/raft/ticker.py): its check-quorum window
and its election timeout then end that much later in wall time. The node
writes a `tick_late` line for each such tick (`late_ms`, ending at the line's
`t`). A limit over a window [lo, hi] of the node's time then allows the part
of those spans that falls inside it, plus a small fixed margin of ticks: the
last tick may run up to an interval late without dropping any, the timer is
read once a tick, and the role line follows the tick that changed the role.

A node whose start line says it reports its lateness (`reports_lateness`)
and wrote no `tick_late` line kept time, and is allowed the margin only. A
run whose nodes do not say so (recorded before they measured it) keeps the
constant grace its limits had then, so re-judging it flags nothing new.
Pure: event lines in, figures out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.raft.events import START, TICK_LATE

MS = 1_000_000
# Ticks a correct node may take past its timer with no tick dropped (see above).
MARGIN_TICKS = 4
# Runs whose nodes do not report their lateness (or their tick): the grace the
# limits had before the lateness was measured.
UNMEASURED_GRACE_MS = 500


def late_spans(events: Mapping[str, list[dict]], start_ns: int) -> dict[str, list[tuple[int, int]]]:
    """node -> [(from, to)] in history ns, the spans in which its timers stood still."""
    out: dict[str, list[tuple[int, int]]] = {}
    for node, evs in events.items():
        for ev in evs:
            late = ev.get("late_ms")
            if (ev.get("event") == TICK_LATE.name and type(ev.get("t")) is int
                    and isinstance(late, int | float) and not isinstance(late, bool) and late > 0):
                end = ev["t"] - start_ns
                out.setdefault(node, []).append((end - round(late * MS), end))
    return out


def late_within(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    """How long (ns) the node's timers stood still within [lo, hi]."""
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in spans)


def timer_margin_ns(events: Mapping[str, list[dict]]) -> int:
    """MARGIN_TICKS of the longest tick any node's start line reports, where
    the nodes report their lateness; else the constant grace of before."""
    starts = [ev for evs in events.values() for ev in evs if ev.get("event") == START.name]
    ticks = [ev["tick_ms"] for ev in starts if type(ev.get("tick_ms")) is int]
    if not ticks or not any(ev.get("reports_lateness") is True for ev in starts):
        return UNMEASURED_GRACE_MS * MS
    return MARGIN_TICKS * max(ticks) * MS


def lateness_stats(spans: Mapping[str, list[tuple[int, int]]]) -> dict[str, Any]:
    """Per node: how many ticks ran late, in total and at most (s)."""
    return {node: {"late_ticks": len(s), "total_s": round(sum(b - a for a, b in s) / 1e9, 3),
                   "max_s": round(max(b - a for a, b in s) / 1e9, 3)}
            for node, s in sorted(spans.items()) if s}
