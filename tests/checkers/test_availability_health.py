"""Availability excuses only what a fault took away: twins for each rule, on
constructed histories of five nodes (n1 leads unless said otherwise).

Timers: run.json declares failover 3 s (the raft node's at tick 40 ms, about),
op timeout 1 s, grace 2 s: an unexcused stretch may last 6 s."""

from __future__ import annotations

from typing import Any

from checkers import availability, impairment
from checkers.history import Op
from tests.checkers.test_availability import H as AvailabilityHistory

S = 1_000_000_000
START = 7 * 10**12
NODES = ["n1", "n2", "n3", "n4", "n5"]


class H(AvailabilityHistory):
    def nemesis(self, t_s: float, f: str, value: Any, took_s: float = 0.1) -> None:
        self.add(t_s, "nemesis", "invoke", f, value)
        self.add(t_s + took_s, "nemesis", "info", f, value)


def run(rejoin_disrupts: bool = False, failover_s: float = 3.0) -> dict:
    return {"run_id": "x", "config": {"op_timeout": 1.0}, "start_monotonic_ns": START,
            "nodes": {n: {} for n in NODES},
            "timers": {"failover_s": failover_s, "recovery_s": 3 * failover_s,
                       "rejoin_disrupts": rejoin_disrupts, "source": "test"}}


def role(t_s: float, node: str, role_name: str, epoch: int, leader: str | None) -> dict:
    return {"t": START + int(t_s * S), "node": node, "event": "role", "role": role_name,
            "epoch": epoch, "leader": leader}


def led_by_n1() -> dict[str, list[dict]]:
    return {n: [role(0.2, n, "Leader" if n == "n1" else "Follower", 1, "n1")] for n in NODES}


def n1_resigns_and_n2_leads(at_s: float) -> dict[str, list[dict]]:
    events = led_by_n1()
    events["n1"] += [role(at_s, "n1", "Resigned", 1, "n1")]
    events["n2"] += [role(at_s + 0.4, "n2", "Leader", 2, "n2")]
    return events


def types(v: dict) -> list[str]:
    return [a["type"] for a in v["anomalies"]]


def check(h: H, events: dict | None, run_json: dict | None = None) -> dict:
    return availability.check(h.ops, events, run_json or run())


# --- a leader lost while a quorum was connected -----------------------------------


def two_followers_down() -> H:
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "kill", {"nodes": ["n4", "n5"]})
    h.nemesis(30, "start", {"nodes": ["n4", "n5"]})
    return h


def test_a_leader_resigning_while_two_of_five_are_down_is_flagged():
    v = check(two_followers_down(), n1_resigns_and_n2_leads(20))
    assert types(v) == ["leader-change-while-healthy"]
    [a] = v["anomalies"]
    assert (a["node"], a["how"], a["time_s"]) == ("n1", "stepped down in its own epoch", 20.0)
    assert a["in_force"] == [{"from_s": 16.0, "out": ["n4", "n5"], "cut": 0}]


def test_the_same_resignation_when_the_fault_took_the_leader_passes():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(19, "kill", {"nodes": ["n1", "n5"]})
    h.nemesis(30, "start", {"nodes": ["n1", "n5"]})
    v = check(h, n1_resigns_and_n2_leads(20))
    assert v["valid"] is True, v["anomalies"]


def test_a_leader_deposed_when_a_quorum_was_lost_passes():
    # Three of five paused: no quorum; when they come back the leader, which
    # heard from nobody, resigns: one election, excused.
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "pause", {"nodes": ["n2", "n3", "n4"]})
    h.nemesis(18, "resume", {"nodes": ["n2", "n3", "n4"]})
    v = check(h, n1_resigns_and_n2_leads(18.5))
    assert v["valid"] is True, v["anomalies"]


def test_a_resignation_long_after_the_quorum_came_back_is_flagged():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "pause", {"nodes": ["n2", "n3", "n4"]})
    h.nemesis(18, "resume", {"nodes": ["n2", "n3", "n4"]})
    v = check(h, n1_resigns_and_n2_leads(30))
    assert types(v) == ["leader-change-while-healthy"]


def test_isolating_a_follower_excuses_no_election():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "partition", {"nodes": ["n5"], "cut": [
        [a, b] for a in NODES for b in NODES if a != b and "n5" in (a, b)]})
    h.nemesis(30, "heal", {"healed": []})
    v = check(h, n1_resigns_and_n2_leads(20))
    assert types(v) == ["leader-change-while-healthy"]


def test_cutting_the_leaders_outgoing_links_to_a_majority_excuses_its_loss():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "partition", {"shape": "one-way", "nodes": ["n1", "n2"],
                                "cut": [["n1", b] for b in ("n3", "n4", "n5")]
                                + [["n2", b] for b in ("n3", "n4", "n5")]})
    h.nemesis(30, "heal", {"healed": []})
    v = check(h, n1_resigns_and_n2_leads(12))
    assert v["valid"] is True, v["anomalies"]


def test_a_rival_candidate_deposing_the_new_leader_right_after_a_failover_passes():
    # The leader is killed; n2 wins epoch 2, and n3's candidacy from the same
    # round deposes it a moment later: the aftermath of one election.
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "kill", {"nodes": ["n1"]})
    h.nemesis(25, "start", {"nodes": ["n1"]})
    events = led_by_n1()
    events["n2"] += [role(11.5, "n2", "Leader", 2, "n2"), role(11.6, "n2", "Unattached", 3, None)]
    events["n3"] += [role(11.7, "n3", "Leader", 3, "n3")]
    v = check(h, events)
    assert v["valid"] is True, v["anomalies"]
    # Without the kill, the same churn is two healthy leaders lost.
    quiet = H()
    quiet.reads(0.5, 40)
    assert types(check(quiet, events)) == ["leader-change-while-healthy"] * 2


def test_a_new_leader_stepping_down_by_itself_right_after_a_failover_is_flagged():
    # Deposed by a rival's higher epoch, the aftermath excuses it (above); but
    # a leader that steps down in its own epoch answers for itself: two of
    # five down leaves it a majority.
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "kill", {"nodes": ["n1", "n5"]})
    h.nemesis(30, "start", {"nodes": ["n1", "n5"]})
    events = led_by_n1()
    events["n2"] += [role(11.5, "n2", "Leader", 2, "n2"), role(12, "n2", "Resigned", 2, "n2")]
    events["n3"] += [role(12.5, "n3", "Leader", 3, "n3")]
    [a] = check(h, events)["anomalies"]
    assert (a["type"], a["node"], a["epoch"]) == ("leader-change-while-healthy", "n2", 2)


def test_a_node_restarting_with_no_fault_loses_its_leadership():
    # A `start` line with no kill: the leader's process died on its own.
    events = led_by_n1()
    events["n1"] += [{"t": START + 20 * S, "node": "n1", "event": "start", "epoch": 1}]
    events["n2"] += [role(21, "n2", "Leader", 2, "n2")]
    h = H()
    h.reads(0.5, 40)
    assert types(check(h, events)) == ["leader-change-while-healthy"]


def test_a_heal_excuses_an_election_only_where_the_system_says_rejoining_disrupts():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "kill", {"nodes": ["n5"]})
    h.nemesis(20, "start", {"nodes": ["n5"]})
    events = n1_resigns_and_n2_leads(20.5)
    assert types(check(h, events, run(rejoin_disrupts=False))) == [
        "leader-change-while-healthy"]
    assert check(h, events, run(rejoin_disrupts=True))["valid"] is True


def test_leader_removed_as_a_voter_or_power_cut_is_excused():
    for f, value, heal in (("membership", {"change": "remove", "nodes": ["n1"]},
                            "restore-voters"),
                           ("lose-unsynced", {"nodes": ["n1"]}, None),
                           ("truncate", {"nodes": ["n1"], "mode": "tail"}, "start"),
                           ("lose-state", {"nodes": ["n1", "n3"], "leader": "n1"}, "start")):
        h = H()
        h.reads(0.5, 40)
        h.nemesis(19.5, f, value)
        if heal:
            h.nemesis(25, heal, {"nodes": ["n1"]})
        v = check(h, n1_resigns_and_n2_leads(20))
        assert v["valid"] is True, (f, v["anomalies"])


def test_arming_a_trigger_takes_nothing_and_excuses_nothing():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(15, "kill-after-vote", {})
    v = check(h, n1_resigns_and_n2_leads(20))
    assert types(v) == ["leader-change-while-healthy"]


def test_a_plug_in_fault_may_take_anything_until_its_next_op():
    h = H()
    h.reads(0.5, 40)
    h.nemesis(15, "corrupt-clock", {"nodes": ["n3"]})
    h.nemesis(25, "restore-clock", {})
    assert check(h, n1_resigns_and_n2_leads(20))["valid"] is True
    assert types(check(h, n1_resigns_and_n2_leads(33))) == ["leader-change-while-healthy"]


# --- windows with no successful op ------------------------------------------------


def outage(from_s: float, to_s: float, faults: list[tuple[float, str, dict]]) -> H:
    h = H()
    h.reads(0.5, from_s)
    h.stuck(from_s, to_s)
    h.reads(to_s, 40)
    for t, f, value in faults:
        h.nemesis(t, f, value)
    return h


def test_an_outage_while_two_of_five_are_down_and_the_leader_stays_is_flagged():
    h = outage(15, 25, [(10, "kill", {"nodes": ["n4", "n5"]}),
                        (30, "start", {"nodes": ["n4", "n5"]})])
    v = check(h, led_by_n1())
    assert types(v) == ["unavailable-while-healthy"]
    assert v["anomalies"][0]["unexcused_s"] == 10.0


def test_an_outage_while_three_of_five_are_down_passes():
    h = outage(15, 25, [(10, "kill", {"nodes": ["n3", "n4", "n5"]}),
                        (30, "start", {"nodes": ["n3", "n4", "n5"]})])
    assert check(h, led_by_n1())["valid"] is True


def test_an_outage_runs_on_for_a_failover_after_the_quorum_comes_back_and_no_longer():
    faults = [(10, "kill", {"nodes": ["n3", "n4", "n5"]}),
              (15, "start", {"nodes": ["n3", "n4", "n5"]})]
    # Started at 15.1, back a failover (3 s) later, at 18.1; then failover 3 s
    # + op timeout 1 s excused, to 22.1; then 6 s allowed.
    assert check(outage(12, 28, faults), led_by_n1())["valid"] is True
    assert types(check(outage(12, 30, faults), led_by_n1())) == ["unavailable-while-healthy"]


def test_without_leader_events_a_fault_taking_nodes_excuses_one_failover_after_it():
    # etcd leaves no Leader events: two of five killed may have taken the
    # leader, so a failover after the kill is excused; an outage long after,
    # with a quorum up all along, is not.
    faults = [(10, "kill", {"nodes": ["n4", "n5"]}), (35, "start", {"nodes": ["n4", "n5"]})]
    assert check(outage(10, 13, faults), None)["valid"] is True
    assert types(check(outage(20, 30, faults), None)) == ["unavailable-while-healthy"]
    # Three of five: no quorum for as long as they are down.
    three = [(10, "kill", {"nodes": ["n3", "n4", "n5"]}),
             (35, "start", {"nodes": ["n3", "n4", "n5"]})]
    assert check(outage(20, 30, three), None)["valid"] is True


def stalls(windows: list[tuple[float, float]], faults: list[tuple[float, str, dict]]) -> H:
    """Service from 0.5 s to 40 s but for `windows`, in which every op times out."""
    h = H()
    t = 0.5
    for a, b in windows:
        h.reads(t, a)
        h.stuck(a, b)
        t = b
    h.reads(t, 40)
    for at, f, value in faults:
        h.nemesis(at, f, value)
    return h


TWO_FOLLOWERS_DOWN = [(10, "kill", {"nodes": ["n4", "n5"]}), (35, "start", {"nodes": ["n4", "n5"]})]


def test_healthy_outages_each_within_the_limit_that_add_up_past_it_are_flagged():
    # Three stalls of 4 s while a quorum and the leader are up: each within
    # the 6 s one may last, 12 s in all.
    v = check(stalls([(12, 16), (20, 24), (28, 32)], TWO_FOLLOWERS_DOWN), led_by_n1())
    assert types(v) == ["unavailable-while-healthy-summed"]
    [a] = v["anomalies"]
    assert (a["unexcused_s"], a["windows"], a["limit_s"]) == (12.0, 3, 6.0)
    assert v["stats"]["unexcused_unavailable_s"] == 12.0


def test_one_healthy_outage_within_the_limit_passes():
    v = check(stalls([(12, 16)], TWO_FOLLOWERS_DOWN), led_by_n1())
    assert v["valid"] is True
    assert v["stats"]["unexcused_unavailable_s"] == 4.0


def test_outages_that_faults_excuse_add_up_to_nothing():
    # The same three stalls, each while three of five are down: no quorum.
    faults = [f for a, b in [(12, 16), (20, 24), (28, 32)]
              for f in [(a, "kill", {"nodes": ["n3", "n4", "n5"]}),
                        (b - 0.5, "start", {"nodes": ["n3", "n4", "n5"]})]]
    v = check(stalls([(12, 16), (20, 24), (28, 32)], faults), led_by_n1())
    assert v["valid"] is True
    assert v["stats"]["unexcused_unavailable_s"] == 0.0


def test_a_window_flagged_on_its_own_is_not_counted_again():
    v = check(stalls([(12, 22), (26, 30)], TWO_FOLLOWERS_DOWN), led_by_n1())
    assert types(v) == ["unavailable-while-healthy"]


def stuck_at(h: H, node: str, from_s: float, to_s: float) -> None:
    """A sticky client whose every op, sent to `node`, times out."""
    t, process = from_s, 200
    while t < to_s:
        h.ops.append(Op(len(h.ops), int(t * S), process, "invoke", "write", 1, node=node))
        h.ops.append(Op(len(h.ops), int(min(t + 1, to_s) * S), process, "info", "write", 1,
                        node=node))
        t, process = t + 1, process + 1


def test_an_outage_of_clients_whose_own_nodes_are_down_passes_and_of_others_does_not():
    def sticky(node: str) -> H:
        h = H()
        h.reads(0.5, 15)
        stuck_at(h, node, 15, 25)
        h.reads(25, 40)
        h.nemesis(10, "kill", {"nodes": ["n4", "n5"]})
        h.nemesis(30, "start", {"nodes": ["n4", "n5"]})
        return h
    assert check(sticky("n5"), led_by_n1())["valid"] is True
    assert types(check(sticky("n2"), led_by_n1())) == ["unavailable-while-healthy"]


# --- the timeline -----------------------------------------------------------------


def test_timeline_counts_each_fault_as_its_row_says():
    h = H()
    h.nemesis(1, "kill", {"nodes": ["n1"]})
    h.nemesis(2, "lose-unsynced", {"nodes": ["n2"]}, took_s=0.5)
    h.nemesis(3, "partition", {"cut": [["n3", "n4"]]})
    h.nemesis(4, "kill", {"nodes": ["n5"], "noop": "already down"})
    h.nemesis(5, "start", {"nodes": ["n1"]})
    h.nemesis(6, "heal", {"healed": [["n3", "n4"]]})
    imp = impairment.timeline(h.ops, NODES, None, 10 * S)

    def at(t: float) -> tuple[list[str], int]:
        seg = imp.at(int(t * S))
        return sorted(seg.out), len(seg.cut)
    assert at(1.5) == (["n1"], 0)
    assert at(2.2) == (["n1", "n2"], 0)      # while its op runs
    assert at(2.8) == (["n1"], 0)            # restarted by its own op
    assert at(3.5) == (["n1"], 1)
    assert at(4.5) == (["n1"], 1)            # a no-op took nothing
    assert at(5.5) == ([], 1)
    assert at(6.5) == ([], 0)
    assert imp.heals == [int(5.1 * S), int(6.1 * S)]


def test_what_comes_back_counts_as_back_only_after_its_rejoin_time():
    h = H()
    h.nemesis(1, "kill", {"nodes": ["n1", "n2"]})
    h.nemesis(3, "start", {"nodes": ["n1", "n2"]})
    h.nemesis(4, "kill", {"nodes": ["n2"]})              # killed again before it was back
    h.nemesis(5, "partition", {"cut": [["n3", "n4"]]})
    h.nemesis(6, "partition", {"cut": [["n4", "n5"]]})   # replaces the cut
    h.nemesis(8, "heal", {})
    h.nemesis(8.5, "partition", {"cut": [["n5", "n1"]]})  # cut again before the heal took
    imp = impairment.timeline(h.ops, NODES, None, 20 * S, rejoin_ns=2 * S)

    def at(t: float) -> tuple[list[str], list[tuple[str, str]]]:
        seg = imp.at(int(t * S))
        return sorted(seg.out), sorted(seg.cut)
    assert at(4.5) == (["n1", "n2"], [])
    assert at(5.2) == (["n2"], [("n3", "n4")])           # n1 back at 3.1 + 2
    assert at(7) == (["n2"], [("n3", "n4"), ("n4", "n5")])
    assert at(8.15) == (["n2"], [("n4", "n5")])          # n3-n4 back at 6.0 + 2
    assert at(9) == (["n2"], [("n4", "n5"), ("n5", "n1")])
    assert at(10.2) == (["n2"], [("n5", "n1")])          # the heal took at 8.1 + 2


def test_a_quorum_needs_a_majority_linked_both_ways():
    imp = impairment.Impairment(NODES, NODES, [])
    ring = impairment.Segment(0, 1, frozenset(), frozenset(
        {(a, b) for a, b in [("n1", "n3"), ("n1", "n4"), ("n2", "n4"), ("n2", "n5"),
                             ("n3", "n5")]} | {(b, a) for a, b in [
                                 ("n1", "n3"), ("n1", "n4"), ("n2", "n4"), ("n2", "n5"),
                                 ("n3", "n5")]}), False)
    # Jepsen's majorities ring: n1 reaches n2 and n5 both ways: it can lead.
    assert imp.quorum_ok(ring) and imp.leader_ok("n1", ring)
    assert not imp.leader_ok("n3", ring.__class__(0, 1, frozenset({"n2"}), ring.cut, False))
    split = impairment.Segment(0, 1, frozenset({"n4", "n5"}), frozenset({("n1", "n2")}), False)
    assert not imp.leader_ok("n1", split)     # n1 reaches only n3 back
    assert imp.leader_ok("n3", split)         # n3 reaches n1 and n2 both ways: a star will do
    assert imp.quorum_ok(split)
    assert not imp.quorum_ok(impairment.Segment(0, 1, frozenset({"n3", "n4", "n5"}),
                                                frozenset(), False))


def test_the_report_explains_each_new_anomaly_in_a_sentence():
    from checkers.anomaly_text import sentence as explain
    [lost] = check(two_followers_down(), n1_resigns_and_n2_leads(20))["anomalies"]
    assert explain(lost).startswith("Leader n1 (epoch 1) lost its leadership at 20.0 s")
    h = outage(15, 25, [(10, "kill", {"nodes": ["n4", "n5"]}),
                        (30, "start", {"nodes": ["n4", "n5"]})])
    [gap] = check(h, led_by_n1())["anomalies"]
    assert "for 10.0 s of it" in explain(gap)
    [summed] = check(stalls([(12, 16), (20, 24), (28, 32)], TWO_FOLLOWERS_DOWN),
                     led_by_n1())["anomalies"]
    assert explain(summed).startswith("In 3 windows without a successful op (from 12.01 s")


def test_a_leader_whose_own_removal_was_answered_in_doubt_may_resign():
    """A run under stress (hunt-fp, docs/hunt.md): the leader appended its own
    removal, lost its leadership before answering (`leader_lost`), led again,
    and resigned when the removal committed. Recorded as a removal in doubt
    (its node named), the fault took it: excused. Recorded as a refusal (a
    no-op, as the membership fault did before), nothing took it: flagged."""
    in_doubt = {"change": "remove", "nodes": ["n1"], "ok": False, "error": "leader_lost",
                "definite": False, "in_doubt": {"n1": "leader_lost"}}
    refused = {"change": "remove", "nodes": ["n1"], "ok": False, "error": "leader_lost",
               "noop": "remove n1 refused: leader_lost"}
    verdicts = {}
    for name, value in (("in-doubt", in_doubt), ("refused", refused)):
        h = H()
        h.reads(0.5, 40)
        h.nemesis(19.5, "membership", value)
        h.nemesis(25, "restore-voters", {"nodes": ["n1"]} if name == "in-doubt"
                  else {"nodes": [], "noop": "no voter was removed"})
        verdicts[name] = check(h, n1_resigns_and_n2_leads(20))
    assert verdicts["in-doubt"]["valid"] is True, verdicts["in-doubt"]["anomalies"]
    assert types(verdicts["refused"]) == ["leader-change-while-healthy"]


# --- pressure on a node set: a starved majority is a quorum taken ------------------


def pressed(fault: str, nodes: list[str], from_s: float = 10, to_s: float = 30) -> H:
    h = H()
    h.reads(0.5, 40)
    h.nemesis(from_s, fault, {"nodes": nodes, "targets": "majority" if len(nodes) > 2
                               else "minority" if len(nodes) == 2 else "one"})
    h.nemesis(to_s, {"cpu": "cpu-restore", "memory": "memory-restore",
                     "stress": "stress-stop"}[fault], {"nodes": nodes})
    return h


def test_a_leader_lost_while_a_majority_is_starved_passes_and_with_one_starved_is_flagged():
    for fault in ("cpu", "memory", "stress"):
        majority = check(pressed(fault, ["n2", "n3", "n4"]), n1_resigns_and_n2_leads(20))
        assert majority["valid"] is True, (fault, majority["anomalies"])
        # The leader's own node starved, a quorum of four not: today's rule,
        # a leader that has a quorum without the starved node keeps it.
        one = check(pressed(fault, ["n1"]), n1_resigns_and_n2_leads(20))
        assert types(one) == ["leader-change-while-healthy"], fault
        [a] = one["anomalies"]
        assert a["in_force"] == [{"from_s": 16.0, "out": [], "cut": 0, "starved": ["n1"]}]
        two = check(pressed(fault, ["n1", "n5"]), n1_resigns_and_n2_leads(20))
        assert types(two) == ["leader-change-while-healthy"], fault


def test_an_outage_while_a_majority_is_starved_passes_and_while_a_minority_is_flagged():
    majority = outage(15, 25, [(10, "stress", {"nodes": ["n1", "n2", "n3"]}),
                               (30, "stress-stop", {"nodes": ["n1", "n2", "n3"]})])
    assert check(majority, led_by_n1())["valid"] is True
    minority = outage(15, 25, [(10, "stress", {"nodes": ["n1", "n2"]}),
                               (30, "stress-stop", {"nodes": ["n1", "n2"]})])
    assert types(check(minority, led_by_n1())) == ["unavailable-while-healthy"]
    # Who led unknown (no Leader events): a starved minority may hold the
    # leader, but a starved leader is no leader taken: no failover excused.
    assert types(check(minority, None)) == ["unavailable-while-healthy"]
    assert check(majority, None)["valid"] is True


def test_a_starved_majority_is_excused_only_until_a_failover_after_its_heal():
    # Healed at 18.1; back a rejoin (failover, 3 s) later; then failover 3 s +
    # op timeout 1 s excused, to 25.1; a resignation at 33 is beyond it.
    late = check(pressed("cpu", ["n3", "n4", "n5"], 10, 18), n1_resigns_and_n2_leads(33))
    assert types(late) == ["leader-change-while-healthy"]
    soon = check(pressed("cpu", ["n3", "n4", "n5"], 10, 18), n1_resigns_and_n2_leads(24))
    assert soon["valid"] is True, soon["anomalies"]


def test_starved_nodes_count_against_a_quorum_with_those_down_but_not_as_down():
    h = H()
    h.nemesis(1, "cpu", {"nodes": ["n1", "n2"]})
    h.nemesis(2, "kill", {"nodes": ["n3"]})
    h.nemesis(3, "start", {"nodes": ["n3"]})
    h.nemesis(4, "cpu-restore", {"nodes": ["n1", "n2"]})
    h.nemesis(5, "memory", {"nodes": ["n4"]})
    h.nemesis(6, "memory-restore", {})      # healed through the hunt: names none
    imp = impairment.timeline(h.ops, NODES, None, 10 * S)

    def at(t: float) -> tuple[list[str], list[str], bool, bool]:
        seg = imp.at(int(t * S))
        return sorted(seg.out), sorted(seg.starved), imp.quorum_ok(seg), imp.leader_ok("n1", seg)
    assert at(1.5) == ([], ["n1", "n2"], True, True)
    assert at(2.5) == (["n3"], ["n1", "n2"], False, True)   # two starved + one down of five
    assert at(3.5) == ([], ["n1", "n2"], True, True)
    assert at(4.5) == ([], [], True, True)
    assert at(5.5) == ([], ["n4"], True, True)
    assert at(6.5) == ([], [], True, True)
    assert imp.takes == [{"f": "kill", "nodes": ["n3"], "start": 2 * S}]
