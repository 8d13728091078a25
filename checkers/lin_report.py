"""A standalone HTML view of a linearizability verdict: for each failing key,
the ops around the failure as bars on a time axis (seconds since the history
began), one row per process labelled with the node that served it, the op
that cannot be placed marked, and the faults in force shaded behind them.
Everything is inline (CSS and SVG), so the file can be mailed or opened
years later without a server.

The optional `context` is plain data from the run (the checker itself knows
nothing of nodes or faults): `nodes` maps a history index to the node that
served the op, `faults` lists {"label", "start", "end"} windows (ns), and
`report` names the run report to link back to."""

from __future__ import annotations

import html
import json
import math
import os
from typing import Any

from checkers.verdict import Verdict

ROW_H = 26
BAR_H = 16
LEFT = 150
WIDTH = 1100
AXIS_H = 22
FAULT_ROW_H = 16
NS = 1_000_000_000

_CSS = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:2em}
.valid{color:#1a7f37}.invalid{color:#cf222e}.unknown{color:#9a6700}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px}
svg text{font:11px monospace}
.lin rect{fill:#8cc5ff}.conc rect{fill:#ffd580}
.fail rect{fill:#ff8182;stroke:#cf222e;stroke-width:2}
.over rect{fill:#aceebb;stroke:#1a7f37}
.info rect{fill-opacity:.45;stroke-dasharray:3 2;stroke:#555}
.fault rect{fill:#8250df;fill-opacity:.12}.fault text{fill:#8250df}
.axis line{stroke:#999}.axis text{fill:#555}
"""


def failure_anchor(key: Any) -> str:
    """The id of a key's counterexample in the page (linked from the run report)."""
    if key is None:
        return "failure"
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "_"
                   for ch in json.dumps(key, default=repr))
    return f"failure-{slug}"[:120]


def write_html(result: Verdict, path: str | os.PathLike[str],
               context: dict[str, Any] | None = None) -> None:
    """Write the view of `result` (a verdict from `linearizability.check`) to `path`."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_html(result, context))


def render_html(result: Verdict, context: dict[str, Any] | None = None) -> str:
    context = context or {}
    valid = result["valid"]
    cls = "valid" if valid is True else "invalid" if valid is False else "unknown"
    word = ("linearizable" if valid is True else "NOT linearizable" if valid is False
            else "unknown")
    stats = result.get("stats", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>linearizability: "
             f"{word}</title><style>{_CSS}</style></head><body>",
             f"<h1>Linearizability: <span class='{cls}'>{word}</span></h1>",
             f"<p>model <b>{_e(stats.get('model', '?'))}</b>, {stats.get('keys', 0)} key(s), "
             f"{stats.get('keys_checked', 0)} checked.</p>",
             _per_key_table(stats.get("per_key", []))]
    if context.get("report"):
        parts.append(f"<p><a href='{_e(context['report'])}'>back to the run report</a> "
                     "(its timeline marks each failing op in red)</p>")
    for a in result.get("anomalies", []):
        if a.get("type") == "nonlinearizable":
            parts.append(_failure(a, context))
        else:
            parts.append(f"<h2>{_key_name(a.get('key'))}: {_e(a.get('type'))}</h2>"
                         f"<p>{_e(a.get('reason'))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _e(x: Any) -> str:
    return html.escape(x if isinstance(x, str) else json.dumps(x, default=repr))


def _key_name(key: Any) -> str:
    # A register history has no keys; "key null" would read like a bug.
    return "the register" if key is None else f"key {_e(key)}"


def _per_key_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    cols = ["key", "valid", "ops", "indeterminate", "indeterminate_witnessed", "steps",
            "configurations", "max_linearized", "seconds"]
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_e(r.get(c))}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _failure(a: dict[str, Any], context: dict[str, Any]) -> str:
    shown = [("lin", o) for o in a.get("linearized", [])[-20:]]
    shown += [("conc", o) for o in a.get("concurrent", [])]
    failing = a.get("op")
    if failing is not None:
        shown.append(("fail", failing))
    over = a.get("overwritten_by")
    if over is not None:
        shown.append(("over", over))
    nodes = context.get("nodes") or {}
    served = nodes.get(failing.get("index")) if failing else None
    at = (f" at {failing['invoke_time'] / NS:.3f} s"
          if failing and isinstance(failing.get("invoke_time"), int) else "")
    out = [f"<h2 id='{failure_anchor(a.get('key'))}'>{_key_name(a.get('key'))}: the op in "
           "red cannot be linearized</h2>",
           f"<p>{a.get('linearized_count', 0)} ops linearized before it; state there: "
           f"<code>{_e(a.get('state'))}</code>. "
           f"Failing op: <code class='failing-op'>{_e(failing.get('what') if failing else None)}"
           f"</code> by process {_e(failing.get('process') if failing else None)}{at}"
           + (f", served by node <b class='served-by'>{_e(served)}</b>" if served else "")
           + " (blue: the end of the longest linearizable prefix, in order; orange: "
           "concurrent ops; dashed: indeterminate; green: the op that overwrote the state it "
           "needs; purple bands: faults in force).</p>"]
    if a.get("why"):
        out.append(f"<p>{_e(a['why'])}.</p>")
    # A stale read can come long after the prefix ends: then the timeline
    # shows the read and its neighbours, and the table the rest.
    drawn = [(r, o) for r, o in shown if over is None or r != "lin"]
    out.append(_timeline(_once_each(drawn), nodes, context.get("faults") or []))
    out.append("<table><tr><th>role</th><th>#</th><th>process</th><th>node</th><th>op</th>"
               "<th>type</th><th>invoked s</th><th>completed s</th><th>history index</th></tr>")
    order = a.get("linearized_count", 0) - len(a.get("linearized", [])[-20:])
    for role, o in shown:
        n = ""
        if role == "lin":
            order += 1
            n = str(order)
        out.append(f"<tr><td>{role}</td><td>{n}</td><td>{_e(o['process'])}</td>"
                   f"<td>{_e(nodes.get(o['index'], ''))}</td>"
                   f"<td>{_e(o['what'])}</td><td>{_e(o['type'])}</td>"
                   f"<td>{_seconds(o.get('invoke_time'))}</td>"
                   f"<td>{_seconds(o.get('complete_time'))}</td>"
                   f"<td>{_e(o['index'])}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _once_each(shown: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """One bar per op: an op both in the prefix and concurrent with the failing op
    would otherwise be drawn twice, one bar over the other."""
    seen: set[Any] = set()
    out = []
    for role, o in shown:
        if o.get("index") not in seen:
            seen.add(o.get("index"))
            out.append((role, o))
    return out


def _seconds(ns: Any) -> str:
    return f"{ns / NS:.3f}" if isinstance(ns, int) and not isinstance(ns, bool) else ""


def _nice_step(span_ns: float) -> float:
    raw = span_ns / 8
    exp = 10 ** math.floor(math.log10(max(raw, 1)))
    return next(m * exp for m in (1, 2, 2.5, 5, 10) if m * exp >= raw)


def _timeline(shown: list[tuple[str, dict[str, Any]]], nodes: dict[Any, str],
              faults: list[dict[str, Any]]) -> str:
    if not shown:
        return ""
    starts = [o["invoke_time"] for _, o in shown]
    ends = [o["complete_time"] for _, o in shown if o["complete_time"] is not None]
    t0, t1 = min(starts), max(ends + starts) + 1
    span = max(t1 - t0, 1) * 1.1
    procs = sorted({o["process"] for _, o in shown}, key=lambda p: (str(type(p)), p))
    row = {p: i for i, p in enumerate(procs)}
    # The node each process's shown ops were served by (a process may move).
    served: dict[Any, list[str]] = {p: [] for p in procs}
    for _, o in shown:
        n = nodes.get(o.get("index"))
        if n is not None and n not in served[o["process"]]:
            served[o["process"]].append(n)
    scale = (WIDTH - LEFT - 10) / span
    in_view = [f for f in faults if isinstance(f.get("start"), int)
               and isinstance(f.get("end"), int) and f["end"] >= t0 and f["start"] <= t0 + span]
    top = FAULT_ROW_H * len(in_view)
    height = top + ROW_H * len(procs) + AXIS_H + 10
    bottom = top + ROW_H * len(procs)

    def px(t: float) -> float:
        return LEFT + (min(max(t, t0), t0 + span) - t0) * scale

    svg = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}'>"]
    for i, f in enumerate(in_view):
        x0, x1 = px(f["start"]), px(f["end"])
        svg.append(f"<g class='fault'><title>{_e(f.get('label'))}: {_seconds(f['start'])} s "
                   f"-> {_seconds(f['end'])} s</title><rect x='{x0:.1f}' y='{i * FAULT_ROW_H}' "
                   f"width='{max(x1 - x0, 2):.1f}' height='{height - i * FAULT_ROW_H - AXIS_H}'/>"
                   f"<text x='{x0 + 3:.1f}' y='{i * FAULT_ROW_H + 12}'>{_e(f.get('label'))}"
                   "</text></g>")
    for p, i in row.items():
        on = f" @ {', '.join(served[p])}" if served[p] else ""
        svg.append(f"<text x='4' y='{top + i * ROW_H + 17}'>proc {_e(p)}{_e(on)}</text>")
    step = _nice_step(span)
    first = math.ceil(t0 / step) * step
    svg.append("<g class='axis'>")
    svg.append(f"<line x1='{LEFT}' y1='{bottom + 2}' x2='{WIDTH - 10}' y2='{bottom + 2}'/>")
    t = first
    while t <= t0 + span:
        svg.append(f"<line x1='{px(t):.1f}' y1='{bottom + 2}' x2='{px(t):.1f}' "
                   f"y2='{bottom + 6}'/><text x='{px(t):.1f}' y='{bottom + 17}' "
                   f"text-anchor='middle'>{t / NS:.3f}</text>")
        t += step
    svg.append(f"<text x='4' y='{bottom + 17}'>seconds</text></g>")
    for role, o in shown:
        x = LEFT + (o["invoke_time"] - t0) * scale
        end = o["complete_time"] if o["complete_time"] is not None else t0 + span
        if o["type"] == "info":
            end = t0 + span  # may take effect any time after its invoke
        w = max((end - o["invoke_time"]) * scale, 3)
        y = top + row[o["process"]] * ROW_H + 4
        cls = role + (" info" if o["type"] == "info" else "")
        node = nodes.get(o.get("index"))
        title = _e(f"{o['what']} [{o['type']}] index {o['index']}"
                   + (f", served by {node}" if node else ""))
        svg.append(f"<g class='{cls}'><title>{title}</title>"
                   f"<rect x='{x:.1f}' y='{y}' width='{w:.1f}' height='{BAR_H}' rx='3'/>"
                   f"<text x='{x + 3:.1f}' y='{y + 12}'>{_e(o['what'])[:40]}</text></g>")
    svg.append("</svg>")
    return "".join(svg)
