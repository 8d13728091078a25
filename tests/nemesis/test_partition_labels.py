"""Issue 28, finding 11: a partition is named by the links it cut, not by the
node its shape centres on. A bridge on n1 n2 n3 with n3 in the middle cut
n1-n2, yet read "partition(n3)" in the live line, the report's lane and
hover, and its node lanes showed nothing. Now the live line, run.json's
executed schedule and the report all say "partition: cut n1-n2 (bridge)", the
hover lists the cut links, and the lanes of n1 and n2 show their lost link."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from checkers.history import Op
from harness.report.data import LINKS_CUT_STATE, node_spans, timeline
from harness.report.page import write_report
from harness.run.lifecycle import active_faults
from harness.run.progress import status_line
from nemesis.base import CompositeNemesis, NemesisRunner
from nemesis.label import fault_label, links, links_text
from nemesis.partition import PartitionFault, both_ways, plan_shape
from nemesis.schedule import Event
from tests.harness.test_report import RunDir, run_json
from tests.nemesis.test_noop_faults import FakeCluster

BRIDGE_3 = {"shape": "bridge", "nodes": ["n3"], "cut": [["n1", "n2"], ["n2", "n1"]]}


def test_links_pair_up_both_ways_and_keep_one_way_arrows() -> None:
    assert links([["n2", "n1"], ["n1", "n2"]]) == ["n1-n2"]
    assert links([["n1", "n2"], ["n1", "n3"]]) == ["n1->n2", "n1->n3"]
    assert links(both_ways(["n10"], ["n2"])) == ["n2-n10"]      # numeric node order
    assert links_text(both_ways(["n1", "n2", "n3"], ["n4", "n5", "n6"]), shown=4) == \
        "n1-n4, n1-n5, n1-n6, n2-n4 +5 more"
    assert links_text([]) == "no link"


def test_every_shape_is_labelled_by_its_cut_links() -> None:
    assert fault_label("partition", BRIDGE_3) == "partition: cut n1-n2 (bridge)"
    five = {"shape": "bridge", "nodes": ["n3"], "cut": both_ways(["n1", "n2"], ["n4", "n5"])}
    assert fault_label("partition", five) == \
        "partition: cut n1-n4, n1-n5, n2-n4, n2-n5 (bridge)"
    one_way = {"shape": "one-way", "nodes": ["n1"], "receivers": ["n2", "n3"],
               "cut": [["n1", "n2"], ["n1", "n3"]]}
    assert fault_label("partition", one_way) == "partition: cut n1->n2, n1->n3 (one-way)"
    assert fault_label("heal", {"healed": [["n1", "n2"], ["n2", "n1"]]}) == \
        "heal: restored n1-n2"
    # Whatever the rng draws, the label names exactly the cut, never the middle node alone.
    for seed in range(20):
        plan = plan_shape(random.Random(seed), ["n1", "n2", "n3"], "bridge")
        label = fault_label("partition", plan)
        assert label == f"partition: cut {', '.join(links(plan['cut']))} (bridge)"
        assert plan["nodes"][0] not in label.split("(")[0]
    # Other faults keep their nodes.
    assert fault_label("kill", {"nodes": ["n3"], "killed": ["n3"]}) == "kill n3"


class FakePartitioner:
    def __init__(self) -> None:
        self.cut: list[Any] = []

    def apply(self, cut: list[Any]) -> None:
        self.cut = list(cut)

    def heal(self) -> None:
        self.cut = []


def test_live_line_and_executed_schedule_name_the_cut_links() -> None:
    c = FakeCluster(["n1", "n2", "n3"])
    fault = PartitionFault("bridge")
    fault._partitioners[c.hub_netns] = FakePartitioner()  # no nftables in a unit test
    nemesis = CompositeNemesis({"partition:bridge": fault})
    nemesis.setup(c)
    ops: list[Op] = []

    def record(process, type, f, value=None, key=None, node=None, error=None):
        op = Op(len(ops), len(ops) * 1_000_000, process, type, f, value, key, node, error)
        ops.append(op)
        return op

    runner = NemesisRunner(nemesis, [], record)
    runner.apply(Event(0, "inject", "partition:bridge", dict(BRIDGE_3)))
    assert runner.executed[0]["error"] is None
    # run.json's "schedule" is this executed list.
    assert runner.executed[0]["label"] == "partition: cut n1-n2 (bridge)"
    active = active_faults(runner.executed)
    assert active == ["partition: cut n1-n2 (bridge)"]
    line = status_line("workload", 3.0, 30, {"ok": 5}, 10.0, active)
    assert "faults: partition: cut n1-n2 (bridge)" in line and "(n3)" not in line
    runner.apply(Event(1, "heal", "partition:bridge", {}))
    assert runner.executed[1]["label"] == "heal: restored n1-n2"
    assert active_faults(runner.executed) == []


def bridge_run(tmp_path: Path) -> RunDir:
    rd = RunDir(tmp_path / "run")
    rd.client_ops(0.0, 10.0)
    rd.fault(2.0, "partition", BRIDGE_3, 6.0, "heal")
    rd.write_history()
    rd.write_json("run.json", run_json())
    return rd


def test_report_lane_hover_and_node_lanes_show_the_cut(tmp_path: Path) -> None:
    rd = bridge_run(tmp_path)
    tl = timeline(rd.ops, {}, {})
    (w,) = tl.faults
    assert w.label == "partition: cut n1-n2 (bridge)"
    spans = {s.node: s for s in node_spans(tl.faults, ["n1", "n2", "n3"])}
    assert set(spans) == {"n1", "n2"}                 # n3, the bridge, lost nothing
    assert spans["n1"].state == LINKS_CUT_STATE
    assert "its links cut: n1-n2" in spans["n1"].detail
    assert "still reaches a majority" in spans["n2"].detail
    page = write_report(rd.path).read_text()
    titles = re.findall(r"<g class='fault'[^>]*><title>([^<]*)</title>", page)
    assert titles and all("partition: cut n1-n2 (bridge)" in t for t in titles)
    states = set(re.findall(r"data-node='(n\d)' data-state='([^']*)'", page))
    assert states == {("n1", LINKS_CUT_STATE), ("n2", LINKS_CUT_STATE)}
    assert "partition(n3)" not in page
