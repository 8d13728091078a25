"""The run report page: the verdict first and big, then what each checker
found, the timeline, op counts, the config and links to the raw files.

Pure: a `RunReport` in, one self-contained HTML string out (inline CSS and
SVG, nothing fetched), so the file opens offline years later. Everything that
came from the run (histories, run.json, node names) is escaped: a run dir is
data from a possibly broken or hostile source.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from checkers.anomaly_text import sentence
from checkers.verdict import checker_label
from harness.report.clock_plot import render_clock_plot
from harness.report.data import NS, OUTCOMES, PERCENTILES, RunReport
from harness.report.explain import compact
from harness.report.svg import (
    NODE_STATE_COLOR,
    NODE_STATE_OPACITY,
    OUTCOME_COLOR,
    PCT_NAME,
    PCT_STYLE,
    fault_color,
    leader_label,
    render_timeline,
)

ANOMALIES_SHOWN = 5
STATS_JSON_CHARS = 4000

VERDICT_WORD = {True: "VALID", False: "INVALID", "unknown": "UNKNOWN"}
VERDICT_CLASS = {True: "valid", False: "invalid", "unknown": "unknown"}
# The config fields a reader looks for first, in this order; the rest follow.
CONFIG_FIRST = ("db", "workload", "nodes", "nemesis", "seed", "time_limit", "bugs",
                "concurrency", "rate", "nemesis_interval", "op_timeout", "node_options",
                "workload_options", "thresholds", "consistency_model", "lin_model")
CONFIG_HIDDEN = ("schedule",)

_CSS = """
body{font:14px system-ui,sans-serif;margin:1.5em auto;max-width:1240px;padding:0 1em;color:#222}
h1{font-size:1.2em;font-weight:normal;margin:0 0 .4em;color:#57606a}
h2{font-size:1.1em;margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
code,.mono{font:12px ui-monospace,monospace}
.valid{color:#1a7f37}.invalid{color:#cf222e}.unknown{color:#9a6700}.unjudged{color:#57606a}
.banner{border-radius:8px;padding:.8em 1.2em;margin:.4em 0 1em;border:2px solid}
.banner.valid{background:#dafbe1;border-color:#1a7f37}
.banner.invalid{background:#ffebe9;border-color:#cf222e}
.banner.unknown{background:#fff8c5;border-color:#9a6700}
.banner.unjudged{background:#f6f8fa;border-color:#8c959f}
.banner .word{font-size:2.6em;font-weight:700;letter-spacing:.04em}
.banner .why{font-size:1.05em;color:#222;margin-top:.2em}
.facts{color:#57606a}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.n{text-align:right;
font-variant-numeric:tabular-nums}
.checker{margin:1em 0 1.2em}.checker h3{font-size:1.05em;margin:.2em 0}
.checker ol{margin:.3em 0;padding-left:1.6em}.checker li{margin:.25em 0}
.stats{color:#57606a;font-size:12px}
table.checkers td{max-width:900px}
details pre{font:11px ui-monospace,monospace;background:#f6f8fa;padding:.6em;overflow:auto;
max-height:24em;white-space:pre-wrap;word-break:break-all}
.note{color:#9a6700}.bug{color:#cf222e;font-weight:600}
.legend span{display:inline-block;margin-right:1.2em;font-size:12px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}
svg.timeline{display:block;margin:.4em 0}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg text.tick{fill:#57606a}svg text.panel{font-weight:600;fill:#444}
svg text.lane{fill:#111}svg text.axis{fill:#57606a}
svg .frame{fill:none;stroke:#c9d1d9}svg .grid{stroke:#eaeef2;stroke-width:1}
svg line.leader{stroke:#24292f;stroke-width:1;stroke-dasharray:2 3;opacity:.55}
svg .leader-mark{fill:#24292f}
svg .phase{stroke:#57606a;stroke-width:1.5}
svg .nodelane{fill:#f6f8fa;stroke:#eaeef2}
svg a.failing text{font-weight:700}
table.faults td{font-size:12px}
ul.links{columns:3;font-size:13px}
"""


def _e(x: Any) -> str:
    return escape(x if isinstance(x, str) else compact(x), quote=True)


def _word(valid: Any) -> tuple[str, str]:
    if valid in VERDICT_WORD and type(valid) in (bool, str):
        return VERDICT_WORD[valid], VERDICT_CLASS[valid]
    return "NOT CHECKED", "unjudged"


def render(report: RunReport) -> str:
    """The whole report page."""
    config = c if isinstance(c := report.run.get("config"), dict) else {}
    word, cls = _word((report.verdicts or {}).get("valid"))
    if report.run.get("client_error"):
        word, cls = "HARNESS ERROR", "unjudged"
    title = f"{word}: {config.get('db', '?')} x {config.get('workload', '?')} {report.run_id}"
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>faultline run <span class='mono'>{_e(report.run_id)}</span></h1>",
             _banner(report, config, word, cls),
             _notes(report.notes),
             _checkers(report.verdicts, config.get("workload")),
             _timeline_section(report),
             _counts(report),
             _config(report.run, config),
             _links(report.links),
             "</body></html>"]
    return "\n".join(p for p in parts if p)


# --- the verdict -------------------------------------------------------------------


def _banner(report: RunReport, config: dict[str, Any], word: str, cls: str) -> str:
    checkers = _checker_map(report.verdicts)
    if report.run.get("client_error"):
        why = ("The system's client raised instead of completing an op (a bug in the "
               "client): the run ended as a harness error and its history is not judged.")
    elif report.verdicts is None:
        why = ("No verdict stands for this run's history (never checked, or checked when "
               "it held another history): <code>faultline check --in-process "
               "RUN_DIR</code> judges it.")
    elif not checkers:
        why = "verdicts.json names no checkers."
    else:
        bad = [n for n, v in checkers.items() if v.get("valid") is False]
        unsure = [n for n, v in checkers.items() if v.get("valid") == "unknown"]
        if bad:
            why = (f"{len(bad)} of {len(checkers)} checkers found anomalies: "
                   + ", ".join(f"<b>{_e(n)}</b>" for n in bad))
        elif unsure:
            why = (f"No anomaly found, but {len(unsure)} of {len(checkers)} checkers could "
                   "not decide: " + ", ".join(f"<b>{_e(n)}</b>" for n in unsure))
        else:
            why = f"All {len(checkers)} checkers passed."
    bugs = config.get("bugs") or []
    bug_line = ""
    if bugs:
        bug_line = ("<div class='why'>Bug switches on: <span class='bug'>"
                    f"{_e(', '.join(map(str, bugs)))}</span> (an anomaly is expected)</div>")
    status = report.run.get("status")
    status_line = ""
    if status not in (None, "complete"):
        err = report.run.get("error")
        status_line = (f"<div class='why'>Run status: <b>{_e(status)}</b>"
                       f"{': ' + _e(err) if err else ''}</div>"
                       + _client_traceback(report.run.get("client_error")))
    return (f"<div class='banner {cls}'><div class='word {cls}'>{_e(word)}</div>"
            f"<div class='why'>{why}</div>{coverage_line(report.verdicts)}{bug_line}{status_line}"
            f"<div class='facts'>{_facts(report, config)}</div></div>")


def _client_traceback(client_error: Any) -> str:
    """The last lines of the traceback of a client that raised (run.json `client_error`)."""
    if not isinstance(client_error, dict) or not isinstance(client_error.get("traceback"), list):
        return ""
    return ("<pre class='traceback'>" + _e("\n".join(map(str, client_error["traceback"])))
            + "</pre>")


def _facts(report: RunReport, config: dict[str, Any]) -> str:
    bits = [f"{_e(config.get('db', '?'))} x {_e(config.get('workload', '?'))}"]
    if config.get("nodes") is not None:
        bits.append(f"{_e(config['nodes'])} nodes")
    nemesis = config.get("nemesis")
    if isinstance(nemesis, list):
        bits.append("nemesis " + (_e(",".join(map(str, nemesis))) or "none"))
    if config.get("seed") is not None:
        bits.append(f"seed {_e(config['seed'])}")
    total = sum(sum(c.values()) for c in report.counts.values())
    ok = sum(c.get("ok", 0) for c in report.counts.values())
    bits.append(f"{total} client ops, {ok} ok")
    tl = report.timeline
    if tl is not None:
        bits.append(f"{tl.end / NS:.1f} s of history")
        bits.append(f"{len(tl.faults)} fault{'s' if len(tl.faults) != 1 else ''}")
        missing = never_injected(nemesis if isinstance(nemesis, list) else [],
                                 {w.f for w in tl.faults})
        if missing:
            bits.append(f"<b>never injected: {_e(', '.join(missing))}</b>")
        bits.append(leader_changes_text(tl))
    return " · ".join(bits)


def leader_changes_text(tl: Any) -> str:
    """The header's leader changes, saying where they were seen, and never a
    count the run did not measure."""
    if tl.leader_source is None:
        return "leader changes: not observed (the system reports no leader)"
    changes = sum(1 for c in tl.leaders if not c.first)
    how = " (polled)" if tl.leader_source == "observed" else ""
    return f"{changes} leader change{'s' if changes != 1 else ''}{how}"


def coverage_line(verdicts: dict[str, Any] | None) -> str:
    """verdicts.json's fault coverage line, bold when the faults never touched the leader."""
    cov = (verdicts or {}).get("coverage")
    line = cov.get("line") if isinstance(cov, dict) else None
    if not isinstance(cov, dict) or not isinstance(line, str):
        return ""
    text = f"<b>{_e(line)}</b>" if cov.get("leader_never_hit") else _e(line)
    return f"<div class='why'>{text}</div>"


def never_injected(named: list[Any], drawn: set[str]) -> list[str]:
    """Faults the run names that never acted (none drawn, or only no-ops): the
    verdict does not speak for them. Faults that fire on node events record
    what they fired under its own name (a kill), so only plain kinds are told."""
    from nemesis.base import TRIGGER_FAULTS, split_spec
    return [str(spec) for spec in named
            if split_spec(str(spec))[0] not in TRIGGER_FAULTS
            and split_spec(str(spec))[0] not in drawn]


def _notes(notes: list[str]) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{_e(n)}</li>" for n in notes)
    return f"<ul class='note'>{items}</ul>"


def _checker_map(verdicts: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    checkers = (verdicts or {}).get("checkers")
    if not isinstance(checkers, dict):
        return {}
    return {str(k): v for k, v in checkers.items() if isinstance(v, dict)}


def _checkers(verdicts: dict[str, Any] | None, main: str | None = None) -> str:
    checkers = _checker_map(verdicts)
    if not checkers:
        return ""
    # Problems first: a reader should not scroll past passing checkers to find them.
    rank = {False: 0, "unknown": 1, True: 2}
    order = sorted(checkers, key=lambda n: rank.get(checkers[n].get("valid"), 1))
    rows = []
    for name in order:
        v = checkers[name]
        word, cls = _word(v.get("valid"))
        anomalies = _anomalies(v)
        if anomalies or v.get("valid") is not True:
            summary = (f"<a href='#checker-{_e(name)}'>{_e(_first_line(anomalies))}</a>"
                       if anomalies else _stats_line(v))
        else:
            summary = _stats_line(v) + _all_stats(v)
        rows.append(f"<tr><td><b>{_e(checker_label(name, v, main))}</b></td>"
                    f"<td class='{cls}'><b>{word}</b></td>"
                    f"<td class='n'>{len(anomalies)}</td><td>{summary}</td></tr>")
    table = ("<table class='checkers'><tr><th>checker</th><th>verdict</th><th>anomalies</th>"
             "<th>first anomaly, or what it saw</th></tr>" + "".join(rows) + "</table>")
    details = [_checker_detail(n, checkers[n]) for n in order
               if _anomalies(checkers[n]) or checkers[n].get("valid") is not True]
    return "<h2>Checkers</h2>" + table + _skipped(verdicts) + "".join(details)


def _skipped(verdicts: dict[str, Any] | None) -> str:
    """The checkers that did not run, and why: a missing row must not read as a pass."""
    skipped = (verdicts or {}).get("skipped")
    if not isinstance(skipped, dict) or not skipped:
        return ""
    items = "".join(f"<li><b>{_e(n)}</b>: {_e(why)}</li>" for n, why in skipped.items())
    return (f"<p class='note'>{len(skipped)} checker{'s' if len(skipped) != 1 else ''} "
            f"skipped (not judged, so not passed):</p><ul class='skipped'>{items}</ul>")


def _anomalies(v: dict[str, Any]) -> list[Any]:
    return v["anomalies"] if isinstance(v.get("anomalies"), list) else []


def _stats(v: dict[str, Any]) -> dict[str, Any]:
    return v["stats"] if isinstance(v.get("stats"), dict) else {}


def _stats_line(v: dict[str, Any]) -> str:
    """The checker's scalar stats: what it looked at, in a line."""
    scalars = [(k, s) for k, s in _stats(v).items()
               if isinstance(s, (int, float, str, bool)) or s is None]
    return ("<span class='stats'>" + " · ".join(
        f"{_e(k)} <b>{_e(s)}</b>" for k, s in scalars[:16]) + "</span>")


def _all_stats(v: dict[str, Any]) -> str:
    if not _stats(v):
        return ""
    return (f"<details><summary class='stats'>all stats</summary><pre>"
            f"{_e(compact(_stats(v), STATS_JSON_CHARS))}</pre></details>")


def _first_line(anomalies: list[Any]) -> str:
    if not anomalies:
        return ""
    text = sentence(anomalies[0])
    return text if len(text) <= 140 else text[:139] + "…"


def _checker_detail(name: str, v: dict[str, Any]) -> str:
    word, cls = _word(v.get("valid"))
    anomalies = _anomalies(v)
    out = [f"<div class='checker' id='checker-{_e(name)}'>"
           f"<h3>{_e(name)}: <span class='{cls}'>{word}</span>"
           f"{f' ({len(anomalies)} anomalies)' if anomalies else ''}</h3>"]
    if anomalies:
        items = "".join(f"<li>{_e(sentence(a))}</li>" for a in anomalies[:ANOMALIES_SHOWN])
        out.append(f"<ol>{items}</ol>")
        if len(anomalies) > ANOMALIES_SHOWN:
            out.append(f"<p class='stats'>... and {len(anomalies) - ANOMALIES_SHOWN} more "
                       "in verdicts.json.</p>")
    out.append(_stats_line(v) + _all_stats(v) + "</div>")
    return "".join(out)


# --- the timeline ------------------------------------------------------------------


def _legend(fault_kinds: list[str]) -> str:
    items = [f"<span><i style='background:{OUTCOME_COLOR[o]}'></i>{o}</span>"
             for o in OUTCOMES]
    items += [f"<span><i style='background:{fault_color(f)};opacity:.75'></i>{_e(f)}</span>"
              for f in fault_kinds]
    items += [f"<span><i style='height:2px;background:{PCT_STYLE[p][0]}'></i>"
              f"{PCT_NAME[p]} latency</span>" for p in PERCENTILES]
    items += [f"<span><i style='background:{c};opacity:{NODE_STATE_OPACITY.get(s, 0.6)}'>"
              f"</i>node {_e(s)}</span>" for s, c in NODE_STATE_COLOR.items()]
    items.append("<span>▼ dashed line: new leader (node, epoch)</span>")
    items.append("<span style='color:#cf222e'>✗ red line: an op a checker could not fit "
                 "(click: its counterexample)</span>")
    return "<div class='legend'>" + "".join(items) + "</div>"


def _timeline_section(report: RunReport) -> str:
    if report.timeline is None:
        return "<h2>Timeline</h2><p class='note'>No history to plot.</p>"
    tl = report.timeline
    return ("<h2>Timeline</h2>" + _legend(sorted({w.f for w in tl.faults}))
            + render_timeline(tl)
            + "<p class='stats'>Shaded: a fault in force. Hover a band, bar or marker for "
              "its exact times.</p>" + render_clock_plot(tl) + _fault_list(tl)
            + _leader_list(tl))


def _fault_list(tl: Any) -> str:
    """Every fault in full (the timeline labels what fits, numbered #n)."""
    if not tl.faults:
        return ""
    rows = []
    for i, w in enumerate(sorted(tl.faults, key=lambda w: w.start), 1):
        rows.append(f"<tr id='fault-{i}'><td class='n'>#{i}</td>"
                    f"<td><i style='display:inline-block;width:10px;height:10px;"
                    f"background:{fault_color(w.f)}'></i> {_e(w.label)}</td>"
                    f"<td class='n'>{w.start / NS:.2f}</td><td class='n'>{w.end / NS:.2f}</td>"
                    f"<td class='n'>{(w.end - w.start) / NS:.2f}</td></tr>")
    return ("<details open><summary>Faults in force</summary><table class='faults'><tr>"
            "<th>#</th><th>fault</th><th>from s</th><th>to s</th><th>lasted s</th></tr>"
            + "".join(rows) + "</table></details>")


def _leader_list(tl: Any) -> str:
    if not tl.leaders:
        return ""
    items = ", ".join(f"{_e(leader_label(c))} at {c.time / NS:.2f} s" for c in tl.leaders)
    what = ("Leaders (node, as polled from the system)" if tl.leader_source == "observed"
            else "Leaders (node, epoch)")
    return f"<p class='stats'>{what}: {items}</p>"


# --- op counts, config, files ------------------------------------------------------


def _counts(report: RunReport) -> str:
    if not report.counts:
        return "<h2>Operations</h2><p class='note'>No client operations.</p>"
    head = "".join(f"<th>{o}</th>" for o in OUTCOMES)
    rows = []
    totals = {o: 0 for o in OUTCOMES}
    for f, c in report.counts.items():
        n = sum(c.values())
        for o in OUTCOMES:
            totals[o] += c.get(o, 0)
        rows.append(f"<tr><td>{_e(f)}</td>" + "".join(
            f"<td class='n'>{c.get(o, 0)}</td>" for o in OUTCOMES)
            + f"<td class='n'>{n}</td><td class='n'>{_pct(c.get('ok', 0), n)}</td></tr>")
    n = sum(totals.values())
    rows.append("<tr><th>all</th>" + "".join(f"<th class='n'>{totals[o]}</th>"
                                                for o in OUTCOMES)
                + f"<th class='n'>{n}</th><th class='n'>{_pct(totals['ok'], n)}</th></tr>")
    return ("<h2>Operations</h2><table><tr><th>f</th>" + head
            + "<th>total</th><th>ok %</th></tr>" + "".join(rows) + "</table>"
            "<p class='stats'>ok: happened · refused: certainly did not, the system said "
            "no (a cas whose compare was false) · error: certainly did not, the system could "
            "not serve it (not the leader, never sent) · info: unknown (timeout, crash)</p>")


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.1f}" if n else "-"


def _config(run: dict[str, Any], config: dict[str, Any]) -> str:
    rows = []
    keys = [k for k in CONFIG_FIRST if k in config]
    keys += [k for k in config if k not in CONFIG_FIRST and k not in CONFIG_HIDDEN]
    for k in keys:
        v = config[k]
        cls = " class='bug'" if k == "bugs" and v else ""
        rows.append(f"<tr><th>{_e(k)}</th><td{cls}>{_e(_plain(v))}</td></tr>")
    for k in ("status", "error", "start_wall", "end_wall", "host", "replay_of", "campaign",
              "final_reads", "dump_error", "versions"):
        if k in run:
            rows.append(f"<tr><th>{_e(k)}</th><td>{_e(_plain(run[k]))}</td></tr>")
    if not rows:
        return "<h2>Config</h2><p class='note'>No run.json config.</p>"
    return "<h2>Config</h2><table>" + "".join(rows) + "</table>"


def _plain(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(x, (str, int, float)) for x in v):
        return ", ".join(map(str, v)) if v else "none"
    return compact(v, 600)


def _links(links: list[tuple[str, str]]) -> str:
    if not links:
        return ""
    items = "".join(f"<li><a href='{_e(quote(href))}'>{_e(label)}</a></li>"
                    for href, label in links)
    return f"<h2>Files</h2><ul class='links'>{items}</ul>"
