"""The raft store's durable-epochs checker (nodes.raft.checkers.epochs): a
node's epoch never goes down unless the node reported a data_loss in between
or in the same incarnation. Moved out of the generic elections checker, which
keeps one leader per epoch (tests/checkers/test_elections.py)."""

from __future__ import annotations

from nodes.raft.checkers import epochs
from tests.checkers.test_elections import healthy, role, start


def test_healthy_epochs_pass():
    v = epochs.check(healthy())
    assert v["valid"] is True, v["anomalies"]


def test_a_follower_falling_back_an_epoch_fails():
    events = healthy()
    events["n3"].append(role(88, "n3", "Follower", 1, "n2"))
    v = epochs.check(events)
    assert [(a["type"], a["from_epoch"], a["to_epoch"]) for a in v["anomalies"]] == [
        ("epoch-regression", 2, 1)]


def test_no_events_is_unknown():
    assert epochs.check({})["valid"] == "unknown"
    assert epochs.check({"n1": []})["valid"] == "unknown"


def test_figures_name_the_nodes_and_count_data_loss_reports():
    events = healthy()
    events["n3"] += [{"t": 95, "node": "n3", "event": "data_loss", "what": "quorum-state"}]
    v = epochs.check(events)
    assert v["stats"]["nodes"] == ["n1", "n2", "n3"]
    assert v["stats"]["data_loss_events"] == 1


def test_every_run_gets_it_beside_the_invariants():
    from checkers.registry import CHECKS, CLUSTER_CHECKERS
    assert CHECKS["durable-epochs"] in CLUSTER_CHECKERS


def test_epoch_regression_across_a_plain_restart_fails():
    events = healthy()
    events["n3"] += [start(100, "n3", 0), role(110, "n3", "Follower", 2, "n2")]
    v = epochs.check(events)
    [a] = v["anomalies"]
    assert a["type"] == "epoch-regression" and a["node"] == "n3"
    assert (a["from_epoch"], a["to_epoch"], a["restarted_between"]) == (2, 0, True)


def test_epoch_regression_excused_by_data_loss_after_the_start_line():
    events = healthy()
    events["n3"] += [start(100, "n3", 0),
                     {"t": 101, "node": "n3", "event": "data_loss",
                      "what": "quorum-state-missing"},
                     role(110, "n3", "Follower", 2, "n2")]
    assert epochs.check(events)["valid"] is True


def test_epoch_regression_excused_by_data_loss_before_the_start_line():
    events = healthy()
    events["n3"] += [{"t": 99, "node": "n3", "event": "data_loss",
                      "what": "quorum-state-missing"},
                     start(100, "n3", 0)]
    assert epochs.check(events)["valid"] is True


def test_data_loss_in_an_earlier_incarnation_does_not_excuse_a_later_regression():
    events = healthy()
    events["n3"] += [start(100, "n3", 0),
                     {"t": 101, "node": "n3", "event": "data_loss", "what": "x"},
                     role(110, "n3", "Follower", 3, "n1"),
                     start(200, "n3", 1)]
    v = epochs.check(events)
    assert [(a["type"], a["from_epoch"], a["to_epoch"]) for a in v["anomalies"]] == [
        ("epoch-regression", 3, 1)]


def test_a_line_without_an_epoch_does_not_end_the_regression_check():
    events = healthy()
    events["n3"] += [{"t": 95, "node": "n3", "event": "truncate", "to": 1, "from": 3,
                      "reason": "diverging-epoch"},
                     role(110, "n3", "Follower", 1, "n1")]
    v = epochs.check(events)
    [regression] = v["anomalies"]
    assert regression["type"] == "epoch-regression"
    assert (regression["node"], regression["from_epoch"], regression["to_epoch"]) == ("n3", 2, 1)
    assert regression["restarted_between"] is False


def test_a_node_re_formatted_for_another_cluster_starts_its_epochs_afresh():
    def start(t, epoch, cluster):
        return {"t": t, "event": "start", "epoch": epoch, "cluster_id": cluster}

    def role(t, epoch):
        return {"t": t, "event": "role", "role": "Follower", "epoch": epoch, "leader": "n1"}

    lines = [start(0, 0, "A"), role(1, 3), start(2, 0, "B"), role(3, 0),
             start(4, 3, "A"), role(5, 4)]
    v = epochs.check({"n2": lines})
    assert v["valid"] is True, v["anomalies"]
    # Back in A below the epoch it had reached there: a regression after all.
    lines[4] = start(4, 2, "A")
    v = epochs.check({"n2": lines})
    assert [a["type"] for a in v["anomalies"]] == ["epoch-regression"]
    assert (v["anomalies"][0]["from_epoch"], v["anomalies"][0]["to_epoch"]) == (3, 2)


def test_lines_before_the_first_start_line_are_the_same_cluster_when_none_is_named():
    events = {"n1": [role(5, "n1", "Follower", 5, "n2"),
                     {"t": 10, "node": "n1", "event": "start"},
                     role(20, "n1", "Follower", 3, "n3")]}
    regressions = [a for a in epochs.check(events)["anomalies"]
                   if a["type"] == "epoch-regression"]
    assert [(a["from_epoch"], a["to_epoch"]) for a in regressions] == [(5, 3)]
