"""Convergence: the run's bounded wait for its nodes to agree, and divergence's
`unconverged` rule on what the wait recorded and what the dumps show."""

from __future__ import annotations

import hashlib

from checkers import divergence
from harness.run.lifecycle import wait_for_convergence


def entry(offset: int, epoch: int, hw: int) -> dict:
    digest = hashlib.sha256(f"{offset}/{epoch}".encode()).hexdigest()[:16]
    return {"offset": offset, "epoch": epoch, "committed": offset < hw, "digest": digest,
            "payload": None}


def dump(node: str, end: int, hw: int, epoch: int = 1, tail_epoch: int | None = None,
         tail_from: int | None = None) -> dict:
    entries = [entry(o, tail_epoch if tail_from is not None and o >= tail_from else epoch, hw)
               for o in range(end)]
    epochs = sorted({e["epoch"] for e in entries})
    return {"node": node, "log_start_offset": 0, "log_end_offset": end, "high_watermark": hw,
            "epoch": max(epochs, default=epoch),
            "epochs": [[ep, min(e["offset"] for e in entries if e["epoch"] == ep)]
                       for ep in epochs], "entries": entries}


def record(progress: dict, converged: bool, not_live: list[str] | None = None) -> dict:
    return {"converged": converged, "waited_s": 0.4 if converged else 11.25, "bound_s": 11.25,
            "live": sorted(progress), "not_live": not_live or [], "progress": progress}


def same(end: int) -> dict:
    return {"committed": end, "log_end": end}


def types(v: dict) -> list[str]:
    return [a["type"] for a in v["anomalies"]]


def test_nodes_that_agreed_after_the_wait_pass():
    dumps = {n: dump(n, 20, 20) for n in ("n1", "n2", "n3")}
    v = divergence.check(dumps, convergence=record({n: same(20) for n in dumps}, True))
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["convergence"]["converged"] is True


def test_a_node_still_behind_when_the_wait_ran_out_is_flagged():
    dumps = {"n1": dump("n1", 20, 20), "n2": dump("n2", 20, 20), "n3": dump("n3", 12, 12)}
    progress = {"n1": same(20), "n2": same(20), "n3": same(12)}
    v = divergence.check(dumps, convergence=record(progress, False))
    assert types(v) == ["unconverged"]
    [a] = v["anomalies"]
    assert (a["node"], a["why"], a["progress"]) == ("n3", "behind at the end", same(12))
    assert a["bound_s"] == 11.25


def test_the_same_lag_without_a_wait_stays_a_statistic():
    # A run that dumped at once (or predates the wait): a follower one fetch
    # behind is no finding.
    dumps = {"n1": dump("n1", 20, 20), "n2": dump("n2", 20, 20), "n3": dump("n3", 12, 12)}
    v = divergence.check(dumps)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["convergence"].startswith("not judged")


def test_a_node_whose_dump_ends_before_the_committed_end_is_flagged_even_if_probed_equal():
    dumps = {"n1": dump("n1", 20, 20), "n2": dump("n2", 20, 20), "n3": dump("n3", 15, 15)}
    v = divergence.check(dumps, convergence=record({n: same(20) for n in dumps}, True))
    assert types(v) == ["unconverged"]
    assert v["anomalies"][0]["why"] == "log ends before the committed end"


def test_a_node_apart_from_what_another_committed_is_flagged():
    # n3 kept an uncommitted tail of epoch 1 where the others committed epoch 2.
    dumps = {"n1": dump("n1", 20, 20, tail_epoch=2, tail_from=15),
             "n2": dump("n2", 20, 20, tail_epoch=2, tail_from=15),
             "n3": dump("n3", 20, 15)}
    progress = {"n1": same(20), "n2": same(20), "n3": {"committed": 15, "log_end": 20}}
    v = divergence.check(dumps, {"n1": [{"event": "role", "role": "Leader", "epoch": 1},
                                        {"event": "role", "role": "Leader", "epoch": 2}]},
                         convergence=record(progress, False))
    assert set(types(v)) == {"unconverged"}
    whys = {(a["node"], a["why"]) for a in v["anomalies"]}
    assert ("n3", "apart from what another committed") in whys
    assert ("n3", "behind at the end") in whys


def test_a_node_not_live_at_the_end_is_not_judged_here():
    dumps = {"n1": dump("n1", 20, 20), "n2": dump("n2", 20, 20), "n3": dump("n3", 12, 12)}
    progress = {"n1": same(20), "n2": same(20)}
    v = divergence.check(dumps, convergence=record(progress, True, not_live=["n3"]))
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["convergence"]["not_live"] == ["n3"]


def test_the_wait_stops_as_soon_as_every_live_node_agrees():
    now = [0.0]
    reports = iter([{"n1": same(5), "n2": same(3), "n3": None},
                    {"n1": same(5), "n2": same(5), "n3": same(4)},
                    {"n1": same(5), "n2": same(5), "n3": same(5)}])

    def sleep(s: float) -> None:
        now[0] += s

    r = wait_for_convergence(lambda: next(reports), ["n1", "n2", "n3", "n4"], 10.0,
                             clock=lambda: now[0], sleep=sleep)
    assert r["converged"] is True and r["waited_s"] == 0.4
    assert r["live"] == ["n1", "n2", "n3"] and r["not_live"] == ["n4"]


def test_the_wait_is_bounded_and_says_it_did_not_converge():
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    r = wait_for_convergence(lambda: {"n1": same(5), "n2": same(3)}, ["n1", "n2"], 2.0,
                             clock=lambda: now[0], sleep=sleep)
    assert r["converged"] is False and r["waited_s"] >= 2.0
    assert r["progress"]["n2"] == same(3)
