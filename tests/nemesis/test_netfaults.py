"""Network quality faults, without root: what the variants mean, which links
a plan picks, the exact nftables/tc/iptables text each produces, the labels,
the schedule and the registry, and how availability judges a run under them
(a lossy link takes nothing away: a gap under it is flagged, the same gap
under a partition is excused)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from checkers import availability
from checkers.faults import BANDWIDTH, FAULT_OPS, PACKET
from checkers.history import Op
from nemesis import netshape
from nemesis.base import FAULTS, make_fault
from nemesis.label import fault_label
from nemesis.netquality import (
    LINK_SHAPES,
    parse_bandwidth,
    parse_packet,
    plan_bandwidth,
    plan_packet,
)
from nemesis.netshape import htb_batch, iptables_script, nft_script
from nemesis.schedule import plan_params, schedule

NODES = ["n1", "n2", "n3", "n4", "n5"]


def test_defaults_with_and_without_a_value() -> None:
    assert parse_packet(None) == ({"loss": 10.0}, "isolate-one")
    assert parse_packet("duplicate") == ({"duplicate": 10.0}, "isolate-one")
    assert parse_packet("delay") == ({"delay": 100.0}, "isolate-one")
    assert parse_packet("corrupt")[0] == {"corrupt": 5.0}
    # netem's reorder: it needs a delay for the packets that do not go at once.
    assert parse_packet("reorder=30")[0] == {"reorder": 30.0, "delay": 10.0}
    assert parse_bandwidth(None) == ({"rate_bit": 1e6}, "isolate-one")


def test_values_units_and_combinations() -> None:
    q, links = parse_packet("loss=2.5%,delay=0.05s,jitter=10,links=all")
    assert q == {"loss": 2.5, "delay": 50.0, "jitter": 10.0} and links == "all"
    assert parse_bandwidth("rate=500kbit,links=one-way") == ({"rate_bit": 500e3}, "one-way")
    assert parse_bandwidth("rate=2Mbit")[0] == {"rate_bit": 2e6}


@pytest.mark.parametrize("variant", [
    "loss=0", "loss=101", "loss=ten", "delay=fast", "jitter=5ms", "delay=10ms,jitter=20ms",
    "loss=5,loss=6", "speed=3", "links=everywhere", "links=all", "delay=61s"])
def test_bad_packet_variants_are_refused(variant: str) -> None:
    with pytest.raises(ValueError):
        parse_packet(variant)


@pytest.mark.parametrize("variant", ["rate=1", "rate=1kbit", "rate=3mb", "loss=5"])
def test_bad_bandwidth_variants_are_refused(variant: str) -> None:
    with pytest.raises(ValueError):
        parse_bandwidth(variant)


@pytest.mark.parametrize("shape", [s for s in LINK_SHAPES if s != "isolate-leader"])
def test_plans_are_pure_and_name_node_pairs(shape: str) -> None:
    a = plan_packet(random.Random(4), NODES, f"loss=5,links={shape}")
    b = plan_packet(random.Random(4), list(reversed(NODES)), f"loss=5,links={shape}")
    assert a == b
    assert a["links"] and all(x != y and {x, y} <= set(NODES) for x, y in a["links"])
    assert a["quality"] == {"loss": 5.0} and a["shape"] == shape


def test_link_shapes_act_where_asked() -> None:
    rng = random.Random(2)
    one = plan_packet(rng, NODES, "loss,links=link-one-way")["links"]
    both = plan_packet(rng, NODES, "loss,links=link")["links"]
    every = plan_packet(rng, NODES, "loss,links=all")["links"]
    iso = plan_bandwidth(rng, NODES, None)
    assert len(one) == 1
    assert len(both) == 2 and both[0] == both[1][::-1]
    assert len(every) == 20
    [node] = iso["nodes"]
    assert len(iso["links"]) == 8 and all(node in pair for pair in iso["links"])
    # The leader is found at inject time, as partition:isolate-leader's.
    assert "links" not in plan_packet(rng, NODES, "loss,links=isolate-leader")
    with pytest.raises(ValueError):
        plan_packet(rng, ["n1"], None)


IPS = {"n1": "10.77.0.10", "n2": "10.77.0.11", "n3": "10.77.0.12"}
PORTS = {"n1": "veth0", "n2": "veth1", "n3": "veth2"}


def test_nft_script_drops_and_duplicates_per_directed_pair() -> None:
    script = nft_script("fl_t", {"loss": 20.0, "duplicate": 100.0}, [("n1", "n2"), ("n3", "n2")],
                        IPS, PORTS)
    assert 'devices = { "veth0", "veth2" }' in script
    assert "ip saddr 10.77.0.10 ip daddr 10.77.0.11 numgen random mod 10000 < 2000 drop" in script
    # 100 %: every packet, no draw (numgen cannot draw 10000 of 0..9999).
    assert 'ip saddr 10.77.0.12 ip daddr 10.77.0.11 dup to "veth1"' in script
    assert script.count("drop") == 2 and script.count("dup to") == 2


def test_htb_batch_gives_each_sender_its_class_on_the_receivers_port() -> None:
    lines = htb_batch(2e6, [("n1", "n2"), ("n3", "n2"), ("n2", "n1")], IPS, PORTS)
    assert lines.count("qdisc replace dev veth1 root handle 1: htb default 1") == 1
    assert "qdisc replace dev veth0 root handle 1: htb default 1" in lines
    limited = [x for x in lines if "rate 2000000bit ceil 2000000bit" in x]
    assert len(limited) == 3
    assert ("filter add dev veth1 parent 1: protocol ip prio 1 u32 match ip src "
            "10.77.0.12/32 flowid 1:b") in lines


def test_iptables_script_adds_and_removes_its_own_chain_only() -> None:
    add = iptables_script("FLQ7", 7, [("n1", "n2")], IPS, add=True)
    assert add.splitlines() == [
        "*filter", ":FLQ7 - [0:0]",
        "-A FLQ7 -s 10.77.0.10/32 -d 10.77.0.11/32 -j NFQUEUE --queue-num 7 --queue-bypass",
        "-I FORWARD 1 -j FLQ7", "COMMIT"]
    remove = iptables_script("FLQ7", 7, [], {}, add=False)
    assert remove.splitlines() == ["*filter", "-D FORWARD -j FLQ7", "-F FLQ7", "-X FLQ7",
                                   "COMMIT"]


def test_labels_say_what_and_where() -> None:
    value = plan_packet(random.Random(1), ["n1", "n2", "n3"],
                        "delay=50ms,jitter=5ms,loss=1,links=link")
    a, b = value["nodes"]
    assert fault_label("packet", value) == f"packet loss 1%, delay 50ms+-5ms: {a}-{b} (link)"
    assert fault_label("bandwidth", {"quality": {"rate_bit": 1.5e6}, "links": [["n1", "n2"]]}) \
        == "bandwidth rate 1.5mbit: n1->n2"
    assert fault_label("restore-packets", {"restored": [["n1", "n2"], ["n2", "n1"]]}) \
        == "restore-packets: restored n1-n2"


def test_registered_with_their_heals_and_scheduled_with_recorded_links() -> None:
    assert FAULTS["packet"].heal_f == FAULT_OPS["packet"].heal_f == PACKET.heal_f
    assert FAULTS["bandwidth"].heal_f == BANDWIDTH.heal_f
    assert PACKET.lasting and BANDWIDTH.lasting
    events = schedule(3, ["packet:loss=5,links=all", "bandwidth"], 2.0, 30.0, NODES)
    injects = [e for e in events if e.action == "inject"]
    assert {e.fault for e in injects} == {"packet:loss=5,links=all", "bandwidth"}
    assert all(e.params["links"] for e in injects)
    assert sum(e.action == "heal" for e in events) == len(injects)
    assert plan_params("packet", random.Random(0), NODES)["quality"] == {"loss": 10.0}


def test_queue_settings_are_refused_where_the_queue_cannot_run(monkeypatch: Any) -> None:
    monkeypatch.setattr(netshape, "queue_available", lambda: "no netfilterqueue here")
    with pytest.raises(ValueError, match="no netfilterqueue here"):
        make_fault("packet:delay=10ms")
    make_fault("packet:loss=5")     # nftables alone: no queue needed
    make_fault("bandwidth")


def test_heal_without_inject_changes_nothing() -> None:
    fault = make_fault("packet:loss=5")
    assert fault.heal(None) == {"restored": [], "noop": "no link was degraded"}


# --- availability under a degraded link --------------------------------------------

S = 1_000_000_000


def history(fault: str, value: dict, heal: str) -> list[Op]:
    ops: list[Op] = []

    def add(t: float, process: Any, typ: str, f: str, v: Any = None) -> None:
        ops.append(Op(len(ops), int(t * S), process, typ, f, v))

    t = 0.5
    while t < 10:
        add(t, 0, "invoke", "read")
        add(t + 0.01, 0, "ok", "read", 1)
        t += 0.5
    add(10, "nemesis", "invoke", fault, value)
    add(10.1, "nemesis", "info", fault, value)
    t, p = 10.0, 100
    while t < 24:             # 14 s of clients asking and timing out
        add(t, p, "invoke", "write", 1)
        add(t + 1, p, "info", "write", 1)
        t, p = t + 1, p + 1
    add(24.5, "nemesis", "invoke", heal, None)
    add(24.6, "nemesis", "info", heal, {"restored": value.get("links") or []})
    t = 25.0
    while t < 40:
        add(t, 0, "invoke", "read")
        add(t + 0.01, 0, "ok", "read", 1)
        t += 0.5
    return ops


LINKS = [["n1", "n2"], ["n1", "n3"], ["n2", "n1"], ["n3", "n1"]]


def test_a_gap_under_packet_loss_is_flagged_but_under_a_partition_excused() -> None:
    run = {"run_id": "x", "config": {"nodes": 3}, "nodes": {"n1": {}, "n2": {}, "n3": {}}}
    lossy = history("packet", {"quality": {"loss": 30.0}, "nodes": ["n1"], "links": LINKS},
                    "restore-packets")
    v = availability.check(lossy, None, run)
    assert v["valid"] is False
    assert "unavailable-while-healthy" in {a["type"] for a in v["anomalies"]}
    [gap] = v["stats"]["gaps"]
    assert gap["explained"] and gap["faults"][0]["f"] == "packet"
    assert gap["faults"][0]["end_s"] == 24.6      # in force until its heal
    # The twin: every link cut (no quorum anywhere) takes the cluster away.
    everything = [[a, b] for a in ("n1", "n2", "n3") for b in ("n1", "n2", "n3") if a != b]
    cut = history("partition", {"shape": "all", "nodes": ["n1"], "cut": everything}, "heal")
    assert availability.check(cut, None, run)["valid"] is True


def test_replay_reapplies_the_recorded_links_not_a_new_draw() -> None:
    """isolate-leader's links are found at inject time: the replay must be
    handed the links that ran (the leader may differ when it replays)."""
    from harness.run.replay import replay_events
    spec = "packet:delay=400ms,links=isolate-leader"
    ran = {"quality": {"delay": 400.0}, "shape": "isolate-leader", "nodes": ["n3"],
           "links": [["n1", "n3"], ["n2", "n3"], ["n3", "n1"], ["n3", "n2"]]}
    run = {"schedule_offset_ns": 0,
           "planned_schedule": [
               {"time": 2.0, "action": "inject", "fault": spec,
                "params": {"quality": {"delay": 400.0}, "shape": "isolate-leader"}, "seed": 9},
               {"time": 8.0, "action": "heal", "fault": spec, "params": {}, "seed": 0}],
           "schedule": [
               {"time": 2_000_000_000, "f": "packet", "fault": spec, "value": ran,
                "error": None},
               {"time": 8_000_000_000, "f": "restore-packets", "fault": spec,
                "value": {"restored": ran["links"]}, "error": None}]}
    inject, heal = replay_events(run)
    assert inject["params"]["links"] == ran["links"] and inject["seed"] == 9
    assert inject["params"]["quality"] == {"delay": 400.0}
    assert (heal["action"], heal["time"]) == ("heal", 8.0)


def test_nemesis_option_keeps_settings_with_their_fault() -> None:
    from harness.run.config import parse_nemesis
    assert parse_nemesis("kill,packet:delay=50ms,jitter=5ms,links=all,partition:one-way") == [
        "kill", "packet:delay=50ms,jitter=5ms,links=all", "partition:one-way"]
    assert parse_nemesis("bandwidth:rate=1mbit, pause") == ["bandwidth:rate=1mbit", "pause"]


def test_report_draws_the_fault_until_its_heal_and_in_its_nodes_lanes() -> None:
    from harness.report.data import fault_list, node_spans
    value = {"quality": {"loss": 30.0}, "shape": "isolate-one", "nodes": ["n1"],
             "links": LINKS}
    ops = [Op(0, 2 * S, "nemesis", "invoke", "packet", value),
           Op(1, 2 * S + 100, "nemesis", "info", "packet", value),
           Op(2, 9 * S, "nemesis", "invoke", "restore-packets", None),
           Op(3, 9 * S + 100, "nemesis", "info", "restore-packets", {"restored": LINKS})]
    [window], noops = fault_list(ops, 20 * S)
    assert (window.f, window.start, window.end) == ("packet", 2 * S, 9 * S + 100)
    assert window.label == "packet loss 30%: n1-n2, n1-n3 (isolate-one)"
    [span] = node_spans([window], ["n1", "n2", "n3"])
    assert (span.node, span.state, span.end) == ("n1", "packet", 9 * S + 100)
    assert noops == []


def test_coverage_counts_a_degraded_link_at_its_ends_never_as_a_majority() -> None:
    from checkers.coverage import EVENTS, coverage
    links = [["n1", "n2"], ["n2", "n1"]]
    value = {"quality": {"delay": 400.0}, "nodes": ["n1"], "links": links}
    ops = [Op(0, S, "nemesis", "invoke", "packet", value),
           Op(1, S + 1000, "nemesis", "info", "packet", value),
           Op(2, 2 * S, "nemesis", "invoke", "restore-packets", None),
           Op(3, 2 * S + 1000, "nemesis", "info", "restore-packets", {"restored": links})]
    on_leader = coverage(ops, ["n1", "n2", "n3"], [(0, "n1")], EVENTS)
    assert on_leader["acted"] == 1 and on_leader["hit_leader"] == 1
    assert on_leader["per_node"] == {"n1": 1, "n2": 1, "n3": 0}
    assert on_leader["hit_majority"] == 0
    elsewhere = coverage(ops, ["n1", "n2", "n3"], [(0, "n3")], EVENTS)
    assert elsewhere["hit_leader"] == 0


@pytest.mark.parametrize("nemesis", ["packet:loss=200", "packet:delay=5ms,jitter=9ms",
                                     "bandwidth:rate=fast", "packet:loss=5,links=nowhere"])
def test_a_bad_setting_is_refused_before_anything_starts(nemesis: str, tmp_path: Any,
                                                         capsys: Any) -> None:
    from harness.cli import main
    code = main(["run", "--system", "raft", "--workload", "kv", "--nemesis", nemesis,
                 "--time-limit", "5", "--results", str(tmp_path / "results")])
    assert code == 254
    assert not (tmp_path / "results").exists()
    assert "bad nemesis variant" in capsys.readouterr().err


def test_the_hunt_plays_them_by_default_through_the_registry() -> None:
    from faultline import registry
    from harness.run.config import hunt_repertoire
    for system in ("raft", "etcd"):
        repertoire = hunt_repertoire(registry.get(system), 3)
        assert {"packet", "bandwidth"} <= set(repertoire), repertoire
