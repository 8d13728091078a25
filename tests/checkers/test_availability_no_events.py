"""Availability for a system that prints no event lines (etcd, Redis, the
contrib systems): its nodes' stdout still loads as an empty list of events
per node, which must not be read as nodes that never led (every stretch
excused as "no leader", no leader change judged). The registry passes no
events when run.json `artifacts` says the system leaves none, so the leader
counts as unknown: each fault that took something excuses one failover
after it, and a long outage with the cluster whole is flagged."""

from __future__ import annotations

from typing import Any

from checkers import registry
from checkers.checker import EVENTS
from checkers.history import History
from checkers.rundir import Run
from tests.checkers.test_availability import START, H

NODES = ("n1", "n2", "n3", "n4", "n5")
# etcd's declared timers (nodes/etcd/db.py `timers` at its defaults).
ETCD_TIMERS = {"failover_s": 6.1, "recovery_s": 18.3, "rejoin_s": 6.1,
               "rejoin_disrupts": True, "source": "etcd: election timeout 1 s, heartbeat 0.1 s"}


def etcd_like_run(h: H, artifacts: list[str]) -> Run:
    run_json: dict[str, Any] = {
        "run_id": "x", "config": {"db": "etcd", "op_timeout": 1.0},
        "start_monotonic_ns": START, "artifacts": artifacts,
        "nodes": {n: {} for n in NODES}, "timers": ETCD_TIMERS}
    # What load_events gives for nodes whose stdout holds no event line.
    return Run(None, run_json, History(h.ops), {}, {n: [] for n in NODES})


def outage_after(kill: list[str], stuck_from_s: float) -> H:
    """A kill of `kill` at 10 s, healed at 11 s or (majority) at 40 s, then
    clients stuck from `stuck_from_s` to 40 s."""
    h = H()
    h.reads(0.5, 9.5)
    h.nemesis(10, "kill", {"nodes": kill})
    heal_s = 11 if len(kill) < 3 else 40
    if heal_s == 11:
        h.nemesis(11, "start", {"nodes": kill})
    h.reads(11.5, stuck_from_s - 0.5)
    h.stuck(stuck_from_s, 40)
    if heal_s == 40:
        h.nemesis(40, "start", {"nodes": kill})
    h.reads(40.5, 45)
    return h


def availability(r: Run) -> dict[str, Any]:
    v, _ = registry.run_check("availability", r, {"thresholds": None})
    return v


def test_a_system_without_event_lines_gets_no_events():
    h = outage_after(["n1"], 20)
    assert registry.leader_events(etcd_like_run(h, ["applied_state", "node_logs"])) is None
    with_events = etcd_like_run(h, [EVENTS])
    assert registry.leader_events(with_events) == with_events.events


def test_an_outage_with_every_node_back_is_flagged_without_event_lines():
    """Fails twin: 20 s with nobody served, one node killed and back 9 s
    before; the unexcused stretch is far past op timeout + failover + grace
    (9.1 s). Before the fix the empty event lists excused all of it."""
    v = availability(etcd_like_run(outage_after(["n1"], 20), ["applied_state", "node_logs"]))
    assert v["valid"] is False
    assert {a["type"] for a in v["anomalies"]} == {"unavailable-while-healthy"}
    assert v["stats"]["leader_changes_judged"] == "no: no node events"
    assert "leader_changes_while_healthy" not in v["stats"]


def test_an_outage_while_a_majority_is_down_passes_without_event_lines():
    """Passes twin: the same outage while a kill holds three of five."""
    h = outage_after(["n1", "n2", "n3"], 20)
    v = availability(etcd_like_run(h, ["applied_state", "node_logs"]))
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["leader_changes_judged"] == "no: no node events"


def test_an_outage_within_one_failover_of_a_kill_passes_without_event_lines():
    """Passes twin: the kill may have taken the leader (unknown here); the
    stretch right after it is one failover plus an op timeout (7.1 s)."""
    h = H()
    h.reads(0.5, 9.5)
    h.nemesis(10, "kill", {"nodes": ["n1"]})
    h.stuck(10, 16)
    h.reads(16.5, 30)
    h.nemesis(30, "start", {"nodes": ["n1"]})
    h.reads(30.5, 35)
    v = availability(etcd_like_run(h, ["applied_state", "node_logs"]))
    assert v["valid"] is True, v["anomalies"]


def test_an_outage_with_no_fault_at_all_is_flagged_without_start_lines():
    """Fails twin: no start lines, so no limit for windows with no fault in
    force (stats say why); the unhealthy limit (9.1 s) still holds them."""
    h = H()
    h.reads(0.5, 9.5)
    h.stuck(10, 25)
    h.reads(25.5, 30)
    v = availability(etcd_like_run(h, ["applied_state"]))
    assert v["valid"] is False
    assert [a["type"] for a in v["anomalies"]] == ["unavailable-while-healthy"]
    assert v["stats"]["max_unexplained_unavailable_s"] is None
    assert "start lines" in v["stats"]["why_no_unexplained_limit"]
