"""The run report's timeline as one inline SVG: throughput (ok/fail/info
stacked), the fault windows in lanes and shaded across the charts, leader
changes as markers, and ok-op latency percentiles on a log scale, all on one
time axis.

Pure: a `Timeline` in, SVG text out. One element per time bin or per fault,
never per op, so the picture costs the same for 1k or 1M ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

from checkers.faults import (
    BANDWIDTH,
    CLOCK,
    CPU,
    DISK,
    KILL,
    LOSE_UNSYNCED,
    MEMORY,
    PACKET,
    PARTITION,
    PAUSE,
    STRESS,
    TRUNCATE,
)
from checkers.outcomes import ERROR, INFO, OK, REFUSED
from harness.report.data import (
    CUT_OFF_STATE,
    DOWN_STATE,
    LINKS_CUT_STATE,
    NS,
    OUTCOMES,
    PAUSED_STATE,
    FailingOp,
    FaultWindow,
    LeaderChange,
    NodeSpan,
    Timeline,
)

WIDTH = 1200
LEFT = 64
RIGHT = 16
PLOT_W = WIDTH - LEFT - RIGHT
LEADER_H = 40          # two rows of leader labels, staggered so they never overlap
LEADER_ROW_H = 13
TITLE_H = 18
RATE_H = 190
LANE_H = 18
LAT_H = 170
GAP = 30
AXIS_H = 24

# A refusal (a definite no, as a cas whose compare was false) is a normal
# answer, so it is drawn in a quiet blue; red is kept for errors.
OUTCOME_COLOR = {OK: "#2da44e", REFUSED: "#8fb8de", ERROR: "#e5534b", INFO: "#d4a72c"}
FAULT_COLOR = {PARTITION.name: "#8250df", KILL.name: "#bc4c00", PAUSE.name: "#0969da",
               TRUNCATE.name: "#57606a", LOSE_UNSYNCED.name: "#bf3989",
               CLOCK.name: "#1a7f37", CPU.name: "#9a6700", MEMORY.name: "#953800",
               STRESS.name: "#cf6b00", PACKET.name: "#0a7ea4", BANDWIDTH.name: "#8250df",
               DISK.name: "#6639ba"}
OTHER_FAULT_COLOR = "#6e7781"
NODE_STATE_COLOR = {DOWN_STATE: FAULT_COLOR[KILL.name], PAUSED_STATE: FAULT_COLOR[PAUSE.name],
                    CUT_OFF_STATE: FAULT_COLOR[PARTITION.name],
                    LINKS_CUT_STATE: FAULT_COLOR[PARTITION.name]}
# A node that lost only some links is drawn fainter than one cut off from a majority.
NODE_STATE_OPACITY = {LINKS_CUT_STATE: 0.3}
FAILING_COLOR = "#cf222e"
CHAR_W = 6.5           # px per character of an 11 px label
PCT_STYLE = {50: ("#0969da", ""), 95: ("#8250df", ""), 99: ("#bf3989", ""),
             100: ("#8c959f", "stroke-dasharray='3 3'")}
PCT_NAME = {50: "p50", 95: "p95", 99: "p99", 100: "max"}


def fault_color(f: str) -> str:
    return FAULT_COLOR.get(f, OTHER_FAULT_COLOR)


def _e(x: object) -> str:
    return escape(str(x), quote=True)


def nice_ceiling(x: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten that is >= x."""
    if x <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(x))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= x:
            return m * exp
    return 10 * exp


def _seconds(ns: float) -> str:
    s = ns / NS
    return f"{s:.0f}" if abs(s - round(s)) < 1e-9 else f"{s:g}"


class _X:
    """History time (ns) -> x pixel."""

    def __init__(self, end_ns: int) -> None:
        self.end = max(end_ns, 1)

    def __call__(self, t: float) -> float:
        return LEFT + PLOT_W * min(max(t, 0), self.end) / self.end


def render_timeline(tl: Timeline) -> str:
    """The whole timeline figure, or a short note when there is nothing to plot."""
    if tl.end <= 0:
        return "<p class='note'>No timed operations in the history: nothing to plot.</p>"
    x = _X(tl.bins * tl.bin_ns)
    lanes = _fault_lanes(tl.faults)
    y_rate = LEADER_H + TITLE_H
    y_lanes = y_rate + RATE_H + TITLE_H + 8
    lanes_h = max(len(lanes), 1) * LANE_H
    y_nodes = y_lanes + lanes_h + TITLE_H + 12
    nodes_h = len(tl.nodes) * LANE_H
    y_lat = (y_nodes + nodes_h + TITLE_H + 12) if tl.nodes else y_nodes
    y_axis = y_lat + LAT_H
    height = y_axis + AXIS_H + 8
    out = [f"<svg class='timeline' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' "
           f"height='{height}' viewBox='0 0 {WIDTH} {height}' role='img' "
           "aria-label='throughput, faults and latency over time'>"]
    out += _fault_shading(tl.faults, x, y_rate, y_axis)
    out += _x_grid(tl, x, y_rate, y_axis)
    out += _rate_panel(tl, x, y_rate)
    out += _lanes_panel(lanes, tl.faults, x, y_lanes)
    if tl.nodes:
        out += _node_lanes(tl.nodes, tl.node_spans, x, y_nodes)
    out += _latency_panel(tl, x, y_lat)
    out += _phase_marks(tl.marks, x, y_rate, y_axis)
    out += _failing_markers(tl.failing, x, y_rate, y_axis)
    out += _leader_markers(tl.leaders, x, LEADER_H, y_axis)
    out.append("</svg>")
    return "".join(out)


# --- axes --------------------------------------------------------------------------


def _x_grid(tl: Timeline, x: _X, top: int, bottom: int) -> list[str]:
    step = nice_ceiling(x.end / NS / 12) * NS
    out = []
    t = 0.0
    while t <= x.end + 1:
        px = x(t)
        out.append(f"<line class='grid' x1='{px:.1f}' y1='{top}' x2='{px:.1f}' "
                   f"y2='{bottom}'/>")
        out.append(f"<text class='tick' x='{px:.1f}' y='{bottom + 15}' "
                   f"text-anchor='middle'>{_seconds(t)}</text>")
        t += step
    out.append(f"<text class='axis' x='{LEFT + PLOT_W}' y='{bottom + AXIS_H + 4}' "
               "text-anchor='end'>seconds since the history began</text>")
    return out


def _panel_frame(y: int, h: int, title: str) -> list[str]:
    return [f"<rect class='frame' x='{LEFT}' y='{y}' width='{PLOT_W}' height='{h}'/>",
            f"<text class='panel' x='{LEFT}' y='{y - 5}'>{_e(title)}</text>"]


def _phase_marks(marks: list[tuple[int, str]], x: _X, top: int, bottom: int) -> list[str]:
    out = []
    for t, label in marks:
        px = x(t)
        # Near the right edge the label goes on the line's left, inside the plot.
        left = px > LEFT + PLOT_W * 0.6
        tx, anchor = (px - 4, "end") if left else (px + 4, "start")
        out.append(f"<line class='phase' x1='{px:.1f}' y1='{top}' x2='{px:.1f}' "
                   f"y2='{bottom}'/><text class='tick' x='{tx:.1f}' y='{top + 12}' "
                   f"text-anchor='{anchor}'>{_e(label)}</text>")
    return out


# --- throughput --------------------------------------------------------------------


def _rate_panel(tl: Timeline, x: _X, y0: int) -> list[str]:
    per_s = NS / tl.bin_ns
    stacked = [0.0] * tl.bins
    layers = []
    for o in OUTCOMES:
        low = list(stacked)
        stacked = [s + c * per_s for s, c in zip(stacked, tl.counts[o], strict=True)]
        layers.append((o, low, list(stacked)))
    top = nice_ceiling(max(stacked, default=0) * 1.05) if any(stacked) else 1.0

    def y(v: float) -> float:
        return y0 + RATE_H - RATE_H * v / top

    out = _panel_frame(y0, RATE_H, f"completed ops/s (bins of {_seconds(tl.bin_ns)} s)")
    for v in (top / 2, top):
        out.append(f"<line class='grid' x1='{LEFT}' y1='{y(v):.1f}' x2='{LEFT + PLOT_W}' "
                   f"y2='{y(v):.1f}'/>")
        out.append(f"<text class='tick' x='{LEFT - 4}' y='{y(v) + 4:.1f}' "
                   f"text-anchor='end'>{v:g}</text>")
    out.append(f"<text class='tick' x='{LEFT - 4}' y='{y0 + RATE_H + 4}' "
               "text-anchor='end'>0</text>")
    for o, low, high in layers:
        if not any(h > lo for h, lo in zip(high, low, strict=True)):
            continue
        out.append(f"<path fill='{OUTCOME_COLOR[o]}' fill-opacity='0.8' "
                   f"d='{_step_band(low, high, tl.bin_ns, x, y)}'><title>{o}</title></path>")
    return out


def _step_band(low: list[float], high: list[float], bin_ns: int, x: _X,
               y: Callable[[float], float]) -> str:
    """A filled step outline between two per-bin series."""
    pts = []
    for i, v in enumerate(high):
        pts.append(f"{x(i * bin_ns):.1f},{y(v):.1f}")
        pts.append(f"{x((i + 1) * bin_ns):.1f},{y(v):.1f}")
    for i in range(len(low) - 1, -1, -1):
        pts.append(f"{x((i + 1) * bin_ns):.1f},{y(low[i]):.1f}")
        pts.append(f"{x(i * bin_ns):.1f},{y(low[i]):.1f}")
    return "M" + "L".join(pts) + "Z"


# --- faults ------------------------------------------------------------------------


def _fault_lanes(faults: list[FaultWindow]) -> list[tuple[str, list[FaultWindow]]]:
    """One lane per fault kind, in order of first appearance."""
    lanes: dict[str, list[FaultWindow]] = {}
    for w in sorted(faults, key=lambda w: w.start):
        lanes.setdefault(w.f, []).append(w)
    return list(lanes.items())


def _fault_title(w: FaultWindow) -> str:
    return f"{w.label}: {w.start / NS:.2f} s -> {w.end / NS:.2f} s"


def _fault_shading(faults: list[FaultWindow], x: _X, top: int, bottom: int) -> list[str]:
    out = []
    for w in faults:
        x0, x1 = x(w.start), x(w.end)
        out.append(f"<rect x='{x0:.1f}' y='{top}' width='{max(x1 - x0, 1.5):.1f}' "
                   f"height='{bottom - top}' fill='{fault_color(w.f)}' fill-opacity='0.09'>"
                   f"<title>{_e(_fault_title(w))}</title></rect>")
    return out


def fault_number(faults: list[FaultWindow], w: FaultWindow) -> int:
    """A fault's number in the legend (1.., in order of injection)."""
    return sorted(faults, key=lambda f: f.start).index(w) + 1


def fit_label(label: str, number: int, width: float) -> str:
    """The full label if it fits the bar, else what follows the fault's name
    (the lane is named by it: "cut n1-n2 (bridge)", then "cut n1-n2"), else its
    legend number, else nothing: never a cut label ("partition…") that reads
    as something else."""
    _, sep, rest = label.partition(": ")
    bare = rest.split(" (")[0]
    for text in (label, rest, bare, f"#{number}") if sep else (label, f"#{number}"):
        if text and len(text) * CHAR_W + 6 <= width:
            return text
    return ""


def _lanes_panel(lanes: list[tuple[str, list[FaultWindow]]], faults: list[FaultWindow],
                 x: _X, y0: int) -> list[str]:
    out = [f"<text class='panel' x='{LEFT}' y='{y0 - 5}'>faults (inject -> heal; "
           "#n: see the fault list below)</text>"]
    if not lanes:
        out.append(f"<text class='tick' x='{LEFT + 6}' y='{y0 + 13}'>no faults injected"
                   "</text>")
    for i, (f, windows) in enumerate(lanes):
        y = y0 + i * LANE_H
        out.append(f"<text class='tick' x='{LEFT - 4}' y='{y + 13}' text-anchor='end'>"
                   f"{_e(f)[:10]}</text>")
        for w in windows:
            x0, x1 = x(w.start), x(w.end)
            width = max(x1 - x0, 2.0)
            number = fault_number(faults, w)
            label = fit_label(w.label, number, width)
            out.append(f"<g class='fault' data-fault='{number}'>"
                       f"<title>#{number} {_e(_fault_title(w))}</title>"
                       f"<rect x='{x0:.1f}' y='{y + 2}' width='{width:.1f}' "
                       f"height='{LANE_H - 4}' rx='3' fill='{fault_color(w.f)}' "
                       f"fill-opacity='0.75'/>")
            if label:
                out.append(f"<text class='lane' x='{x0 + 3:.1f}' y='{y + 13}'>"
                           f"{_e(label)}</text>")
            out.append("</g>")
    return out


def _node_lanes(nodes: list[str], spans: list[NodeSpan], x: _X, y0: int) -> list[str]:
    """One lane per node: when it was down, paused, cut off from a majority, or
    lost some links."""
    out = [f"<text class='panel' x='{LEFT}' y='{y0 - 5}'>nodes (down / paused / cut off "
           "from a majority / links cut)</text>"]
    row = {n: i for i, n in enumerate(nodes)}
    for n, i in row.items():
        y = y0 + i * LANE_H
        out.append(f"<rect class='nodelane' x='{LEFT}' y='{y + 1}' width='{PLOT_W}' "
                   f"height='{LANE_H - 2}'/><text class='tick' x='{LEFT - 4}' y='{y + 13}' "
                   f"text-anchor='end'>{_e(n)[:10]}</text>")
    for s in spans:
        if s.node not in row:
            continue
        y = y0 + row[s.node] * LANE_H
        x0, x1 = x(s.start), x(s.end)
        width = max(x1 - x0, 2.0)
        label = s.state if len(s.state) * CHAR_W + 6 <= width else ""
        color = NODE_STATE_COLOR.get(s.state, fault_color(s.f))
        title = f"{s.node} {s.state} {s.start / NS:.2f} s -> {s.end / NS:.2f} s ({s.detail})"
        out.append(f"<g class='nodestate' data-node='{_e(s.node)}' data-state='{_e(s.state)}'>"
                   f"<title>{_e(title)}</title><rect x='{x0:.1f}' y='{y + 2}' "
                   f"width='{width:.1f}' height='{LANE_H - 4}' rx='2' fill='{color}' "
                   f"fill-opacity='{NODE_STATE_OPACITY.get(s.state, 0.6)}'/>"
                   + (f"<text class='lane' x='{x0 + 3:.1f}' y='{y + 13}'>{_e(label)}</text>"
                      if label else "") + "</g>")
    return out


def _failing_markers(failing: list[FailingOp], x: _X, top: int, bottom: int) -> list[str]:
    """Where an op could not be fitted, linked to the view that shows why."""
    out = []
    for f in failing:
        px = x(f.time)
        out.append(f"<a class='failing' href='{_e(f.href)}'><title>{_e(f.label)} "
                   f"(at {f.time / NS:.3f} s; click for the counterexample)</title>"
                   f"<line x1='{px:.1f}' y1='{top}' x2='{px:.1f}' y2='{bottom}' "
                   f"stroke='{FAILING_COLOR}' stroke-width='2'/>"
                   f"<text x='{px + 4:.1f}' y='{top + 26}' fill='{FAILING_COLOR}' "
                   f"class='lane'>✗ {_e(f.label)}</text></a>")
    return out


# --- leader changes ----------------------------------------------------------------


def _leader_markers(leaders: list[LeaderChange], x: _X, top: int, bottom: int) -> list[str]:
    if not leaders:
        return []
    out = [f"<text class='tick' x='{LEFT - 10}' y='{top - 6}' text-anchor='end'>"
           "leader</text>"]
    for c, row in zip(leaders, leader_label_rows(leaders, x), strict=True):
        px = x(c.time)
        what = "leader at start" if c.first and c.time == 0 else "new leader"
        epoch = "" if c.epoch is None else f", epoch {c.epoch}"
        title = _e(f"{what}: {c.node}{epoch}, at {c.time / NS:.2f} s")
        out.append(f"<g class='leaderchange'><title>{title}</title>")
        if c.time > 0:
            out.append(f"<line class='leader' x1='{px:.1f}' y1='{top - 6}' x2='{px:.1f}' "
                       f"y2='{bottom}'/>")
        out.append(f"<path class='leader-mark' d='M{px - 5:.1f},{top - 14} "
                   f"L{px + 5:.1f},{top - 14} L{px:.1f},{top - 5} Z'/>")
        if row is not None:
            out.append(f"<text class='lane' x='{px + 7:.1f}' "
                       f"y='{top - 7 - row * LEADER_ROW_H}'>{_e(leader_label(c))}</text>")
        out.append("</g>")
    return out


def leader_label(c: LeaderChange) -> str:
    return c.node if c.epoch is None else f"{c.node} e{c.epoch}"


def leader_label_rows(leaders: list[LeaderChange], x: _X) -> list[int | None]:
    """Pure: the label row (0 or 1) of each leader marker, or None when both rows
    are taken there (the marker and its tooltip stay; the list below has it).
    Labels in one row never overlap."""
    ends = [-1e9, -1e9]   # right end of the last label in each row
    rows: list[int | None] = []
    for c in leaders:
        px = x(c.time)
        width = len(leader_label(c)) * CHAR_W + 10
        row = next((r for r in (0, 1) if px + 7 >= ends[r]), None)
        if row is not None:
            ends[row] = px + 7 + width
        rows.append(row)
    return rows


# --- latency -----------------------------------------------------------------------


def _latency_panel(tl: Timeline, x: _X, y0: int) -> list[str]:
    values = [v for series in tl.latency_ms.values() for v in series if v is not None]
    out = _panel_frame(y0, LAT_H, "latency of ok ops, ms (log scale; per bin of completion)")
    if not values:
        out.append(f"<text class='tick' x='{LEFT + 6}' y='{y0 + 34}'>no ok ops</text>")
        return out
    lo = 10 ** math.floor(math.log10(max(min(values), 1e-3)))
    hi = 10 ** math.ceil(math.log10(max(max(values), lo * 10)))
    span = math.log10(hi) - math.log10(lo)

    def y(v: float) -> float:
        return y0 + LAT_H - LAT_H * (math.log10(max(v, lo)) - math.log10(lo)) / span

    decade = lo
    while decade <= hi * 1.001:
        out.append(f"<line class='grid' x1='{LEFT}' y1='{y(decade):.1f}' "
                   f"x2='{LEFT + PLOT_W}' y2='{y(decade):.1f}'/>")
        out.append(f"<text class='tick' x='{LEFT - 4}' y='{y(decade) + 4:.1f}' "
                   f"text-anchor='end'>{decade:g}</text>")
        decade *= 10
    for p in sorted(tl.latency_ms, reverse=True):
        color, dash = PCT_STYLE.get(p, ("#57606a", ""))
        d = _broken_line(tl.latency_ms[p], tl.bin_ns, x, y)
        if d:
            out.append(f"<path fill='none' stroke='{color}' stroke-width='1.6' {dash} "
                       f"d='{d}'><title>{PCT_NAME.get(p, f'p{p}')}</title></path>")
    return out


def _broken_line(series: list[float | None], bin_ns: int, x: _X,
                 y: Callable[[float], float]) -> str:
    """A line through the bins' centres, broken where a bin had no ok op; a lone
    point becomes a short tick so it stays visible."""
    parts = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            px, py = run[0].split(",")
            parts.append(f"M{float(px) - 2:.1f},{py}L{float(px) + 2:.1f},{py}")
        elif run:
            parts.append("M" + "L".join(run))
        run.clear()

    for i, v in enumerate(series):
        if v is None:
            flush()
            continue
        run.append(f"{x((i + 0.5) * bin_ns):.1f},{y(v):.1f}")
    flush()
    return "".join(parts)
