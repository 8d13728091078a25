"""The reports of an INVALID run rendered by a real headless Chromium (issue 14,
finding 7): the failing op, the node that served it, the fault and node lanes
are in the rendered page, the timeline links to the counterexample, and the
browser logs no script error."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from checkers.history import NEMESIS, Op
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter
from harness.run.lifecycle import judge

S = 1_000_000_000
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium "
                                 "(scripts/setup.sh installs it as root)")]


def invalid_run(tmp_path: Path) -> Path:
    """A 3-node register run: n2 killed 1-3 s, n1 cut off 4-6 s, and at 5 s a read
    served by n1 returns the value overwritten at 4.5 s: not linearizable."""
    ops: list[tuple[int, object, str, str, object, str | None]] = [
        (int(0.1 * S), 0, "invoke", "write", 1, "n1"), (int(0.2 * S), 0, "ok", "write", 1, "n1"),
        (int(1.0 * S), NEMESIS, "invoke", "kill", {"nodes": ["n2"]}, None),
        (int(1.01 * S), NEMESIS, "info", "kill", {"nodes": ["n2"], "killed": ["n2"]}, None),
        (int(3.0 * S), NEMESIS, "invoke", "start", None, None),
        (int(3.01 * S), NEMESIS, "info", "start", {"nodes": ["n2"]}, None),
        (int(4.0 * S), NEMESIS, "invoke", "partition", {"shape": "isolate-one",
                                                        "nodes": ["n1"]}, None),
        (int(4.01 * S), NEMESIS, "info", "partition", {
            "shape": "isolate-one", "nodes": ["n1"],
            "cut": [["n1", "n2"], ["n1", "n3"], ["n2", "n1"], ["n3", "n1"]]}, None),
        (int(4.5 * S), 1, "invoke", "write", 2, "n3"), (int(4.6 * S), 1, "ok", "write", 2, "n3"),
        (int(5.0 * S), 2, "invoke", "read", None, "n1"), (int(5.1 * S), 2, "ok", "read", 1, "n1"),
        (int(6.0 * S), NEMESIS, "invoke", "heal", None, None),
        (int(6.01 * S), NEMESIS, "info", "heal", {"healed": []}, None),
        (int(7.0 * S), 0, "invoke", "read", None, "n2"), (int(7.1 * S), 0, "ok", "read", 2, "n2"),
    ]
    run_dir = create_run_dir(tmp_path)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for i, (t, p, typ, f, v, node) in enumerate(ops):
            w.append(Op(i, t, p, typ, f, v, None, node))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "nodes": {n: {} for n in ("n1", "n2", "n3")},
        "config": {"db": "raft", "workload": "register", "nodes": 3,
                   "nemesis": ["kill", "partition"], "time_limit": 7.0}}))
    return run_dir


class Elements(HTMLParser):
    """(tag, attributes, text inside) of every element of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[int] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict((k, v or "") for k, v in attrs), []))
        self._open.append(len(self.found) - 1)

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()

    def handle_data(self, data):
        for i in self._open:
            self.found[i][2].append(data)

    def with_class(self, cls: str) -> list[tuple[str, dict[str, str], str]]:
        return [(t, a, "".join(text)) for t, a, text in self.found
                if cls in a.get("class", "").split()]


def render(page: Path, tmp_path: Path) -> tuple[Elements, str]:
    """The DOM Chromium built from the page, and what its console said."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Elements()
    dom.feed(done.stdout)
    shot = tmp_path / f"{page.stem}.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 0        # it also paints (a smoke check)
    return dom, done.stderr


def console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if "CONSOLE" in line or "Uncaught" in line or "SyntaxError" in line]


def test_chromium_renders_the_invalid_runs_reports(tmp_path: Path) -> None:
    run_dir = invalid_run(tmp_path)
    verdicts = judge(run_dir)
    assert verdicts["valid"] is False
    assert verdicts["checkers"]["linearizability"]["valid"] is False

    report, log = render(run_dir / "report.html", tmp_path)
    assert console_errors(log) == []
    words = [text for _, _, text in report.with_class("word")]
    assert words == ["INVALID"]
    # Fault lanes: the kill and the partition, each with its full label somewhere.
    faults = report.with_class("fault")
    assert len(faults) == 2
    table = " ".join(t for _, _, t in report.with_class("faults"))
    assert "kill n2" in table and "partition: cut n1-n2, n1-n3 (isolate-one)" in table
    # Node lanes: n2 down, n1 cut off from a majority; n2 and n3 each lost their
    # link to n1 but still reach a majority.
    states = {(a["data-node"], a["data-state"]) for _, a, _ in report.with_class("nodestate")}
    assert states == {("n2", "down"), ("n1", "cut off"), ("n2", "links cut"),
                      ("n3", "links cut")}
    # The failing op on the timeline, linked to its counterexample.
    (failing,) = report.with_class("failing")
    assert failing[1]["href"] == "linearizability.html#failure"
    assert "read" in failing[2]

    lin, log = render(run_dir / "linearizability.html", tmp_path)
    assert console_errors(log) == []
    ids = {a.get("id") for _, a, _ in lin.found}
    assert "failure" in ids                          # the anchor the timeline links to
    (op,) = lin.with_class("failing-op")
    assert op[2] == "read -> 1"
    (served,) = lin.with_class("served-by")
    assert served[2] == "n1"
    fault_labels = " ".join(t for _, _, t in lin.with_class("fault"))
    assert "partition: cut n1-n2, n1-n3 (isolate-one)" in fault_labels
    assert any(tag == "text" and "".join(text) == "seconds"
               for tag, _, text in lin.found)                  # a time axis


def test_the_console_check_sees_a_script_error(tmp_path: Path) -> None:
    """The "no script errors" check above can fail: a page with one fails it."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><p class='x'>hi</p><script>undefined_fn()</script></body></html>")
    _, log = render(bad, tmp_path)
    assert any("undefined_fn" in line for line in console_errors(log))


# Reads, in the rendered page, how a leader label is drawn: its opacity with
# every ancestor's, and the dash pattern of its stroke.
PROBE = """<script>
const t = document.querySelector('g.leaderchange text');
let opacity = 1;
for (let e = t; e && e.nodeType === 1; e = e.parentElement)
  opacity *= parseFloat(getComputedStyle(e).opacity);
document.body.setAttribute('data-probe', JSON.stringify(
  {opacity: opacity, dash: getComputedStyle(t).strokeDasharray, text: t.textContent}));
</script></body>"""


def probe(page: Path, tmp_path: Path, extra_css: str = "") -> dict:
    probed = page.with_name(f"probe{len(extra_css)}.html")
    html = page.read_text().replace("</body>", PROBE)
    probed.write_text(html.replace("</style>", extra_css + "</style>", 1))
    dom, _ = render(probed, tmp_path)
    (body,) = [a for tag, a, _ in dom.found if tag == "body"]
    return json.loads(body["data-probe"])


def test_a_bridge_reads_as_its_cut_links_and_leader_labels_are_solid(tmp_path: Path) -> None:
    """Issue 28, findings 11 and 12: a bridge (n3 in the middle, n1-n2 cut) is
    labelled by its cut link in the lane and the hover, the lanes of n1 and n2
    show the cut; the leader labels are drawn solid, not faint and dashed."""
    from harness.report.page import write_report
    from tests.harness.test_report import RunDir, leader, run_json
    rd = RunDir(tmp_path / "bridge")
    rd.client_ops(0.0, 10.0)
    rd.fault(2.0, "partition", {"shape": "bridge", "nodes": ["n3"],
                                "cut": [["n1", "n2"], ["n2", "n1"]]}, 6.0, "heal")
    rd.write_history()
    rd.write_json("run.json", {**run_json(), "nodes": {n: {} for n in ("n1", "n2", "n3")}})
    rd.node_events("n1", [leader(0.5, 1)])
    rd.node_events("n2", [leader(4.0, 2)])
    page = write_report(rd.path)

    dom, log = render(page, tmp_path)
    assert console_errors(log) == []
    (fault,) = dom.with_class("fault")
    assert "partition: cut n1-n2 (bridge)" in fault[2]       # lane label and hover
    states = {(a["data-node"], a["data-state"]) for _, a, _ in dom.with_class("nodestate")}
    assert states == {("n1", "links cut"), ("n2", "links cut")}
    hovers = " ".join(t for _, _, t in dom.with_class("nodestate"))
    assert "its links cut: n1-n2" in hovers and "partition(n3)" not in hovers

    drawn = probe(page, tmp_path)
    assert drawn["text"] and drawn["opacity"] == 1 and drawn["dash"] == "none"
    # Its twin: a rule that hits the label's group as the old `.leader` did is seen.
    old = probe(page, tmp_path, "svg .leaderchange{stroke:#24292f;stroke-dasharray:2 3;"
                "opacity:.55}")
    assert old["opacity"] < 0.6 and old["dash"] != "none"
