"""Elections checker: one leader per epoch (a node's epoch going back is the
raft store's durable-epochs checker's: tests/raft/test_raft_durable_epochs.py)."""

from __future__ import annotations

from checkers import elections


def role(t: int, node: str, role_name: str, epoch: int, leader: str | None) -> dict:
    return {"t": t, "node": node, "event": "role", "role": role_name, "epoch": epoch,
            "leader": leader}


def start(t: int, node: str, epoch: int) -> dict:
    return {"t": t, "node": node, "event": "start", "epoch": epoch, "log_end": 0,
            "recovered_truncated_bytes": 0}


def healthy() -> dict[str, list[dict]]:
    return {
        "n1": [start(0, "n1", 0), role(10, "n1", "Candidate", 1, None),
               role(20, "n1", "Leader", 1, "n1"), role(90, "n1", "Follower", 2, "n2")],
        "n2": [start(0, "n2", 0), role(30, "n2", "Follower", 1, "n1"),
               role(80, "n2", "Candidate", 2, None), role(85, "n2", "Leader", 2, "n2")],
        "n3": [start(0, "n3", 0), role(30, "n3", "Follower", 1, "n1"),
               {"t": 40, "node": "n3", "event": "hw", "hw": 3, "epoch": 1},
               role(86, "n3", "Follower", 2, "n2")],
    }


def test_healthy_elections_pass_with_figures():
    v = elections.check(healthy())
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["elections"] == 2
    assert v["stats"]["leaders_by_epoch"] == {"1": "n1", "2": "n2"}
    assert v["stats"]["max_epoch"] == {"n1": 2, "n2": 2, "n3": 2}


def test_two_leaders_in_one_epoch_fail():
    events = healthy()
    events["n3"].append(role(87, "n3", "Leader", 2, "n3"))
    v = elections.check(events)
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert a["type"] == "multiple-leaders" and a["epoch"] == 2
    assert a["leaders"] == ["n2", "n3"]
    assert {c["by"] for c in a["claims"]} >= {"n2", "n3"}


def test_follower_naming_a_different_leader_fails():
    events = healthy()
    events["n3"].append(role(88, "n3", "Follower", 1, "n2"))
    v = elections.check(events)
    assert [a["type"] for a in v["anomalies"]] == ["multiple-leaders"]
    assert v["anomalies"][0]["leaders"] == ["n1", "n2"]


def test_no_events_is_unknown():
    assert elections.check({})["valid"] == "unknown"
    assert elections.check({"n1": []})["valid"] == "unknown"


def test_figures_name_the_nodes():
    v = elections.check(healthy())
    assert v["stats"]["nodes"] == ["n1", "n2", "n3"]


def test_a_node_in_the_leader_role_is_a_claim_whatever_its_leader_field_says():
    # Two nodes in the Leader role for epoch 2, one line lacking the leader
    # field: still two leaders.
    events = healthy()
    events["n3"].append(role(87, "n3", "Leader", 2, None))
    v = elections.check(events)
    [a] = v["anomalies"]
    assert a["type"] == "multiple-leaders" and a["leaders"] == ["n2", "n3"]
    # Claims in the order the nodes made them, each with role and time.
    assert [(c["by"], c["role"], c["leader"], c["t"]) for c in a["claims"]] == [
        ("n1", "Follower", "n2", 90), ("n2", "Leader", "n2", 85),
        ("n3", "Follower", "n2", 86), ("n3", "Leader", "n3", 87)]


def test_only_role_lines_claim_a_leader():
    # Other lines name a leader too (pre_vote: the granter's leader); they are
    # not claims, so a stale name there is no second leader.
    events = healthy()
    events["n3"].append({"t": 87, "node": "n3", "event": "pre_vote", "epoch": 2,
                         "candidate": "n1", "role": "Follower", "leader": "n1"})
    assert elections.check(events)["valid"] is True
    events["n3"].append(role(88, "n3", "Follower", 2, "n1"))
    v = elections.check(events)
    assert [(a["type"], a["epoch"], a["leaders"]) for a in v["anomalies"]] == [
        ("multiple-leaders", 2, ["n1", "n2"])]
