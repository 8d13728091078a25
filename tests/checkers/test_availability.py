"""Availability checker: gaps matched to faults, leader changes classified, and
limits that fail only when configured. Includes a KIP-996 disruptive server."""

from __future__ import annotations

from typing import Any

from checkers import availability
from checkers.history import Op

S = 1_000_000_000
START = 7 * 10**12  # CLOCK_MONOTONIC at run start: event t = START + history time


class H:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, t_s: float, process: Any, typ: str, f: str, value: Any = None) -> None:
        self.ops.append(Op(len(self.ops), int(t_s * S), process, typ, f, value))

    def reads(self, from_s: float, to_s: float, every_s: float = 0.5) -> None:
        t = from_s
        while t <= to_s:
            self.add(t, 0, "invoke", "read")
            self.add(t + 0.01, 0, "ok", "read", 1)
            t += every_s

    def stuck(self, from_s: float, to_s: float, timeout_s: float = 1.0) -> None:
        """Clients asking and timing out, back to back: demand nobody serves."""
        t, process = from_s, 100
        while t < to_s:
            self.add(t, process, "invoke", "write", 1)
            self.add(min(t + timeout_s, to_s), process, "info", "write", 1)
            t, process = t + timeout_s, process + 1

    def nemesis(self, t_s: float, f: str, value: Any) -> None:
        self.add(t_s, "nemesis", "invoke", f, value)
        self.add(t_s + 0.1, "nemesis", "info", f, value)


def run(**config: Any) -> dict:
    return {"run_id": "x", "config": config, "start_monotonic_ns": START}


def role(t_s: float, node: str, role_name: str, epoch: int, leader: str | None) -> dict:
    return {"t": START + int(t_s * S), "node": node, "event": "role", "role": role_name,
            "epoch": epoch, "leader": leader}


def isolate_n3_then_heal() -> H:
    h = H()
    h.reads(0.5, 9.5)
    h.nemesis(10, "partition", {"nodes": ["n3"], "shape": "isolate",
                                "cut": [["n3", "n1"], ["n3", "n2"]]})
    h.reads(10.5, 19.5)
    h.nemesis(20, "heal", {})
    h.reads(20.5, 40)
    return h


def steady_leader() -> dict[str, list[dict]]:
    return {"n1": [role(0.2, "n1", "Leader", 1, "n1")],
            "n2": [role(0.3, "n2", "Follower", 1, "n1")],
            "n3": [role(0.3, "n3", "Follower", 1, "n1")]}


def disruptive_n3() -> dict[str, list[dict]]:
    """KIP-996 without Pre-Vote: isolated n3 keeps bumping its epoch; on the heal
    its Vote requests make the healthy leader resign and a new election follows."""
    events = steady_leader()
    events["n3"] += [role(11 + i, "n3", "Candidate", 2 + i, None) for i in range(5)]
    events["n1"] += [role(20.3, "n1", "Unattached", 6, None),
                     role(20.4, "n1", "Candidate", 7, None),
                     role(20.5, "n1", "Leader", 7, "n1")]
    events["n2"] += [role(20.3, "n2", "Unattached", 6, None),
                     role(20.5, "n2", "Follower", 7, "n1")]
    events["n3"] += [role(20.5, "n3", "Follower", 7, "n1")]
    return events


def prevote_n3() -> dict[str, list[dict]]:
    """With Pre-Vote n3 stays Prospective in epoch 1 and simply rejoins."""
    events = steady_leader()
    events["n3"] += [role(11, "n3", "Prospective", 1, None),
                     role(20.3, "n3", "Follower", 1, "n1")]
    return events


def test_kip996_disruptive_server_is_flagged_by_a_per_heal_limit():
    v = availability.check(isolate_n3_then_heal().ops, disruptive_n3(), run(),
                           {"max_leader_changes_per_heal": 0})
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert a["type"] == "leader-changes-after-heal" and a["count"] == 1
    assert a["heal"]["time_s"] == 20.1
    assert a["changes"][0]["epoch"] == 7


def test_kip996_disruptive_server_passes_without_limits_but_reports_figures():
    v = availability.check(isolate_n3_then_heal().ops, disruptive_n3(), run())
    assert v["valid"] is True
    st = v["stats"]
    assert st["elections"] == 2 and st["leader_changes"] == 1
    assert st["leader_node_changes"] == 0  # n1 re-elected, yet service was interrupted
    assert st["leader_changes_after_heal"] == 1 and st["max_leader_changes_per_heal"] == 1
    assert st["leader_changes_during_fault"] == 0 and st["quiet_leader_changes"] == 0


def test_kip996_with_prevote_passes_the_same_limit():
    v = availability.check(isolate_n3_then_heal().ops, prevote_n3(), run(),
                           {"max_leader_changes_per_heal": 0})
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["leader_changes"] == 0


def test_limits_come_from_the_run_config():
    v = availability.check(isolate_n3_then_heal().ops, disruptive_n3(),
                           run(thresholds={"max_leader_changes_per_heal": 0}))
    assert v["valid"] is False


def test_leader_change_with_no_fault_and_no_recent_heal_is_quiet():
    h = isolate_n3_then_heal()
    events = steady_leader()
    events["n2"] += [role(35, "n2", "Leader", 2, "n2")]
    v = availability.check(h.ops, events, run(), {"max_quiet_leader_changes": 0})
    # The configured limit, and (whatever the limits) a healthy leader deposed.
    assert [a["type"] for a in v["anomalies"]] == ["leader-change-while-healthy",
                                                   "quiet-leader-changes"]
    assert v["anomalies"][1]["changes"][0]["node"] == "n2"
    within = availability.check(h.ops, events, run(), {"max_quiet_leader_changes": 1})
    assert within["stats"]["quiet_leader_changes"] == 1
    assert [a["type"] for a in within["anomalies"]] == ["leader-change-while-healthy"]


def test_leader_change_during_a_fault_is_not_quiet():
    h = H()
    h.reads(0.5, 9.5)
    h.nemesis(10, "kill", {"nodes": ["n1"]})
    h.reads(14, 19.5)
    h.nemesis(20, "start", {"nodes": ["n1"]})
    h.reads(20.5, 30)
    events = steady_leader()
    events["n2"] += [role(13, "n2", "Leader", 2, "n2")]
    v = availability.check(h.ops, events, run(),
                           {"max_quiet_leader_changes": 0, "max_leader_changes_per_heal": 0})
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["leader_changes_during_fault"] == 1


def test_gap_is_matched_to_the_fault_and_fails_only_over_the_limit():
    h = H()
    h.reads(0.5, 9.5)
    h.nemesis(10, "kill", {"nodes": ["n1"]})
    h.stuck(9.5, 17.5)
    h.reads(17.5, 19.5)           # 8 s without a successful op
    h.nemesis(20, "start", {"nodes": ["n1"]})
    h.reads(20.5, 25)
    figures = availability.check(h.ops, None, run())
    assert figures["valid"] is True
    [gap] = figures["stats"]["gaps"]
    assert gap["duration_s"] == 8.0 and gap["explained"] is True
    assert gap["faults"][0]["f"] == "kill" and gap["faults"][0]["end_s"] == 20.1
    assert figures["stats"]["leadership"] is None

    v = availability.check(h.ops, None, run(), {"max_unavailable_s": 5})
    assert [a["type"] for a in v["anomalies"]] == ["unavailable"]
    assert v["anomalies"][0]["duration_s"] == 8.0
    assert availability.check(h.ops, None, run(), {"max_unavailable_s": 10})["valid"] is True


def test_gap_with_no_fault_is_unexplained():
    h = H()
    h.reads(0.5, 5)
    h.stuck(5, 9)
    h.reads(9, 12)
    v = availability.check(h.ops, None, run())
    assert v["stats"]["unexplained_gaps"] == 1 and v["stats"]["gap_count"] == 1


def timers() -> dict[str, list[dict]]:
    events = steady_leader()
    for node, evs in events.items():
        evs.insert(0, {"t": START, "node": node, "event": "start", "epoch": 0,
                       "election_timeout_ms": 500, "fetch_timeout_ms": 750})
    return events


def test_a_pause_with_no_client_ops_is_never_unavailable():
    # The recovery pause before the final reads: nobody asks, nobody is refused.
    h = H()
    h.reads(0.5, 30)
    h.reads(40, 41)
    v = availability.check(h.ops, timers(), run(op_timeout=1.0), {"max_unavailable_s": 3})
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["gap_count"] == 0


def test_the_limit_for_unexplained_windows_comes_from_the_run():
    # op timeout 1 s + 2 x 0.5 s election + 0.75 s fetch timeout + 2 s grace.
    v = availability.check([], timers(), run(op_timeout=1.0))
    assert v["stats"]["max_unexplained_unavailable_s"] == 4.75
    assert availability.check([], steady_leader(), run())["stats"][
        "max_unexplained_unavailable_s"] is None
    # Where a fault was in force: op timeout + failover (0.75 s fetch timeout
    # + 3 rounds of at most 2 x 0.5 s election) + 2 s grace.
    assert v["stats"]["max_unhealthy_unavailable_s"] == 6.75
    # Declared by the system in run.json, the failover wins over the start lines.
    declared = dict(run(op_timeout=1.0), timers={"failover_s": 2.0, "recovery_s": 6.0,
                                                 "rejoin_disrupts": False, "source": "x"})
    assert availability.check([], timers(), declared)["stats"][
        "max_unhealthy_unavailable_s"] == 5.0
    # Neither: a generic, slow default.
    generic = availability.check([], steady_leader(), run())["stats"]
    assert generic["max_unhealthy_unavailable_s"] == 13.0
    assert generic["timers"]["source"].startswith("generic")


def test_a_long_unexplained_window_fails_without_any_threshold():
    h = H()
    h.reads(0.5, 5)
    h.stuck(5, 11)
    h.reads(11, 15)
    v = availability.check(h.ops, timers(), run(op_timeout=1.0))
    assert [a["type"] for a in v["anomalies"]] == ["unexplained-unavailable"]
    assert v["anomalies"][0]["duration_s"] == 6.0


def test_a_short_unexplained_window_or_one_during_a_fault_passes():
    h = H()
    h.reads(0.5, 5)
    h.stuck(5, 8)
    h.reads(8, 15)
    h.nemesis(15.2, "kill", {"nodes": ["n1"]})
    h.stuck(15, 25)
    h.nemesis(24, "start", {"nodes": ["n1"]})
    h.reads(25, 30)
    v = availability.check(h.ops, timers(), run(op_timeout=1.0))
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["gap_count"] == 2


def test_leader_limit_without_events_is_unknown():
    h = isolate_n3_then_heal()
    assert availability.check(h.ops, None, run(),
                              {"max_quiet_leader_changes": 0})["valid"] == "unknown"


def test_kill_of_one_node_stays_in_force_until_that_node_starts():
    h = H()
    h.nemesis(1, "kill", {"nodes": ["n1"]})
    h.nemesis(2, "kill", {"nodes": ["n2"]})
    h.nemesis(3, "start", {"nodes": ["n1"]})
    h.add(4, 0, "invoke", "read")
    faults, heals = availability.fault_windows(h.ops, run_end=h.ops[-1].time)
    assert [(f["value"]["nodes"], f["end"]) for f in faults] == [
        (["n1"], int(3.1 * S)), (["n2"], 4 * S)]
    assert len(heals) == 1


def failing_reads(h: H, from_s: float, to_s: float, every_s: float = 0.5) -> None:
    t = from_s
    while t <= to_s:
        h.add(t, 0, "invoke", "read")
        h.add(t + 0.01, 0, "fail", "read")
        t += every_s


def test_an_outage_lasting_until_the_end_of_the_history_is_a_gap():
    h = H()
    h.reads(0.5, 5)
    h.nemesis(5.2, "kill", {"nodes": ["n1", "n2"]})
    failing_reads(h, 5.5, 14)  # never healed: nothing succeeds again
    v = availability.check(h.ops, None, run(), {"max_unavailable_s": 5})
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert a["type"] == "unavailable"
    assert (a["start_s"], a["end_s"]) == (5.01, 14.01)
    assert a["explained"] is True and a["faults"][0]["f"] == "kill"


def test_a_short_outage_at_the_end_of_the_history_passes_its_limit():
    h = H()
    h.reads(0.5, 11)
    failing_reads(h, 11.5, 14)
    v = availability.check(h.ops, None, run(), {"max_unavailable_s": 5})
    assert v["valid"] is True, v["anomalies"]
    [gap] = v["stats"]["gaps"]
    assert (gap["start_s"], gap["end_s"]) == (11.01, 14.01)


def kill_during_stuck_clients(kill_result: dict) -> H:
    h = H()
    h.reads(0.5, 9.5)
    h.add(10, "nemesis", "invoke", "kill", {"nodes": ["n1"]})
    h.add(10.1, "nemesis", "info", "kill", kill_result)
    h.stuck(9.5, 17.5)
    h.reads(17.5, 19.5)
    return h


def test_a_kill_that_acted_explains_the_window_it_overlaps():
    h = kill_during_stuck_clients({"nodes": ["n1"], "killed": ["n1"]})
    [gap] = availability.check(h.ops, None, run())["stats"]["gaps"]
    assert gap["explained"] is True and gap["faults"][0]["f"] == "kill"


def test_a_kill_that_changed_nothing_explains_no_window():
    # The nemesis recorded it as a no-op (n1 was already down): no fault was in
    # force, so the 8 s with no successful op is unexplained.
    h = kill_during_stuck_clients({"nodes": ["n1"], "killed": [], "noop": "n1 already down"})
    v = availability.check(h.ops, None, run())
    [gap] = v["stats"]["gaps"]
    assert gap["explained"] is False and gap["faults"] == []
    assert v["stats"]["faults"] == 0 and v["stats"]["unexplained_gaps"] == 1


def test_a_gap_over_its_limit_is_reported_alongside_leadership_figures():
    # Node events present (leadership judged too): the gap anomaly must stay.
    h = H()
    h.reads(0.5, 5)
    h.stuck(5.01, 12)
    h.reads(12, 14)
    v = availability.check(h.ops, steady_leader(), run(), {"max_unavailable_s": 3,
                                                           "max_quiet_leader_changes": 0})
    assert [a["type"] for a in v["anomalies"]] == ["unavailable"]
    assert (v["anomalies"][0]["start_s"], v["anomalies"][0]["end_s"]) == (5.01, 12.01)
    assert v["anomalies"][0]["explained"] is False


def test_leader_change_list_says_when_each_change_came_and_after_which_heal():
    v = availability.check(isolate_n3_then_heal().ops, disruptive_n3(), run())
    [change] = v["stats"]["leader_change_list"]
    assert (change["node"], change["epoch"], change["time_s"]) == ("n1", 7, 20.5)
    assert change["previous"] == {"node": "n1", "epoch": 1}
    assert change["when"] == "after-heal" and change["faults"] == []
    assert change["heal_s"] == 20.1


def test_a_change_counts_only_against_the_heal_it_followed():
    # Two heals; the one change comes after the second: the first heal's
    # window holds none.
    h = isolate_n3_then_heal()
    h.nemesis(30, "partition", {"nodes": ["n2"], "shape": "isolate",
                                "cut": [["n2", "n1"], ["n2", "n3"]]})
    h.nemesis(33, "heal", {})
    h.reads(33.5, 40)
    events = steady_leader()
    events["n1"] += [role(34, "n1", "Leader", 2, "n1")]
    v = availability.check(h.ops, events, run(), {"max_leader_changes_per_heal": 0})
    [a] = v["anomalies"]
    assert a["type"] == "leader-changes-after-heal"
    assert a["heal"]["time_s"] == 33.1 and a["count"] == 1


def oks_at(h: H, *times_s: float) -> None:
    for t in times_s:
        h.add(t, 0, "invoke", "read")
        h.add(t, 0, "ok", "read", 1)


def test_gap_and_limit_boundaries_are_exclusive():
    # Oks at 0, 2 and 5: a 2 s wait is not a gap (gap_s 2), a 3 s one is;
    # a 3 s gap meets a 3 s limit, it does not exceed it.
    h = H()
    oks_at(h, 0, 2, 5)
    h.stuck(2, 5)
    v = availability.check(h.ops, None, run(), {"max_unavailable_s": 3})
    assert v["valid"] is True, v["anomalies"]
    assert [(g["start_s"], g["end_s"]) for g in v["stats"]["gaps"]] == [(2.0, 5.0)]
    assert v["stats"]["longest_gap_s"] == 3.0 and v["stats"]["unavailable_s"] == 3.0
    v = availability.check(h.ops, None, run(), {"max_unavailable_s": 2.5})
    [a] = v["anomalies"]
    assert (a["type"], a["limit_s"], a["duration_s"]) == ("unavailable", 2.5, 3.0)


def test_a_fault_touching_the_gap_at_either_end_explains_it():
    for fault_at, heal_at in ((5.0, 9.0), (1.0, 2.0 - 0.1)):
        h = H()
        oks_at(h, 0, 2)
        h.stuck(2, 5)
        h.nemesis(fault_at, "pause", {"nodes": ["n1"]})  # completes 0.1 s later
        h.nemesis(heal_at, "resume", {"nodes": ["n1"]})
        oks_at(h, 5)
        [gap] = availability.check(h.ops, None, run())["stats"]["gaps"]
        assert gap["explained"] is True, (fault_at, gap)
    h = H()
    oks_at(h, 0, 2)
    h.stuck(2, 5)
    h.nemesis(5.5, "pause", {"nodes": ["n1"]})
    h.nemesis(6, "resume", {"nodes": ["n1"]})
    oks_at(h, 5)
    [gap] = availability.check(h.ops, None, run())["stats"]["gaps"]
    assert gap["explained"] is False


def test_derived_limit_adds_the_run_op_timeout_to_the_reported_timers():
    events = {"n1": [{"event": "start", "election_timeout_ms": 1000, "fetch_timeout_ms": 1500}],
              "n2": [{"event": "start", "election_timeout_ms": 800, "fetch_timeout_ms": 2000}]}
    base = (2 * 1000 + 2000) / 1000 + availability.DERIVED_GRACE_S
    assert availability.derived_limit_s(events, {"config": {"op_timeout": 5}}) == base + 5
    assert availability.derived_limit_s(events, {}) == base + 1.0  # the client default
    assert availability.derived_limit_s({"n1": [{"event": "start"}]}, {}) is None
    failover = (availability.START_LINE_ELECTION_ROUNDS * 2 * 1000 + 2000) / 1000
    assert availability.run_timers({}, events)["failover_s"] == failover
    assert availability.run_timers({}, {"n1": [{"event": "start"}]})["source"].startswith(
        "generic")


def test_an_op_never_completed_asks_only_at_its_invoke():
    ops = [Op(0, 10, 0, "invoke", "read", None), Op(1, 20, 1, "invoke", "read", None),
           Op(2, 30, 1, "ok", "read", 1)]
    assert availability.demand_spans(ops, 0) == [(10, 10), (20, 30)]
    assert availability.demand_spans(ops, 10) == [(10, 30)]
