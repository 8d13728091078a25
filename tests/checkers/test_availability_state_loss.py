"""A fault that may take a node's voting state (`FaultOp.loses_state`: a
truncate cutting its quorum-state file, the raft store's lose-state) keeps
the node out of the quorum past its restart, until its own lines show it
back: a correct voter abstains until it caught up with a leader (KIP-996,
"Disk failure"), so a majority's state lost leaves a cluster that can elect
no one. Twins on five nodes (n1 leads): a majority's state lost, then no
service, passes; a minority's lost, or a majority's kept, and the healthy
majority stops serving, is flagged."""

from __future__ import annotations

from checkers import availability, impairment
from checkers.faults import FAULT_OPS
from nodes.events import EventKind, VoteLoss
from tests.checkers.test_availability_health import (
    START,
    H,
    S,
    led_by_n1,
    outage,
    role,
    run,
    types,
)

LOST = EventKind("state_gone", ("what",), "test: it found its voting state gone")
REGAINED = EventKind("may_vote", ("epoch",), "test: it caught up and votes again")
VOTE_LOSS = (VoteLoss(LOST, "votes-missing", REGAINED),)


def line(t_s: float, node: str, event: str, **fields: object) -> dict:
    return {"t": START + int(t_s * S), "node": node, "event": event, **fields}


def truncated(nodes: list[str], lose: bool = True) -> tuple[list, dict]:
    """Each node truncated in its own op (2 s apart from 10 s), started 1 s
    later; where `lose`, it says at its start that its voting state is gone."""
    faults, events = [], led_by_n1()
    for i, node in enumerate(nodes):
        t = 10 + 2 * i
        faults += [(t, "truncate", {"nodes": [node], "mode": "length"}),
                   (t + 1, "start", {"nodes": [node]})]
        if lose:
            events[node].append(line(t + 1.2, node, LOST.name, what="votes-missing"))
        events[node].append(line(t + 1.2, node, "start", epoch=1))
    return faults, events


def check(h: H, events: dict, vote_loss: tuple[VoteLoss, ...] = VOTE_LOSS) -> dict:
    return availability.check(h.ops, events, run(), vote_loss=vote_loss)


def test_truncate_and_lose_state_are_declared_to_take_voting_state_and_kill_not():
    assert FAULT_OPS["truncate"].loses_state
    assert FAULT_OPS["lose-state"].loses_state   # the raft store's row
    assert FAULT_OPS["disk"].loses_state         # disk:truncate, disk:bitflip
    assert not FAULT_OPS["kill"].loses_state
    assert not FAULT_OPS["lose-unsynced"].loses_state


def test_a_majoritys_voting_state_lost_then_no_leader_passes():
    faults, events = truncated(["n3", "n4", "n5"])
    v = check(outage(16, 40, faults), events)
    assert types(v) == []
    assert [o["node"] for o in v["stats"]["voting_state_lost"]] == ["n3", "n4", "n5"]
    # The same stall after three kills, which take no state: flagged.
    kills = [(t, "kill" if f == "truncate" else f, v) for t, f, v in faults]
    assert types(check(outage(16, 40, kills), events)) == ["unavailable-while-healthy"]


def test_a_minoritys_voting_state_lost_and_the_healthy_majority_stops_is_flagged():
    faults, events = truncated(["n4", "n5"])
    v = check(outage(16, 40, faults), events)
    assert types(v) == ["unavailable-while-healthy"]


def test_a_majority_truncated_that_kept_its_voting_state_excuses_nothing_after_it():
    # Its system declares the line saying the state is gone; none came: the
    # cuts took log bytes only, and the nodes were back at their restart.
    faults, events = truncated(["n3", "n4", "n5"], lose=False)
    v = check(outage(20, 40, faults), events)
    assert types(v) == ["unavailable-while-healthy"]


def test_a_node_is_back_at_its_line_saying_it_votes_again():
    faults, events = truncated(["n3", "n4", "n5"])
    events["n5"].append(line(25, "n5", REGAINED.name, epoch=2))
    # n5 votes again at 25 s: a quorum (n1, n2, n5) from then on; after a
    # failover + op timeout (4 s) and the 6 s allowed, the outage is flagged.
    assert types(check(outage(16, 34, faults), events)) == []
    assert types(check(outage(16, 40, faults), events)) == ["unavailable-while-healthy"]


def test_a_system_declaring_no_lines_for_it_counts_back_a_follower_of_a_known_leader():
    faults, events = truncated(["n3", "n4", "n5"], lose=False)
    # No vote-loss lines declared: every truncated node counts as having lost
    # its state until it follows a leader or leads.
    assert types(check(outage(16, 40, faults), events, vote_loss=())) == []
    events["n4"].append(role(22, "n4", "Follower", 1, "n1"))
    events["n5"].append(role(22, "n5", "Follower", 1, "n1"))
    assert types(check(outage(16, 40, faults), events, vote_loss=())) == [
        "unavailable-while-healthy"]


def test_a_majority_lost_keeps_the_fault_in_force_for_the_unexplained_rule():
    # No leader lines at all: with nothing in force after the last start the
    # long outage would be unexplained; the lost state keeps it explained.
    faults, events = truncated(["n3", "n4", "n5"])
    no_roles = {n: [ev for ev in evs if ev["event"] != "role"] for n, evs in events.items()}
    v = check(outage(16, 40, faults), no_roles)
    assert types(v) == []
    assert all(g["explained"] for g in v["stats"]["gaps"])


def test_timeline_keeps_a_node_out_from_the_fault_until_its_line():
    faults, events = truncated(["n3"])
    events["n3"].append(line(20, "n3", REGAINED.name, epoch=2))
    h = outage(40, 40, faults)
    lines = availability.state_lines(events, START, VOTE_LOSS)
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S,
                             state_lines=lines)
    assert "n3" in tl.at(int(10.5 * S)).out and "n3" in tl.at(19 * S).out
    assert "n3" not in tl.at(21 * S).out
    assert tl.state_out == [{"f": "truncate", "node": "n3", "start": 10 * S, "end": 20 * S}]
    # Without events (a system leaving no lines) it is back as any restarted node.
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S)
    assert "n3" not in tl.at(19 * S).out and tl.state_out == []


def test_a_loss_is_the_restart_it_was_said_at_not_an_earlier_faults():
    # n3 truncated at 10 s (restarted at 11 s, state kept: no line), again at
    # 30 s (restarted at 31 s with its state gone): out from 30 s, not 10 s.
    h = H()
    for t in (10, 30):
        h.nemesis(t, "truncate", {"nodes": ["n3"]})
        h.nemesis(t + 1, "start", {"nodes": ["n3"]})
    events = led_by_n1()
    events["n3"] += [line(11.2, "n3", "start", epoch=1),
                     line(31.2, "n3", LOST.name, what="votes-missing"),
                     line(31.2, "n3", "start", epoch=1)]
    lines = availability.state_lines(events, START, VOTE_LOSS)
    started = availability.start_lines(events, START)
    tl = impairment.timeline(h.ops, ["n1", "n2", "n3", "n4", "n5"], None, 40 * S,
                             state_lines=lines, started=started)
    assert [(o["start"], o["end"]) for o in tl.state_out] == [(30 * S, 40 * S)]
    assert "n3" not in tl.at(20 * S).out and "n3" in tl.at(35 * S).out
