"""Fault coverage (checkers.coverage): twins with and without a leader hit,
no-op faults, partitions that do and do not take a majority, and an unknown
leader."""

from checkers.coverage import EVENTS, OBSERVED, coverage, leader_at, summary_line
from checkers.history import NEMESIS, Op

NODES = ["n1", "n2", "n3"]
S = 1_000_000_000


def nem(*pairs):
    """(f, invoke value, completion value) triples -> nemesis ops, 1 s apart."""
    ops, i = [], 0
    for k, (f, inv, done) in enumerate(pairs):
        t = (k + 1) * S
        ops.append(Op(i, t, NEMESIS, "invoke", f, inv))
        ops.append(Op(i + 1, t + 1000, NEMESIS, "info", f, done))
        i += 2
    return ops


KILL_N1 = ("kill", {"nodes": ["n1"]}, {"nodes": ["n1"]})
START_N1 = ("start", {"nodes": ["n1"]}, {"nodes": ["n1"]})
KILL_N3 = ("kill", {"nodes": ["n3"]}, {"nodes": ["n3"]})
START_N3 = ("start", {"nodes": ["n3"]}, {"nodes": ["n3"]})


def test_a_kill_of_the_leader_counts_as_a_leader_hit():
    cov = coverage(nem(KILL_N1, START_N1), NODES, [(0, "n1")], EVENTS)
    assert cov["acted"] == 1 and cov["hit_leader"] == 1 and not cov["leader_never_hit"]
    assert cov["faults"][0]["leader"] == "n1" and cov["faults"][0]["majority"] is False
    assert cov["per_node"] == {"n1": 1, "n2": 0, "n3": 0}
    assert "never touched the leader" not in summary_line(cov)


def test_faults_that_only_touch_followers_say_so():
    cov = coverage(nem(KILL_N3, START_N3), NODES, [(0, "n1")], OBSERVED)
    assert cov["hit_leader"] == 0 and cov["leader_never_hit"]
    assert "never touched the leader" in summary_line(cov)


def test_the_leader_of_the_moment_is_judged():
    # n1 led until 1.5 s, then n3: the kill of n3 at 3 s hits the leader.
    cov = coverage(nem(KILL_N1, START_N1, KILL_N3, START_N3), NODES,
                   [(0, "n1"), (int(2.5 * S), "n3")], EVENTS)
    assert [f["hit_leader"] for f in cov["faults"]] == [True, True]


def test_no_op_faults_are_listed_and_not_counted_as_acting():
    noop = ("pause", {"nodes": ["n1"]}, {"noop": "already paused"})
    cov = coverage(nem(noop), NODES, [(0, "n1")], EVENTS)
    assert cov["acted"] == 0 and cov["noops"] == ["pause"]
    assert not cov["leader_never_hit"]   # nothing acted: nothing to say about the leader
    assert "1 no-op (pause)" in summary_line(cov)


def test_a_partition_isolating_the_minority_is_not_a_majority_but_a_ring_of_cuts_is():
    minority = ("partition", {}, {"cut": [["n3", "n1"], ["n1", "n3"], ["n3", "n2"], ["n2", "n3"]]})
    cov = coverage(nem(minority, ("heal", {}, {})), NODES, [(0, "n1")], EVENTS)
    assert cov["faults"][0]["majority"] is False and cov["faults"][0]["nodes"] == ["n3"]
    assert cov["hit_leader"] == 0   # n1 lost its link to n3, not its quorum
    cov = coverage(nem(minority), NODES, [(0, "n3")], EVENTS)
    assert cov["hit_leader"] == 1
    one_link = ("partition", {}, {"cut": [["n1", "n2"]]})
    cov = coverage(nem(one_link), NODES, [(0, "n1")], EVENTS)
    assert cov["faults"][0]["nodes"] == [] and cov["hit_leader"] == 0
    everyone = [[a, b] for a in NODES for b in NODES if a != b]
    cov = coverage(nem(("partition", {}, {"cut": everyone})), NODES, [(0, "n1")], EVENTS)
    assert cov["faults"][0]["majority"] is True and cov["hit_majority"] == 1


def test_a_kill_of_two_of_three_takes_a_majority():
    two = ("kill", {"nodes": ["n2", "n3"]}, {"nodes": ["n2", "n3"]})
    cov = coverage(nem(two), NODES, [(0, "n1")], EVENTS)
    assert cov["hit_majority"] == 1 and cov["hit_leader"] == 0


def test_without_a_leader_source_hits_are_unknown_not_zero():
    cov = coverage(nem(KILL_N3), NODES, [], None)
    assert cov["hit_leader"] is None and not cov["leader_never_hit"]
    assert "leader hits unknown" in summary_line(cov)


def test_leader_at_takes_the_last_observation():
    obs = [(0, "n1"), (5, None), (9, "n2")]
    assert [leader_at(obs, t) for t in (-1, 0, 6, 9, 100)] == [None, "n1", None, "n2", "n2"]


# --- who led when: events, else the harness's poll, else nothing ---------------

from checkers.coverage import run_coverage, who_led  # noqa: E402

RUN = {"start_monotonic_ns": 100 * S, "config": {"nodes": 3}}


def test_election_events_say_who_led():
    events = {"n3": [{"event": "role", "role": "Leader", "epoch": 2, "t": 100 * S}]}
    leaders, source = who_led(events, RUN)
    assert source == "events" and leaders == [(0, "n3")]
    cov = run_coverage(nem(KILL_N3, START_N3), events, RUN)
    assert cov["hit_leader"] == 1 and cov["line"].startswith("coverage: 1 fault acted")


def test_without_events_the_polled_leaders_count():
    run = {**RUN, "leaders": {"source": "polled DB.leader()", "polls": 9,
                              "changes": [[0, "n1"], [int(0.5 * S), None], [S // 2 + 1, "n2"]]}}
    leaders, source = who_led({}, run)
    assert source == "observed" and [x[1] for x in leaders] == ["n1", None, "n2"]
    cov = run_coverage(nem(KILL_N1, START_N1), {}, run)
    assert cov["hit_leader"] == 0 and cov["leader_never_hit"]   # n2 led by then


def test_with_neither_the_leader_is_not_observed():
    assert who_led({}, RUN) == ([], None)
    cov = run_coverage(nem(KILL_N1, START_N1), {}, RUN)
    assert cov["hit_leader"] is None and "leader hits unknown" in cov["line"]


def test_the_terminal_prints_the_coverage_line_under_the_verdict(tmp_path):
    import io

    from harness.commands.run import print_outcome
    from harness.run.lifecycle import RunOutcome
    line = "coverage: 1 fault acted, 0 hit the leader — the faults never touched the leader"
    doc = {"valid": True, "checkers": {}, "coverage": {"line": line}}
    out = io.StringIO()
    print_outcome(RunOutcome(tmp_path, doc, 0), out)
    verdict, cov = out.getvalue().splitlines()[-2:]
    assert verdict.startswith("verdict: VALID") and cov.strip() == line


def test_a_fault_before_the_first_observation_is_not_called_a_miss():
    cov = coverage(nem(KILL_N3, START_N3), NODES, [(5 * S, "n1")], OBSERVED)
    assert cov["faults"][0]["hit_leader"] is None and not cov["leader_never_hit"]


def test_pressure_reaches_the_nodes_it_names_and_a_majority_when_it_names_one():
    two = ("cpu", {"targets": "majority", "nodes": ["n1", "n2"]},
           {"nodes": ["n1", "n2"], "targets": "majority", "limit": 0.1})
    one = ("stress", {"targets": "one", "nodes": ["n3"]}, {"nodes": ["n3"], "pids": {"n3": 9}})
    cov = coverage(nem(two, ("cpu-restore", {}, {"nodes": ["n1", "n2"]}), one), NODES,
                   [(0, "n1")], EVENTS)
    assert [(f["f"], f["nodes"], f["majority"], f["hit_leader"]) for f in cov["faults"]] == [
        ("cpu", ["n1", "n2"], True, True), ("stress", ["n3"], False, False)]
    assert cov["hit_majority"] == 1 and cov["per_node"] == {"n1": 1, "n2": 1, "n3": 1}
