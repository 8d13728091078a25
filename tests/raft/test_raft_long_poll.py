"""KIP-595 fetch long-poll: the leader holds a fetch that has nothing to return
and answers it the moment it has news; a follower reports its flushes at once."""

from __future__ import annotations

from nodes.raft.core import Config, Core
from nodes.raft.messages import message
from nodes.raft.roles import CANDIDATE, FOLLOWER, LEADER, PROSPECTIVE
from nodes.raft.sim import Sim

CID = "test-cluster"
THREE = ("n1", "n2", "n3")


def msg(kind: str, sender: str, to: str, epoch: int, **fields) -> dict:
    return message(kind, sender, to, CID, epoch, **fields)


def leader(**cfg) -> Core:
    core = Core(Config("n1", THREE, CID, **cfg), None, [], seed=1)
    while core.role != PROSPECTIVE:
        core.tick()
    for pre_vote, role in ((True, CANDIDATE), (False, LEADER)):
        core.receive(msg("vote_response", "n2", "n1", core.epoch, granted=True,
                         pre_vote=pre_vote, leader=None))
        assert core.role == role
    core.ready()
    core.flushed(core.log_end)
    return core


def fetch(core: Core, offset: int, flushed: int, sender: str = "n2") -> None:
    core.receive(msg("fetch", sender, "n1", core.epoch, fetch_offset=offset,
                     last_fetched_epoch=core.last_epoch if offset else 0,
                     flushed_offset=flushed))


def responses(core: Core, to: str = "n2") -> list[dict]:
    return [m for m in core.ready().messages if m["type"] == "fetch_response" and m["to"] == to]


def caught_up(core: Core) -> None:
    """n2 fetches everything, flushes it, and learns the resulting high watermark."""
    fetch(core, 0, 0)
    assert len(responses(core)) == 1
    end = core.log_end
    fetch(core, end, end)
    assert core.high_watermark == end
    [answer] = responses(core)
    assert answer["high_watermark"] == end and answer["entries"] == []


def test_fetch_at_log_end_is_held_until_a_proposal_arrives():
    core = leader(fetch_interval_ticks=5)
    caught_up(core)
    fetch(core, core.log_end, core.log_end)
    assert responses(core) == [], "nothing new: the fetch is held"
    first = core.propose(b"a")
    core.propose(b"b")
    [answer] = responses(core)
    assert [row[0] for row in answer["entries"]] == [first, first + 1]


def test_held_fetch_is_answered_when_the_high_watermark_advances():
    core = leader(fetch_interval_ticks=5)
    caught_up(core)
    offset = core.propose(b"a")
    fetch(core, offset, offset)  # n2 is behind: answered at once with the entry
    assert len(responses(core)) == 1
    fetch(core, offset + 1, offset, sender="n2")  # n2 appended, not flushed: held
    fetch(core, offset, offset, sender="n3")
    assert len(responses(core, "n3")) == 1
    fetch(core, offset + 1, offset, sender="n3")
    assert responses(core) == [] and responses(core, "n3") == []
    core.flushed(offset + 1)
    fetch(core, offset + 1, offset + 1, sender="n3")  # n3's flush commits the entry
    assert core.high_watermark == offset + 1
    ready = core.ready().messages
    by_peer = {m["to"]: m for m in ready if m["type"] == "fetch_response"}
    assert by_peer["n2"]["high_watermark"] == offset + 1, "held n2 hears of the commit"
    assert by_peer["n3"]["high_watermark"] == offset + 1


def test_held_fetch_is_answered_empty_after_the_fetch_interval():
    core = leader(fetch_interval_ticks=3)
    caught_up(core)
    fetch(core, core.log_end, core.log_end)
    for _ in range(2):
        core.tick()
        assert responses(core) == []
    core.tick()
    [answer] = responses(core)
    assert answer["entries"] == [] and answer["error"] is None


def test_newer_fetch_supersedes_the_held_one():
    core = leader(fetch_interval_ticks=5)
    caught_up(core)
    end = core.log_end
    fetch(core, end, end)
    fetch(core, end, end)
    core.propose(b"a")
    assert len(responses(core)) == 1, "one answer, to the newest fetch"


def test_follower_reports_its_flush_with_a_fetch_at_once():
    core = Core(Config("n1", THREE, CID), None, [], seed=1)
    core.receive(msg("begin_quorum_epoch", "n2", "n1", 1, leader="n2"))
    assert core.role == FOLLOWER
    core.ready()
    core.receive(msg("fetch_response", "n2", "n1", 1, leader="n2", error=None,
                     fetch_offset=0, last_fetched_epoch=0, high_watermark=0,
                     entries=[[0, 1, b"a"]], diverging_epoch=None,
                     diverging_end_offset=None))
    [refetch] = [m for m in core.ready().messages if m["type"] == "fetch"]
    assert refetch["flushed_offset"] == 0
    core.flushed(1)
    [report] = [m for m in core.ready().messages if m["type"] == "fetch"]
    assert report["flushed_offset"] == 1 and report["fetch_offset"] == 1


def test_sim_commits_within_a_few_ticks_of_a_proposal():
    # With the long-poll nothing waits on a timer: propose -> replicate ->
    # flush -> report -> commit takes message delays and flushes only.
    sim = Sim(seed=3, flush_lag=(0, 0), config={"fetch_interval_ticks": 50,
                                                "fetch_timeout_ticks": 200,
                                                "election_timeout_ticks": 100})
    name = sim.settle(2000)
    sim.run(60)
    _, offset = sim.propose(b"x")
    start = sim.now
    assert sim.run_until(lambda: sim.core(name).high_watermark > offset, 50)
    assert sim.now - start <= 4, sim.describe()
    assert sim.violations == []
