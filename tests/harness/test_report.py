"""report.html: rendered from small hand-made run dirs. The page must say the
verdict, explain the anomalies, show the faults and leader changes, survive
missing or broken pieces, escape what came from the run, and stay small for
big histories."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from checkers.anomaly_text import sentence as explain
from checkers.history import Op, pack_op
from harness.cli import main as cli_main
from harness.report.data import bin_width_ns, fault_label, timeline
from harness.report.page import write_report

S = 1_000_000_000
START = 5 * 10**12  # CLOCK_MONOTONIC at history time 0


class RunDir:
    """A run dir written piece by piece, as a run (or an import) would."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ops: list[Op] = []
        path.mkdir(parents=True, exist_ok=True)

    def op(self, t_s: float, process: Any, typ: str, f: str, value: Any = None) -> None:
        self.ops.append(Op(len(self.ops), int(t_s * S), process, typ, f, value))

    def client_ops(self, from_s: float, to_s: float, every_s: float = 0.1,
                   outcome: str = "ok") -> None:
        for i in range(round((to_s - from_s) / every_s)):
            t = from_s + i * every_s
            self.op(t, 0, "invoke", "write", 1)
            self.op(t + 0.005, 0, outcome, "write", 1)

    def fault(self, t_s: float, f: str, value: Any, heal_s: float, heal_f: str) -> None:
        self.op(t_s, "nemesis", "invoke", f, value)
        self.op(t_s + 0.01, "nemesis", "info", f, value)
        self.op(heal_s, "nemesis", "invoke", heal_f, None)
        self.op(heal_s + 0.01, "nemesis", "info", heal_f, value)

    def write_history(self) -> None:
        self.ops.sort(key=lambda o: o.time)
        for i, o in enumerate(self.ops):
            o.index = i
        (self.path / "history.msgpack").write_bytes(b"".join(pack_op(o) for o in self.ops))

    def write_json(self, name: str, doc: Any) -> None:
        if name == "verdicts.json":
            # Bound to the history written so far, as a real check would be.
            from checkers.verdict_store import write_verdicts
            write_verdicts(self.path, doc)
            return
        (self.path / name).write_text(json.dumps(doc))

    def node_events(self, node: str, events: list[dict[str, Any]]) -> None:
        d = self.path / "nodes" / node
        d.mkdir(parents=True, exist_ok=True)
        lines = ["not json: starting up"] + [json.dumps({"node": node, **e}) for e in events]
        (d / "stdout.log").write_text("\n".join(lines) + "\n")


def run_json(**config: Any) -> dict[str, Any]:
    base = {"db": "raft", "workload": "register", "nodes": 3,
            "nemesis": ["kill", "partition"], "seed": 42, "time_limit": 10.0, "bugs": []}
    return {"run_id": "20250101T000000.000000Z-abcdef", "config": {**base, **config},
            "status": "complete", "start_monotonic_ns": START, "schedule_offset_ns": 0}


def leader(t_s: float, epoch: int) -> dict[str, Any]:
    return {"t": START + int(t_s * S), "event": "role", "role": "Leader", "epoch": epoch,
            "leader": None}


NONLIN = {"type": "nonlinearizable", "key": None, "model": "cas-register",
          "linearized_count": 17, "state": 3,
          "op": {"process": 4, "what": "read -> 5", "type": "ok", "index": 99,
                 "invoke_time": 1, "complete_time": 2},
          "linearized": [], "concurrent": []}


def invalid_run(tmp_path: Path) -> RunDir:
    rd = RunDir(tmp_path / "run")
    rd.client_ops(0.0, 12.0)
    rd.client_ops(3.0, 5.0, outcome="fail")
    rd.fault(2.0, "kill", {"targets": "leader", "nodes": ["n3"]}, 5.0, "start")
    rd.fault(6.0, "partition", {"shape": "isolate-leader", "nodes": ["n1"]}, 8.0, "heal")
    rd.write_history()
    rd.write_json("run.json", run_json(bugs=["truncate-to-hw"]))
    rd.write_json("verdicts.json", {"valid": False, "checkers": {
        "stats": {"valid": True, "anomalies": [], "stats": {"ops": 300}},
        "linearizability": {"valid": False, "anomalies": [NONLIN], "stats": {"keys": 1}},
        "divergence": {"valid": False, "anomalies": [
            {"type": "divergence", "why": "committed", "nodes": ["n1", "n2"],
             "offsets": [1045, 1049], "count": 5,
             "sides": {"n1": {"epochs": [1]}, "n2": {"epochs": [3]}}}],
            "stats": {}},
        "elle": {"valid": "unknown", "anomalies": [
            {"type": "cycle-search-timeout",
             "explanation": "The cycle search used up its 10 s budget."}], "stats": {}},
    }})
    (rd.path / "linearizability.html").write_text("<html></html>")
    rd.node_events("n3", [leader(-0.5, 1)])
    rd.node_events("n2", [{"t": START + 2 * S, "event": "role", "role": "Follower",
                           "epoch": 2, "leader": "n2"}, leader(2.4, 2)])
    return rd


def test_invalid_run_says_so_and_explains(tmp_path: Path) -> None:
    rd = invalid_run(tmp_path)
    page = write_report(rd.path).read_text()
    assert "class='word invalid'>INVALID" in page
    banner = page[page.index("class='banner"):page.index("<h2>Checkers")]
    assert "INVALID" in banner
    assert "2 of 4 checkers found anomalies" in banner
    assert "truncate-to-hw" in banner  # bug switches are in the headline
    # The anomalies, explained: own explanation, the lin reading, a compact one.
    assert "The cycle search used up its 10 s budget." in page
    assert "read -&gt; 5" in page and "history index 99" in page
    assert "Replicas n1 and n2 disagree" in page and "offsets 1045..1049" in page
    # Problems are listed before passing checkers.
    assert page.index("<b>linearizability</b>") < page.index("<b>stats</b>")
    assert page.index("<b>elle</b>") < page.index("<b>stats</b>")


def test_losses_a_write_level_allows_are_counted_in_the_report_not_flagged(
        tmp_path: Path) -> None:
    # The Redpanda RFC's leader_ack / no_ack: lost writes counted, run VALID.
    from checkers import durability
    from checkers.datatypes import REGISTERS
    from tests.checkers.test_durability import entry, log_dump, put, relaxed_history
    v = durability.check(relaxed_history().ops,
                         log_dump(entry(0, put(1)), entry(1, put(2))), REGISTERS)
    rd = RunDir(tmp_path / "run")
    rd.client_ops(0.0, 2.0)
    rd.write_history()
    rd.write_json("run.json", run_json())
    rd.write_json("verdicts.json", {"valid": True, "checkers": {"durability": v}})
    page = write_report(rd.path).read_text()
    assert "class='word valid'>VALID" in page
    row = page[page.index("<b>durability</b>"):]
    row = row[:row.index("</tr>")]
    assert "relaxed_acks_lost <b>3</b>" in row
    assert "&quot;leader&quot;: {&quot;acked&quot;: 2, &quot;lost&quot;: 1}" in row


def test_timeline_shows_faults_and_leader_changes(tmp_path: Path) -> None:
    page = write_report(invalid_run(tmp_path).path).read_text()
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert ">kill n3<" in svg
    assert "partition isolate-leader n1" in svg
    assert "kill n3: 2.00 s -&gt; 5.01 s" in svg  # inject .. heal completed
    assert "leader at start: n3, epoch 1" in svg
    assert "new leader: n2, epoch 2, at 2.40 s" in svg
    assert "1 leader change" in page
    assert "workload ends" in svg  # time_limit 10 s < history end 12 s


def test_counts_config_and_links(tmp_path: Path) -> None:
    page = write_report(invalid_run(tmp_path).path).read_text()
    counts = page[page.index("<h2>Operations"):page.index("<h2>Config")]
    # ok, refused, error (a write that failed with no refusal), info, total
    assert re.search(r"<td>write</td><td class='n'>120</td><td class='n'>0</td>"
                     r"<td class='n'>20</td><td class='n'>0</td><td class='n'>140</td>", counts)
    config = page[page.index("<h2>Config"):]
    assert "<th>seed</th><td>42</td>" in config
    assert "<th>time_limit</th><td>10.0</td>" in config
    for href in ("linearizability.html", "history.msgpack", "run.json", "verdicts.json",
                 "nodes/n2/stdout.log"):
        assert f"href='{href}'" in page


def test_page_is_self_contained(tmp_path: Path) -> None:
    page = write_report(invalid_run(tmp_path).path).read_text()
    for external in ("<script", "<link", " src=", "url(", "@import", "https://"):
        assert external not in page


def test_untrusted_run_data_is_escaped(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    rd = RunDir(tmp_path / "run")
    rd.client_ops(0.0, 1.0)
    rd.ops.append(Op(0, int(0.5 * S), 7, "invoke", evil, evil))
    rd.ops.append(Op(0, int(0.6 * S), 7, "ok", evil, evil))
    rd.fault(0.2, evil, {"nodes": [evil], "shape": evil}, 0.4, "heal")
    rd.write_history()
    rd.write_json("run.json", run_json(db=evil, bugs=[evil]))
    rd.write_json("verdicts.json", {"valid": False, "checkers": {
        evil: {"valid": False, "anomalies": [{"type": evil, "explanation": evil}],
               "stats": {evil: evil}}}})
    rd.node_events(evil.replace("/", ""), [leader(0.3, 1) | {"node": evil}])
    page = write_report(rd.path).read_text()
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_missing_pieces_are_noted_not_fatal(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "imported")
    rd.client_ops(0.0, 2.0)
    rd.write_history()
    page = write_report(rd.path).read_text()
    assert "NOT CHECKED" in page
    assert "run.json is missing" in page and "the run has no verdicts.json" in page
    assert "imported" in page  # the dir name stands in for the run id

    empty = tmp_path / "empty"
    empty.mkdir()
    page = write_report(empty).read_text()
    assert "history.msgpack is missing" in page and "No history to plot" in page


def test_torn_and_corrupt_history_keep_what_was_read(tmp_path: Path) -> None:
    rd = invalid_run(tmp_path)
    hist = rd.path / "history.msgpack"
    data = hist.read_bytes()
    hist.write_bytes(data + pack_op(Op(len(rd.ops), 13 * S, 0, "invoke", "read"))[:5])
    page = write_report(rd.path).read_text()
    # The verdicts judged the history before its tail was torn: not this history's.
    assert "torn tail" in page and "judged another history" in page
    assert "class='word invalid'>INVALID" not in page
    (rd.path / "run.json").write_text("{not json")
    hist.write_bytes(data[:2000] + b"\xc1" + data[2000:])
    page = write_report(rd.path).read_text()
    assert "history read stopped after" in page and "not valid JSON" in page
    assert "<svg" in page


def test_big_history_is_binned(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "big")
    for i in range(100_000):  # 200k ops over 1000 s
        t = i * 0.01
        rd.ops.append(Op(0, int(t * S), i % 8, "invoke", "read"))
        rd.ops.append(Op(0, int((t + 0.003) * S), i % 8, "ok" if i % 7 else "info", "read"))
    rd.fault(100.0, "pause", {"nodes": ["n2"]}, 160.0, "resume")
    rd.write_history()
    rd.write_json("run.json", run_json(time_limit=1000.0))
    # Judged on size, not on wall-clock time (a loaded machine flaked a
    # 20 s limit): binned, the page does not grow with the op count.
    page = write_report(rd.path).read_text()
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<") < 600  # elements per bin and per fault, not per op
    assert len(page) < 200_000
    assert "pause n2" in svg


def test_bins_and_labels() -> None:
    assert bin_width_ns(20 * S) == int(0.1 * S)
    assert bin_width_ns(3600 * S) == 30 * S
    assert fault_label("partition", {"shape": "one-way", "nodes": ["n1"],
                                     "receivers": ["n2", "n3"]}) == \
        "partition one-way n1 -> n2 n3"
    assert fault_label("kill", None) == "kill"
    tl = timeline([Op(0, 0, 1, "invoke", "read"), Op(1, 2 * S, 1, "ok", "read", 1)], {}, {})
    assert tl.counts["ok"][-1] == 1 and tl.latency_ms[50][-1] == 2000.0


def test_explain_falls_back_to_fields() -> None:
    assert explain({"type": "lost-write", "value": 7, "ack": {"f": "write", "value": 7,
                                                           "process": 2, "index": 9}}) == \
        "Lost write: 7 was acknowledged (write 7 by process 2 (history index 9)) but is " \
        "in no final read or replica log."
    # A known type in an unexpected shape is still shown, field by field.
    assert explain({"type": "divergence", "offsets": 3}) == "A divergence anomaly: offsets 3."
    assert explain({"odd": [1]}) == "An anomaly of no named kind: odd [1]."
    assert explain({"type": "unavailable", "start_s": 1.0, "end_s": 4.0, "duration_s": 3.0,
                    "limit_s": 2, "faults": [{"f": "kill"}]}).startswith(
        "No op succeeded for 3.0 s, from 1.0 s to 4.0 s")
    assert len(explain({"type": "x", "blob": "y" * 10_000})) <= 400


def test_report_command(tmp_path: Path, capsys: Any) -> None:
    rd = invalid_run(tmp_path)
    assert cli_main(["report", str(rd.path)]) == 0
    assert (rd.path / "report.html").is_file()
    assert str(rd.path / "report.html") in capsys.readouterr().out
    assert cli_main(["report", str(tmp_path / "nope")]) == 254


def test_garbage_run_json_or_history_never_shows_the_old_verdict(tmp_path: Path,
                                                                  capsys: Any) -> None:
    """Finding 5: an old VALID must not survive the run dir's files being replaced."""
    rd = invalid_run(tmp_path)
    (rd.path / "run.json").write_text("{not json")
    assert cli_main(["report", str(rd.path)]) == 254
    assert "not a usable run dir" in capsys.readouterr().err
    rd.write_json("run.json", run_json())
    (rd.path / "history.msgpack").write_bytes(b"\x93garbage")
    page = write_report(rd.path).read_text()
    assert "judged another history" in page and "faultline check --in-process" in page
    assert "class='word invalid'>INVALID" not in page


def test_lin_view_names_the_register_and_draws_each_op_once() -> None:
    from checkers.lin_report import render_html
    both = {"process": 2, "what": "write 3", "type": "info", "index": 7,
            "invoke_time": 1, "complete_time": None}
    failing = dict(NONLIN["op"], invoke_time=5, complete_time=6)
    page = render_html({"valid": False, "stats": {}, "anomalies": [
        dict(NONLIN, op=failing, linearized=[both], concurrent=[both])]})
    assert "the register: the op in red cannot be linearized" in page
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("write 3 [info] index 7") == 1


def test_an_already_loaded_run_is_not_read_again(tmp_path: Path) -> None:
    from checkers.rundir import load_run
    rd = invalid_run(tmp_path)
    loaded = load_run(rd.path)
    (rd.path / "history.msgpack").write_bytes(b"")  # would plot nothing if re-read
    page = write_report(rd.path, loaded).read_text()
    assert ">kill n3<" in page and "new leader: n2" in page


def test_leader_labels_never_overlap_and_fault_labels_are_never_cut() -> None:
    """Finding 7: "n3 e2" printed under "n1 e1"; "partition…" cut mid-word."""
    from harness.report.data import LeaderChange
    from harness.report.svg import _X, CHAR_W, fit_label, leader_label, leader_label_rows
    x = _X(10 * S)
    leaders = [LeaderChange(0, "n1", 1, True), LeaderChange(int(0.05 * S), "n3", 2, False),
               LeaderChange(int(0.1 * S), "n2", 3, False), LeaderChange(5 * S, "n1", 4, False)]
    rows = leader_label_rows(leaders, x)
    assert rows == [0, 1, None, 0]
    spans: dict[int, list[tuple[float, float]]] = {0: [], 1: []}
    for c, r in zip(leaders, rows, strict=True):
        if r is not None:
            start = x(c.time) + 7
            spans[r].append((start, start + len(leader_label(c)) * CHAR_W))
    for row in spans.values():
        assert all(a[1] <= b[0] for a, b in zip(row, row[1:], strict=False))
    assert fit_label("partition isolate-one n1", 3, 400) == "partition isolate-one n1"
    assert fit_label("partition isolate-one n1", 3, 30) == "#3"
    assert fit_label("partition isolate-one n1", 3, 8) == ""
    # A partition named by its cut: the lane says "partition", the bar the links.
    label = "partition: cut n1-n2 (bridge)"
    assert fit_label(label, 2, 400) == label
    assert fit_label(label, 2, len("cut n1-n2 (bridge)") * 7 + 6) == "cut n1-n2 (bridge)"
    assert fit_label(label, 2, len("cut n1-n2") * 7 + 6) == "cut n1-n2"
    assert fit_label(label, 2, 30) == "#2"


def test_node_lanes_show_down_paused_and_cut_off() -> None:
    from harness.report.data import cut_off
    nodes = ["n1", "n2", "n3", "n4", "n5"]
    halves = [[a, b] for a in ("n1", "n2") for b in ("n3", "n4", "n5")]
    halves += [[b, a] for a, b in halves]
    assert cut_off(halves, nodes) == {"n1": ["n3", "n4", "n5"], "n2": ["n3", "n4", "n5"]}
    assert cut_off([], nodes) == {}
    rd_ops = [Op(0, 0, 0, "invoke", "read"), Op(1, 1, 0, "ok", "read", 1),
              Op(2, 1 * S, "nemesis", "invoke", "pause", {"nodes": ["n2"]}),
              Op(3, 1 * S + 1, "nemesis", "info", "pause", {"nodes": ["n2"], "paused": ["n2"]}),
              Op(4, 2 * S, "nemesis", "invoke", "resume", None),
              Op(5, 2 * S + 1, "nemesis", "info", "resume", {"nodes": ["n2"]}),
              Op(6, 3 * S, 0, "invoke", "read"), Op(7, 3 * S + 1, 0, "ok", "read", 1)]
    tl = timeline(rd_ops, {}, {"config": {"nodes": 3}})
    assert tl.nodes == ["n1", "n2", "n3"]
    assert [(s.node, s.state) for s in tl.node_spans] == [("n2", "paused")]


def test_a_recheck_remakes_the_pages_so_they_show_the_verdict_that_stands(
        tmp_path: Path, capsys: Any) -> None:
    """Finding 4 and 5: report.html was written once, at the end of a run. A
    re-check (of an interrupted run, or of a history that changed) left the
    old page showing the old verdict, or no page at all."""
    rd = RunDir(tmp_path / "run")
    rd.client_ops(0.0, 2.0)
    rd.op(2.5, 1, "invoke", "write", 2)
    rd.op(2.6, 1, "ok", "write", 2)
    rd.op(3.0, 0, "invoke", "read")
    rd.op(3.1, 0, "ok", "read", 1)          # reads the value 2 had overwritten
    rd.write_history()
    rd.write_json("run.json", run_json())
    rd.write_json("verdicts.json", {"valid": True, "checkers": {
        "stats": {"valid": True, "anomalies": [], "stats": {}}}})
    write_report(rd.path)
    assert "class='word valid'>VALID" in (rd.path / "report.html").read_text()
    assert cli_main(["check", "--in-process", str(rd.path)]) == 1
    capsys.readouterr()
    page = (rd.path / "report.html").read_text()
    assert "class='word invalid'>INVALID" in page
    assert "class='word valid'>VALID" not in page
    assert "read -&gt; 1" in (rd.path / "linearizability.html").read_text()
