"""The browser's HTML, rendered on the server from the catalog, the trend and
the diff; every value from a run dir is escaped. No script, no CDN."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from harness.browser.catalog import FILTERS, Campaign, verdict_of_entry
from harness.browser.diff import Row
from harness.browser.trend import Night
from harness.results.store import RunSummary

STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4} .valid{color:#176d1f} .invalid{color:#b00020;font-weight:bold}
.unknown{color:#8a6d00} .changed td,.only-a td,.only-b td{background:#fff4e0}
.bar{display:inline-block;height:.8em;background:#b00020;vertical-align:middle}
.bar.empty{background:#ddd} code{font-size:13px} form label{margin-right:1em}
"""


def page(title: str, body: str) -> str:
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{escape(title)} - faultline</title><style>{STYLE}</style></head>"
            f"<body><p><a href='/'>faultline results</a></p><h1>{escape(title)}</h1>"
            f"{body}</body></html>")


def verdict_cell(word: str) -> str:
    return f"<td class='verdict {escape(word)}'>{escape(word)}</td>"


def run_link(run_id: str, file: str = "report.html") -> str:
    return f"/run/{quote(run_id)}/{quote(file)}"


def _table(head: list[str], rows: list[str], cls: str) -> str:
    return (f"<table class='{cls}'><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head)
            + "</tr>" + "".join(rows) + "</table>")


def campaigns_table(campaigns: list[Campaign]) -> str:
    if not campaigns:
        return "<p>No campaigns.</p>"
    rows = [f"<tr class='campaign'><td><a class='campaign-link' href='/campaign/{quote(c.id)}'>"
            f"{escape(c.name)}</a></td><td><code>{escape(c.id)}</code></td>"
            f"<td>{escape(c.created[:19])}</td><td>{len(c.entries)}</td>"
            f"<td>{c.count('invalid')}</td><td>{c.count('unknown')}</td></tr>"
            for c in campaigns]
    return _table(["campaign", "id", "created", "runs", "invalid", "unknown"], rows,
                  "campaigns")


def filter_form(filters: dict[str, str], choices: dict[str, list[str]]) -> str:
    fields = []
    for key, label in FILTERS.items():
        options = "".join(
            f"<option{' selected' if filters.get(key) == v else ''}>{escape(v)}</option>"
            for v in choices.get(key, []))
        fields.append(f"<label>{escape(label)} <select name='{key}'><option value=''>any"
                      f"</option>{options}</select></label>")
    return f"<form class='filters' method='get' action='/'>{''.join(fields)}" \
           "<button>filter</button></form>"


def runs_table(runs: list[RunSummary]) -> str:
    """The runs, each with its report, its counterexample when invalid, and a
    pick for each side of a diff."""
    if not runs:
        return "<p>No runs match.</p>"
    rows = []
    for r in runs:
        links = f"<a class='report-link' href='{run_link(r.run_id)}'>report</a>"
        if r.verdict == "invalid" and (r.path / "linearizability.html").is_file():
            links += (f" <a class='counterexample-link' "
                      f"href='{run_link(r.run_id, 'linearizability.html')}#failure'>"
                      "counterexample</a>")
        rid = escape(r.run_id)
        rows.append(
            f"<tr class='run' data-run='{rid}'><td><input type='radio' name='a' value='{rid}'>"
            f"<input type='radio' name='b' value='{rid}'></td><td><code>{rid}</code></td>"
            f"<td>{escape(r.db or '?')}</td><td>{escape(r.workload or '?')}</td>"
            f"<td>{escape(r.nemesis or '?')}</td><td>{escape(','.join(r.bugs) or '-')}</td>"
            f"<td>{escape(str(r.seed) if r.seed is not None else '?')}</td>"
            f"{verdict_cell(r.verdict)}<td>{links}</td></tr>")
    return ("<form method='get' action='/diff'>"
            + _table(["a / b", "run", "system", "workload", "nemesis", "switches", "seed",
                      "verdict", ""], rows, "runs")
            + "<button class='diff-button'>compare a and b</button></form>")


def index_page(campaigns: list[Campaign], runs: list[RunSummary], filters: dict[str, str],
               choices: dict[str, list[str]], total: int) -> str:
    shown = f"{len(runs)} of {total} runs" if len(runs) != total else f"{total} runs"
    return page("faultline results", "<h2>Campaigns</h2>" + campaigns_table(campaigns)
                + f"<h2>Runs ({shown})</h2>" + filter_form(filters, choices) + runs_table(runs))


def _bar(caught: int, runs: int) -> str:
    width = int(round(100 * caught / runs)) if runs else 0
    return (f"<span class='bar' style='width:{width}px'></span>"
            f"<span class='bar empty' style='width:{100 - width}px'></span> {caught}/{runs}")


def trend_table(nights: list[Night]) -> str:
    """One row per night (campaign of that name), oldest first."""
    if not nights:
        return ("<p>No night of this campaign is in the dataset yet (a campaign is "
                "published when its Spark check ends).</p>")
    switches = sorted({s for n in nights for s in n.detection})
    systems = sorted({s for n in nights for s in n.invalid_by_system})
    head = (["night", "campaign", "runs", "invalid", "p99 latency"]
            + [f"caught: {s}" for s in switches] + [f"invalid: {s}" for s in systems])
    rows = []
    for n in nights:
        p99 = f"{n.p99_ms:.1f} ms" if n.p99_ms is not None else "-"
        cells = [escape(n.date), f"<a href='/campaign/{quote(n.campaign)}'><code>"
                 f"{escape(n.campaign)}</code></a>", str(n.runs), str(n.invalid), p99]
        cells += [_bar(*n.detection[s]) if s in n.detection else "-" for s in switches]
        cells += [_bar(*n.invalid_by_system[s]) if s in n.invalid_by_system else "-"
                  for s in systems]
        rows.append("<tr class='night'>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return _table(head, rows, "trend")


def campaign_page(c: Campaign, runs: dict[str, RunSummary], nights: list[Night]) -> str:
    rows = []
    for e in c.entries:
        rid = e.get("run_id")
        word = verdict_of_entry(e)
        run = runs.get(rid) if isinstance(rid, str) else None
        links = ""
        if run is not None:
            links = f"<a class='report-link' href='{run_link(run.run_id)}'>report</a>"
            if word == "invalid" and (run.path / "linearizability.html").is_file():
                links += (f" <a class='counterexample-link' "
                          f"href='{run_link(run.run_id, 'linearizability.html')}#failure'>"
                          "counterexample</a>")
        rows.append(f"<tr class='entry'><td>{escape(str(e.get('label') or ''))}</td>"
                    f"<td><code>{escape(str(rid or '-'))}</code></td>{verdict_cell(word)}"
                    f"<td>{links}</td></tr>")
    body = (f"<p><code>{escape(c.id)}</code>, created {escape(c.created[:19])}, "
            f"{len(c.entries)} runs: {c.count('invalid')} invalid, "
            f"{c.count('unknown')} unknown.</p><h2>Trend over nights of "
            f"&ldquo;{escape(c.name)}&rdquo;</h2>" + trend_table(nights)
            + "<h2>Runs</h2>" + _table(["label", "run", "verdict", ""], rows, "entries"))
    return page(f"campaign {c.name}", body)


def diff_page(a: str, b: str, config: list[tuple[str, str, str]], schedule: list[Row],
              verdicts: list[tuple[str, str, str, bool]]) -> str:
    links = (f"<p>a: <a href='{run_link(a)}'><code>{escape(a)}</code></a> &nbsp; "
             f"b: <a href='{run_link(b)}'><code>{escape(b)}</code></a></p>")
    conf = (_table(["config", "a", "b"], [
        f"<tr class='changed'><td>{escape(k)}</td><td><code>{escape(x)}</code></td>"
        f"<td><code>{escape(y)}</code></td></tr>" for k, x, y in config], "config-diff")
        if config else "<p class='same-config'>Same config.</p>")
    sched = _table(["a's schedule", "b's schedule"], [
        f"<tr class='{r.tag}'><td><code>{escape(r.a)}</code></td><td><code>{escape(r.b)}"
        "</code></td></tr>" for r in schedule], "schedule-diff") if schedule else \
        "<p>Neither run executed a fault.</p>"
    verd = _table(["checker", "a", "b"], [
        f"<tr class='{'changed' if d else 'same'}'><td>{escape(n)}</td><td>{escape(x)}</td>"
        f"<td>{escape(y)}</td></tr>" for n, x, y, d in verdicts], "verdict-diff")
    return page("two runs side by side", links + "<h2>Config</h2>" + conf
                + "<h2>Verdicts</h2>" + verd + "<h2>Schedule as executed</h2>" + sched)

