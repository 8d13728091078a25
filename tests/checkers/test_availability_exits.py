"""A node whose process exited with no kill of the harness (a host fault's OOM
kill, a crash: the harness's exit records) is out from that moment until it
starts again, as if a fault had killed it. Twins: the same resignation with
and without the exit record."""

from __future__ import annotations

from checkers import availability, impairment
from checkers.history import Op
from tests.checkers.test_availability_health import (
    START,
    H,
    S,
    check,
    n1_resigns_and_n2_leads,
    run,
    types,
)


def start_line(t_s: float, node: str) -> dict:
    return {"t": START + int(t_s * S), "node": node, "event": "start", "epoch": 1}


def minority_killed_after_n5_died() -> H:
    """n2 and n3 killed at 23 s, started again at 30 s with n5 (the heal names
    every node that is down)."""
    h = H()
    h.reads(0.5, 40)
    h.nemesis(10, "memory", {"nodes": ["n5"]})
    h.nemesis(15, "memory-restore", {"nodes": ["n5"], "oom_kills": {"n5": 1}})
    h.nemesis(23, "kill", {"nodes": ["n2", "n3"]})
    h.nemesis(30, "start", {"nodes": ["n2", "n3", "n5"]})
    return h


N5_EXIT = [{"node": "n5", "monotonic_ns": START + 13 * S, "status": -9, "signal": "SIGKILL"}]


def test_a_leader_resigning_once_an_exited_node_leaves_no_quorum_passes():
    h = minority_killed_after_n5_died()
    v = availability.check(h.ops, n1_resigns_and_n2_leads(24), run(), exits=N5_EXIT)
    assert types(v) == []


def test_the_same_resignation_without_the_exit_record_is_flagged():
    h = minority_killed_after_n5_died()
    assert types(check(h, n1_resigns_and_n2_leads(24))) == ["leader-change-while-healthy"]


def test_an_exited_node_is_back_at_its_next_start_line_or_the_next_heal_starting_it():
    h = minority_killed_after_n5_died()
    exited = {"n5": [13 * S]}
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S,
                             exited=exited)
    assert "n5" in tl.at(20 * S).out and "n5" in tl.at(29 * S).out
    # The memory fault's heal at 15 s names it but starts nothing; `start` at 30 s does.
    assert "n5" not in tl.at(31 * S).out
    # Its own start line, earlier than any heal, brings it back first.
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S,
                             exited=exited, started={"n5": [18 * S]})
    assert "n5" in tl.at(17 * S).out and "n5" not in tl.at(19 * S).out
    # Exit times come from the records and the run's start.
    assert availability.exit_times(N5_EXIT, START) == {"n5": [13 * S]}
    assert availability.exit_times(N5_EXIT, None) == {}



# --- final reads pinned to a node that never came back --------------------------


def pinned_reads_after_n2_died(node: str) -> H:
    """Every node served until 15 s; n2's process exited at 14 s and never
    started again (a bit flip at rest in its cluster id: CI, seed 5). Then
    final reads pinned to `node`, each failing at once, retried every 0.2 s
    for 10 s: the only ops in flight."""
    h = H()
    h.reads(0.5, 15)
    t, process = 15.5, 300
    while t < 25.5:
        h.ops.append(Op(len(h.ops), int(t * S), process, "invoke", "read", None, node=node))
        h.ops.append(Op(len(h.ops), int((t + 0.01) * S), process, "fail", "read", None,
                        node=node))
        t, process = t + 0.2, process + 1
    return h


def with_start_lines() -> dict[str, list[dict]]:
    """n1 leads; every node printed its timers at its start (a 4.75 s limit
    for a window with no fault in force)."""
    events = n1_resigns_and_n2_leads(1000)   # leads throughout: no change within the run
    for node, evs in events.items():
        evs.insert(0, dict(start_line(0.1, node), election_timeout_ms=500,
                           fetch_timeout_ms=750))
    return events


N2_EXIT = [{"node": "n2", "monotonic_ns": START + 14 * S, "status": 1, "signal": None}]


def test_final_reads_pinned_to_a_node_that_exited_for_good_are_no_outage():
    v = availability.check(pinned_reads_after_n2_died("n2").ops, with_start_lines(), run(),
                           exits=N2_EXIT)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["unexplained_gaps"] == 1    # the window is still reported


def test_the_same_reads_with_the_node_up_or_pinned_to_a_live_one_are_unexplained():
    no_exit = availability.check(pinned_reads_after_n2_died("n2").ops, with_start_lines(),
                                 run())
    assert types(no_exit) == ["unexplained-unavailable"]
    live = availability.check(pinned_reads_after_n2_died("n1").ops, with_start_lines(), run(),
                              exits=N2_EXIT)
    assert types(live) == ["unexplained-unavailable"]
    assert "asking_a_node_out_s" not in live["anomalies"][0]


def pinned_reads_after_a_failed_voter_restore(node: str) -> H:
    """n2-n5 removed as voters at 12 s; the restore that should add them back
    fails (its record names none of them), so the impairment counts them out
    to the end, and n1, never seeing its leader again, too. Then the same
    pinned reads, to `node`, whose process never exited."""
    h = pinned_reads_after_n2_died(node)
    h.nemesis(12, "membership", {"change": "remove", "nodes": ["n2", "n3", "n4", "n5"]})
    h.nemesis(13, "restore-voters", {"nodes": [], "failed": {"n2": "timeout"}})
    h.ops.sort(key=lambda op: op.time)
    return h


def test_a_cluster_left_stuck_is_an_outage_though_the_impairment_counts_its_nodes_out():
    """Only a process that exited excuses asking it: a node counted out for want
    of a voter set or a leader (the cluster a failed heal left stuck) is what
    `unexplained-unavailable` is there to report."""
    h = pinned_reads_after_a_failed_voter_restore("n2")
    stuck = availability.check(h.ops, with_start_lines(), run())
    assert types(stuck) == ["unexplained-unavailable"], stuck["anomalies"]
    gone = availability.check(h.ops, with_start_lines(), run(), exits=N2_EXIT)
    assert gone["valid"] is True, gone["anomalies"]


def test_an_exited_node_is_gone_until_it_starts_is_named_or_answers():
    h = H()
    h.add(20, "p1", "ok", "read", None)
    h.ops[-1] = Op(h.ops[-1].index, h.ops[-1].time, "p1", "ok", "read", None, node="n3")
    h.nemesis(30, "start", {"nodes": ["n4"]})
    exited = {"n2": [5 * S], "n3": [6 * S], "n4": [7 * S], "n5": [8 * S]}
    spans = availability.exited_spans(h.ops, exited, {"n2": [12 * S]})
    healed = h.ops[-1].time           # the start's completion names n4
    assert spans == {"n2": [(5 * S, 12 * S)], "n3": [(6 * S, 20 * S)],
                     "n4": [(7 * S, healed)], "n5": [(8 * S, healed)]}


def test_a_squeeze_lifted_brings_no_exited_node_back_and_one_restarting_it_does():
    """The OOM killer took n2 under a squeeze (3 nodes, seed 1, 2026-11-27);
    the squeeze's heal names n2 and, before it restarted what the kills took,
    started nothing: the final reads pinned to n2 are no outage. A heal that
    says it `restarted` n2 brings it back: the same reads are one."""
    exited = {"n2": [5 * S]}
    for heal, back in (({"nodes": ["n2"], "oom_kills": {"n2": 1}}, None),
                       ({"nodes": ["n2"], "oom_kills": {"n2": 1}, "restarted": ["n2"]}, 9)):
        h = H()
        h.nemesis(4, "memory", {"nodes": ["n2"]})
        h.nemesis(9, "memory-restore", heal)
        healed = h.ops[-1].time
        h.add(20, "p1", "ok", "read", None)     # the history's end
        spans = availability.exited_spans(h.ops, exited, {})
        assert spans == {"n2": [(5 * S, healed if back else 20 * S)]}
        h = pinned_reads_after_n2_died("n2")
        h.nemesis(4, "memory", {"nodes": ["n2"]})
        h.nemesis(14.5, "memory-restore", heal)
        h.ops.sort(key=lambda op: op.time)
        v = availability.check(h.ops, with_start_lines(), run(), exits=N2_EXIT)
        assert types(v) == ([] if back is None else ["unexplained-unavailable"]), heal
