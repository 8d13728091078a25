"""The consistency-model lattice as data (checkers/elle/consistency.py), and
pass/fail twins, written from the definitions, for the anomaly kinds it
judges that the older tests do not: lost update (P4), G-nonadjacent-item and
its realtime form, future read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from checkers.elle import check, consistency, rw_register
from checkers.elle.cycles import classify
from checkers.elle.kinds import PROCESS, REALTIME, RW, WR, WW

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import History  # noqa: E402
from tests.checkers.test_elle_rw_register import History as RegisterHistory  # noqa: E402

# --- the lattice ------------------------------------------------------------------


def boundary(anomalies: list[str]) -> dict[str, list[str]]:
    out = consistency.ruled_out(anomalies)
    is_not = consistency.weakest(out)
    return {"not": is_not, "also_not": sorted(out - set(is_not))}


def test_every_model_has_its_place_and_the_implications_have_no_cycle() -> None:
    models = set(consistency.MODELS)
    assert set(consistency.PROSCRIBES) == models
    assert all(set(v) <= models for v in consistency.MODEL_IMPLIES.values())
    for m in models:
        # a model implies itself and no model implying it
        assert all(m not in consistency.implied_models(o)
                   for o in consistency.implied_models(m) if o != m), m
    # strict serializability is the top, read uncommitted the bottom
    assert consistency.implied_models("strict-serializable") == models
    assert consistency.implied_models("read-uncommitted") == {"read-uncommitted"}
    assert all(a in consistency.PROHIBITED[m] for m in models for a in ("G0",))


def test_aliases_name_the_same_models_and_unknown_names_are_refused() -> None:
    assert consistency.canonical("PL-2+") == "consistent-view"
    assert consistency.canonical("strong-serializable") == "strict-serializable"
    assert consistency.canonical("PL-SI") == "snapshot-isolation"
    with pytest.raises(ValueError, match="unknown consistency model 'bogus'; one of PL-1"):
        consistency.canonical("bogus")


# Elle's consistency_model_test.clj boundaries, restricted to the models named here.
@pytest.mark.parametrize(("anomalies", "want"), [
    (["G-single"], {"not": ["consistent-view"],
                    "also_not": ["forward-consistent-view", "serializable", "snapshot-isolation",
                                 "strict-serializable", "strong-session-serializable",
                                 "strong-session-snapshot-isolation",
                                 "strong-snapshot-isolation"]}),
    (["G2", "internal"], {"not": ["read-atomic"],
                          "also_not": ["serializable", "snapshot-isolation",
                                       "strict-serializable", "strong-session-serializable",
                                       "strong-session-snapshot-isolation",
                                       "strong-snapshot-isolation", "update-atomic"]}),
    (["G-single-realtime"], {"not": ["strong-snapshot-isolation"],
                             "also_not": ["strict-serializable"]}),
    (["lost-update"], None),
])
def test_boundaries_agree_with_elles(anomalies: list[str], want: dict | None) -> None:
    got = boundary(anomalies)
    if want is None:
        assert got["not"] == ["cursor-stability", "update-atomic"]
    else:
        assert got == want


def test_snapshot_isolation_allows_g2_item_but_not_g_nonadjacent() -> None:
    assert not boundary(["G2-item"])["not"] == ["snapshot-isolation"]
    assert "snapshot-isolation" not in consistency.ruled_out(["G2-item"])
    assert "snapshot-isolation" in consistency.ruled_out(["G-nonadjacent-item"])
    assert "repeatable-read" in consistency.ruled_out(["G-nonadjacent-item"])
    assert "cursor-stability" not in consistency.ruled_out(["G-nonadjacent-item"])


def test_cycles_are_named_by_their_rw_edges_as_elle_names_them() -> None:
    def steps(*kinds: int) -> list[tuple[int, int, int]]:
        return [(i, i + 1, k) for i, k in enumerate(kinds)]
    assert classify(steps(WW, WW)) == "G0"
    assert classify(steps(WW, WR)) == "G1c"
    assert classify(steps(RW, WR)) == "G-single-item"
    assert classify(steps(RW, WR, RW, WR)) == "G-nonadjacent-item"
    assert classify(steps(RW, RW)) == "G2-item"
    # the last edge comes before the first
    assert classify(steps(RW, WR, WW, RW)) == "G2-item"
    assert classify(steps(RW, WR, RW, PROCESS)) == "G-nonadjacent-item-process"
    assert classify(steps(RW, PROCESS, RW, REALTIME)) == "G-nonadjacent-item-realtime"


# --- lost update ------------------------------------------------------------------


def register_lost_update(fixed: bool) -> RegisterHistory:
    # Both read x = 1 and both write x; fixed, the second read the first's write.
    h = RegisterHistory()
    h.txn(0, [["w", "x", 1]])
    h.concurrent((1, [["r", "x", 1], ["w", "x", 2]]),
                 (2, [["r", "x", 2 if fixed else 1], ["w", "x", 3]]))
    return h


def list_lost_update(fixed: bool) -> History:
    h = History()
    h.txn(0, [["append", "x", 1]])
    h.concurrent((1, [["r", "x", [1]], ["append", "x", 2]]),
                 (2, [["r", "x", [1, 2] if fixed else [1]], ["append", "x", 3]]))
    h.txn(3, [["r", "x", [1, 2, 3]]])
    return h


@pytest.mark.parametrize("run,make", [(rw_register.check, register_lost_update),
                                      (check, list_lost_update)])
def test_lost_update_twins(run, make) -> None:
    bad = run(make(False).ops, model="cursor-stability")
    assert bad["valid"] is False
    [a] = [a for a in bad["anomalies"] if a["type"] == "lost-update"]
    assert a["key"] == "x" and len(a["txns"]) == 2
    assert bad["stats"]["not"] == ["cursor-stability", "update-atomic"]
    assert bad["stats"]["models"]["read-committed"]["valid"] is True
    good = run(make(True).ops, model="strict-serializable")
    assert good["valid"] is True and good["anomalies"] == []


@pytest.mark.parametrize("same_version", [True, False])
def test_a_lost_update_is_found_whether_or_not_the_txns_reads_agree_elsewhere(
        same_version: bool) -> None:
    """The version two txns read is named by its length where their reads
    are prefixes of the key's longest read: txn 1 also reads y as no other
    txn does (so not all its reads are prefixes), txn 2's all are; both read
    x as [1] (twin: txn 2 read [1, 2]) and appended to x. And two reads of
    x that are no prefix, both [7]: a lost update named by its elements."""
    h = History()
    h.txn(0, [["append", "x", 1], ["append", "y", 8]])
    h.txn(4, [["r", "y", [8]]])
    h.concurrent((1, [["r", "y", [9]], ["r", "x", [1]], ["append", "x", 2]]),
                 (2, [["r", "x", [1] if same_version else [1, 2]], ["append", "x", 3]]))
    h.txn(3, [["r", "x", [1, 2, 3]]])
    h.concurrent((5, [["r", "x", [7]], ["append", "x", 10]]),
                 (6, [["r", "x", [7]], ["append", "x", 11]]))
    lost = [a for a in check(h.ops)["anomalies"] if a["type"] == "lost-update"]
    pairs = sorted((a["value"], sorted(t["process"] for t in a["txns"])) for a in lost)
    assert pairs == ([([1], [1, 2]), ([7], [5, 6])] if same_version else [([7], [5, 6])])


def test_one_txn_reading_then_writing_twice_is_no_lost_update() -> None:
    h = RegisterHistory()
    h.txn(1, [["r", "x", None], ["w", "x", 1], ["w", "x", 2]])
    h.txn(2, [["r", "x", 2]])
    assert rw_register.check(h.ops)["valid"] is True


# --- G-nonadjacent ----------------------------------------------------------------


def long_fork(fixed: bool) -> History:
    # T2 sees T1's x but not T3's y; T4 sees T3's y but not T1's x: the two
    # readers saw the two writes in opposite orders. rw, wr, rw, wr.
    h = History()
    h.concurrent((1, [["append", "x", 1]]),
                 (2, [["r", "x", [1]], ["r", "y", []]]),
                 (3, [["append", "y", 1]]),
                 (4, [["r", "y", [1]], ["r", "x", [1] if fixed else []]]))
    return h


def test_long_fork_is_g_nonadjacent_and_snapshot_isolation_forbids_it() -> None:
    v = check(long_fork(False).ops, model="snapshot-isolation")
    assert v["valid"] is False
    assert set(v["stats"]["anomaly_counts"]) == {"G-nonadjacent-item"}
    assert v["stats"]["not"] == ["repeatable-read", "snapshot-isolation"]
    [c] = v["anomalies"]
    assert [s["kind"] for s in c["steps"]].count("rw") == 2
    good = check(long_fork(True).ops, model="strict-serializable")
    assert good["valid"] is True and good["anomalies"] == []


def realtime_long_fork(fixed: bool) -> History:
    # T0 reads z = [1] (T3's) but misses T1's x; T1 completes before T2, on
    # another process, begins; T2 misses T3's z. rw, realtime, rw, wr: each
    # rw edge follows another kind. Fixed, T2 begins before T1 completes.
    h = History()
    h.invoke(0, [["r", "x", None], ["r", "z", None]])
    h.invoke(3, [["append", "z", 1]])
    h.invoke(1, [["append", "x", 1]])
    if fixed:
        h.invoke(2, [["r", "z", None]])
        h.ok(1)
    else:
        h.ok(1)
        h.invoke(2, [["r", "z", None]])
    h.ok(2)
    h.ok(3)
    h.ok(0)
    for op in h.ops:   # what the ok txns read
        if op.type == "ok" and op.process == 0:
            op.value[:] = [["r", "x", []], ["r", "z", [1]]]
        if op.type == "ok" and op.process == 2:
            op.value[:] = [["r", "z", []]]
    return h


def test_realtime_long_fork_rules_out_strong_snapshot_isolation_only() -> None:
    v = check(realtime_long_fork(False).ops, model="strong-snapshot-isolation")
    assert v["valid"] is False
    assert "G-nonadjacent-item-realtime" in v["stats"]["anomaly_counts"]
    assert v["stats"]["models"]["snapshot-isolation"]["valid"] is True
    assert v["stats"]["models"]["serializable"]["valid"] is True
    good = check(realtime_long_fork(True).ops, model="strong-snapshot-isolation")
    assert good["valid"] is True, good["anomalies"]


def test_adjacent_rw_edges_are_g2_item_which_snapshot_isolation_allows() -> None:
    h = History()
    h.concurrent((1, [["r", "x", []], ["append", "y", 1]]),
                 (2, [["r", "y", []], ["append", "x", 1]]))
    h.txn(3, [["r", "x", [1]], ["r", "y", [1]]])
    v = check(h.ops, model="snapshot-isolation")
    assert v["valid"] is True and set(v["stats"]["anomaly_counts"]) == {"G2-item"}


# --- future read ------------------------------------------------------------------


@pytest.mark.parametrize("registers", [False, True])
def test_future_read_twins(registers: bool) -> None:
    def make(fixed: bool) -> History:
        h = RegisterHistory() if registers else History()
        if registers:
            h.txn(1, [["r", "x", None if fixed else 1], ["w", "x", 1]])
            h.txn(1, [["r", "x", 1]])
        else:
            h.txn(1, [["r", "x", [] if fixed else [1]], ["append", "x", 1]])
            h.txn(1, [["r", "x", [1]]])
        return h
    run = rw_register.check if registers else check
    bad = run(make(False).ops, model="read-committed")
    assert bad["valid"] is False and "future-read" in bad["stats"]["anomaly_counts"]
    assert bad["stats"]["not"] == ["read-committed"]
    good = run(make(True).ops, model="strict-serializable")
    assert good["valid"] is True and good["anomalies"] == []


# --- the verdict names the boundary -----------------------------------------------


def test_the_verdict_names_the_weakest_ruled_out_and_the_strongest_possible() -> None:
    v = check(long_fork(False).ops, model="read-committed")
    assert v["valid"] is True
    assert v["stats"]["not"] == ["repeatable-read", "snapshot-isolation"]
    assert "strict-serializable" in v["stats"]["also_not"]
    # still possible, the strongest: forward consistent view forbids no
    # G-nonadjacent (only G-SIb), and implies consistent view and below
    assert set(v["stats"]["possible"]) == {"forward-consistent-view", "strong-read-committed",
                                           "update-atomic"}
