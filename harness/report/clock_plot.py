"""The clock plot: each node's wall-clock offset over the run, as the clock
faults (nemesis.clock) recorded it. A skew or a bump is a step (the op value's
`offsets` say where each node's clock stood after it); a strobe is a band
between right and its offset, flapping every `period_s`; the heal brings each
back to 0. `clock_segments` is pure; `render_clock_plot` draws them."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from checkers.faults import CLOCK
from harness.report.data import FaultWindow, Timeline
from harness.report.svg import LEFT, PLOT_W, WIDTH, nice_ceiling

NODE_COLORS = ("#0969da", "#bc4c00", "#2da44e", "#8250df", "#bf3989", "#57606a", "#d4a72c")
PLOT_H = 120
TOP = 22


@dataclass(frozen=True)
class ClockSegment:
    node: str
    start: int               # ns since run start
    end: int
    offset_s: float
    strobe_period_s: float | None = None   # a strobe: flapping between 0 and offset_s


def clock_segments(faults: list[FaultWindow]) -> list[ClockSegment]:
    """Pure: where each node's clock stood, from the clock fault windows."""
    out: list[ClockSegment] = []
    by_node: dict[str, list[FaultWindow]] = {}
    for w in faults:
        if w.f == CLOCK.name and isinstance(w.value, dict):
            for node in w.nodes:
                by_node.setdefault(node, []).append(w)
    for node, windows in by_node.items():
        windows.sort(key=lambda w: w.start)
        for w, nxt in zip(windows, [*windows[1:], None], strict=True):
            end = w.end if nxt is None or nxt.start >= w.end else nxt.start
            value: dict[str, Any] = w.value
            raw = value.get("offsets")
            offsets: dict[str, Any] = raw if isinstance(raw, dict) else {}
            offset = offsets.get(node, value.get("seconds"))
            if not isinstance(offset, (int, float)):
                continue
            period = value.get("period_s") if value.get("mode") == "strobe" else None
            out.append(ClockSegment(node, w.start, end, float(offset),
                                    float(period) if isinstance(period, (int, float)) else None))
    return out


def render_clock_plot(tl: Timeline) -> str:
    """An SVG of the offsets (empty when no clock fault acted)."""
    segments = clock_segments(tl.faults)
    if not segments or tl.end <= 0:
        return ""
    span = max(tl.bins * tl.bin_ns, 1)
    top = nice_ceiling(max(abs(s.offset_s) for s in segments)) or 1.0
    height = TOP + PLOT_H + 24

    def x(t: float) -> float:
        return LEFT + PLOT_W * min(max(t, 0), span) / span

    def y(v: float) -> float:
        return TOP + PLOT_H / 2 - (PLOT_H / 2) * v / top

    nodes = sorted({s.node for s in segments}, key=lambda n: (len(n), n))
    color = {n: NODE_COLORS[i % len(NODE_COLORS)] for i, n in enumerate(tl.nodes or nodes)}
    out = [f"<svg class='clock-plot' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' "
           f"height='{height}' viewBox='0 0 {WIDTH} {height}' role='img' "
           "aria-label='clock offset per node over time'>",
           f"<text x='{LEFT}' y='14' font-size='12' font-weight='600'>Clock offset per node "
           "(s; 0 = the host's clock)</text>",
           f"<line x1='{LEFT}' x2='{LEFT + PLOT_W}' y1='{y(0):.1f}' y2='{y(0):.1f}' "
           "stroke='#8c959f' stroke-width='1'/>"]
    for v in (top, -top):
        out.append(f"<text x='{LEFT - 6}' y='{y(v) + 4:.1f}' font-size='11' "
                   f"text-anchor='end'>{v:+g}</text>")
    for s in segments:
        c = color.get(s.node, NODE_COLORS[0])
        tip = (f"{s.node}: {'strobe 0 / ' if s.strobe_period_s else ''}{s.offset_s:+g} s"
               f"{f' every {s.strobe_period_s:g} s' if s.strobe_period_s else ''}, "
               f"{s.start / 1e9:.3f}-{s.end / 1e9:.3f} s")
        x0, x1 = x(s.start), max(x(s.end), x(s.start) + 1)
        if s.strobe_period_s:
            y0, y1 = sorted((y(0), y(s.offset_s)))
            out.append(f"<rect x='{x0:.1f}' y='{y0:.1f}' width='{x1 - x0:.1f}' "
                       f"height='{max(y1 - y0, 1):.1f}' fill='{c}' fill-opacity='0.3'>"
                       f"<title>{escape(tip)}</title></rect>")
        else:
            out.append(f"<path d='M{x0:.1f},{y(0):.1f} V{y(s.offset_s):.1f} H{x1:.1f} "
                       f"V{y(0):.1f}' fill='none' stroke='{c}' stroke-width='2'>"
                       f"<title>{escape(tip)}</title></path>")
    for i, n in enumerate(nodes):
        out.append(f"<text x='{LEFT + 8 + 60 * i}' y='{height - 6}' font-size='11' "
                   f"fill='{color.get(n, NODE_COLORS[0])}'>■ {escape(n)}</text>")
    out.append("</svg>")
    return "".join(out)
