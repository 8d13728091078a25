"""Convergence when no leader can be elected: voters whose quorum state a
fault destroyed abstain until they catch up with a leader (KIP-996); when
they leave no majority of any voter set a node may canvass with, the cluster
cannot converge however correct, and `unconverged` is not judged. Twins: the
same stuck cluster with a majority still able to vote is flagged. Which lines
say a voter may not vote is the system's vocabulary (nodes.raft.events
VOTE_LOSS, brought with the raft store's checkers)."""

from __future__ import annotations

from checkers import divergence
from nodes.raft.events import VOTE_LOSS


def dump(node: str, end: int, hw: int) -> dict:
    entries = [{"offset": o, "epoch": 1, "committed": o < hw, "digest": f"d{o}"}
               for o in range(end)]
    return {"node": node, "log_start_offset": 0, "log_end_offset": end, "high_watermark": hw,
            "epoch": 1, "epochs": [[1, 0]], "entries": entries}


DUMPS = {"n1": dump("n1", 10, 8), "n2": dump("n2", 10, 0), "n3": dump("n3", 6, 0)}
STUCK = {"converged": False, "waited_s": 11.3, "bound_s": 11.25, "live": ["n1", "n2", "n3"],
         "progress": {"n1": {"committed": 8, "log_end": 10},
                      "n2": {"committed": 0, "log_end": 10},
                      "n3": {"committed": 0, "log_end": 6}}}
# The raft store's run: stuck, and its vocabulary's vote-loss lines declared.
STUCK_RAFT = {"convergence": STUCK, "vote_loss": (VOTE_LOSS,)}


def start(t: int, node: str, voters: list[str]) -> dict:
    return {"t": t, "node": node, "event": "start", "epoch": 0, "voters": voters}


def lost(t: int, node: str) -> dict:
    return {"t": t, "node": node, "event": "data_loss", "what": "quorum-state-missing"}


def events(n1_voters: list[str], n3_caught_up: bool = False) -> dict[str, list[dict]]:
    """n3 lost its quorum state; n1 and n2 hold `n1_voters` (n2's own removal
    appended but not committed), n3 the original three."""
    evs = {"n1": [start(1, "n1", ["n1", "n2", "n3"]),
                  {"t": 5, "node": "n1", "event": "voters", "state": "appended",
                   "voters": n1_voters, "offset": 9, "epoch": 1}],
           "n2": [start(1, "n2", ["n1", "n2", "n3"]),
                  {"t": 5, "node": "n2", "event": "voters", "state": "appended",
                   "voters": n1_voters, "offset": 9, "epoch": 1}],
           "n3": [start(1, "n3", ["n1", "n2", "n3"]), start(6, "n3", ["n1", "n2", "n3"]),
                  lost(6, "n3")]}
    if n3_caught_up:
        evs["n3"].append({"t": 8, "node": "n3", "event": "votes_again", "epoch": 1,
                          "leader": "n1", "hw": 8})
    return evs


def unconverged(v: dict) -> list[dict]:
    return [a for a in v["anomalies"] if a["type"] == "unconverged"]


def test_no_majority_may_vote_leaves_convergence_unjudged():
    v = divergence.check(DUMPS, events(["n1", "n3"]), **STUCK_RAFT)
    assert unconverged(v) == []
    stats = v["stats"]["convergence"]
    assert "no voter set" in stats["not_judged_because"]
    assert stats["voteless"] == {"n3": 6} and stats["voter_sets"] == [["n1", "n3"]]


def test_a_majority_that_may_vote_must_converge():
    # n1 and n2 keep all three voters: the two of them may elect a leader.
    v = divergence.check(DUMPS, events(["n1", "n2", "n3"]), **STUCK_RAFT)
    assert {a["node"] for a in unconverged(v)} == {"n2", "n3"}


def test_a_voter_that_caught_up_votes_again():
    v = divergence.check(DUMPS, events(["n1", "n3"], n3_caught_up=True), **STUCK_RAFT)
    assert {a["node"] for a in unconverged(v)} == {"n2", "n3"}


def test_without_lost_state_nothing_is_excused():
    evs = events(["n1", "n3"])
    evs["n3"] = evs["n3"][:2]
    assert divergence.no_voting_quorum(evs, (VOTE_LOSS,)) is None
    assert {a["node"] for a in unconverged(divergence.check(DUMPS, evs, **STUCK_RAFT))} \
        == {"n2", "n3"}


def test_lines_no_vocabulary_declares_excuse_nothing():
    v = divergence.check(DUMPS, events(["n1", "n3"]), convergence=STUCK)
    assert {a["node"] for a in unconverged(v)} == {"n2", "n3"}
    assert divergence.no_voting_quorum(events(["n1", "n3"])) is None


def test_the_raft_store_brings_its_vote_loss_with_its_checkers():
    from checkers.registry import VOTE_LOSS as REGISTERED
    assert VOTE_LOSS in REGISTERED
