"""Each anomaly the Elle checker knows, in a hand-written history that has
exactly that anomaly, and in its fixed twin that has none."""

from __future__ import annotations

from typing import Any

import pytest

from checkers import elle
from checkers.history import Op


class History:
    """Builds a history step by step so tests can say what overlaps what."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._open: dict[int, tuple[int, list]] = {}

    def _emit(self, process: int, typ: str, value: Any) -> None:
        self.ops.append(Op(len(self.ops), len(self.ops) * 10, process, typ, "txn", value))

    def invoke(self, process: int, mops: list) -> int:
        self._emit(process, "invoke", self._unknown_reads(mops))
        self._open[process] = mops
        return process

    def ok(self, process: int) -> None:
        self._emit(process, "ok", self._open.pop(process))

    def fail(self, process: int) -> None:
        self._emit(process, "fail", self._unknown_reads(self._open.pop(process)))

    def info(self, process: int) -> None:
        self._emit(process, "info", self._unknown_reads(self._open.pop(process)))

    @staticmethod
    def _unknown_reads(mops: list) -> list:
        return [[f, k, v if f == "append" else None] for f, k, v in mops]

    def txn(self, process: int, mops: list) -> None:
        self.invoke(process, mops)
        self.ok(process)

    def concurrent(self, *txns: tuple[int, list]) -> None:
        for p, mops in txns:
            self.invoke(p, mops)
        for p, _ in txns:
            self.ok(p)


def types(h: History, **kw: Any) -> set[str]:
    v = elle.check(h.ops, **kw)
    return {a["type"] for a in v["anomalies"]}


def g0(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "y", 2]]),
                 (2, [["append", "x", 2], ["append", "y", 1]]))
    h.txn(3, [["r", "x", [1, 2]], ["r", "y", [2, 1] if fixed else [1, 2]]])
    return h


def g1a(fixed: bool) -> History:
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.ok(1) if fixed else h.fail(1)
    h.txn(2, [["r", "x", [1]]])
    return h


def g1b(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "x", 2]]),
                 (2, [["r", "x", [1, 2] if fixed else [1]]]))
    return h


def g1c(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["append", "x", 1], ["r", "y", [] if fixed else [1]]]),
                 (2, [["append", "y", 1], ["r", "x", [1]]]))
    return h


def g_single(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "y", 1]]),
                 (2, [["r", "x", [1] if fixed else []], ["r", "y", [1]]]))
    h.txn(3, [["r", "x", [1]]])
    return h


def g2_item(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["r", "x", []], ["append", "y", 1]]),
                 (2, [["r", "y", [1] if fixed else []], ["append", "x", 1]]))
    h.txn(3, [["r", "x", [1]], ["r", "y", [1]]])
    return h


def internal(fixed: bool) -> History:
    h = History()
    h.txn(1, [["append", "x", 1], ["r", "x", [1] if fixed else []]])
    h.txn(2, [["r", "x", [1]], ["append", "x", 2], ["r", "x", [1, 2] if fixed else [1]]])
    return h


def incompatible(fixed: bool) -> History:
    # All four overlap: the key is still ordered by its longest read (as in
    # Elle), and a read placed after the appends it missed would add a
    # realtime cycle to the incompatible order (test_elle_incompatible_orders).
    h = History()
    h.concurrent((1, [["append", "x", 1]]), (2, [["append", "x", 2]]),
                 (3, [["r", "x", [1, 2]]]), (4, [["r", "x", [1, 2] if fixed else [2, 1]]]))
    return h


def duplicate(fixed: bool) -> History:
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["r", "x", [1] if fixed else [1, 1]]])
    return h


def dirty_update(fixed: bool) -> History:
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.fail(1)
    h.txn(2, [["append", "x", 2]])
    h.txn(3, [["append", "x", 3]])
    # Only a read that saw the aborted element shows it under committed ones,
    # so a dirty update always comes with an aborted read (G1a).
    h.txn(4, [["r", "x", [2, 3] if fixed else [1, 2, 3]]])
    return h


def g_single_realtime(fixed: bool) -> History:
    h = History()
    if fixed:  # the stale read overlaps the append, so it may come first
        h.concurrent((1, [["append", "x", 1]]), (2, [["r", "x", []]]))
    else:
        h.txn(1, [["append", "x", 1]])
        h.txn(2, [["r", "x", []]])
    h.txn(3, [["r", "x", [1]]])
    return h


def g0_realtime(fixed: bool) -> History:
    h = History()
    if fixed:
        h.concurrent((1, [["append", "x", 1]]), (2, [["append", "x", 2]]))
    else:
        h.txn(1, [["append", "x", 1]])
        h.txn(2, [["append", "x", 2]])
    h.txn(3, [["r", "x", [2, 1]]])
    return h


def g1c_realtime(fixed: bool) -> History:
    h = History()
    if fixed:
        h.concurrent((1, [["r", "x", [2]]]), (2, [["append", "x", 2]]))
    else:
        h.txn(1, [["r", "x", [2]]])
        h.txn(2, [["append", "x", 2]])
    return h


def g2_item_realtime(fixed: bool) -> History:
    h = History()
    # T3 misses T1's append to x and T2 misses T3's append to y: serializable
    # as T2, T3, T1, unless T1 completed before T2 was invoked.
    h.invoke(3, [["r", "x", []], ["append", "y", 1]])
    if fixed:
        h.concurrent((1, [["append", "x", 1]]), (2, [["r", "y", []]]))
    else:
        h.txn(1, [["append", "x", 1]])
        h.txn(2, [["r", "y", []]])
    h.ok(3)
    h.txn(5, [["r", "x", [1]], ["r", "y", [1]]])
    return h


def g_single_process(fixed: bool) -> History:
    h = History()
    if fixed:  # another process, overlapping the append, may read before it
        h.concurrent((1, [["append", "x", 1]]), (2, [["r", "x", []]]))
    else:  # but the same process, afterwards, must see it
        h.txn(1, [["append", "x", 1]])
        h.txn(1, [["r", "x", []]])
    h.txn(3, [["r", "x", [1]]])
    return h


CASES = [
    (g0, {"G0"}), (g1a, {"G1a"}), (g1b, {"G1b", "G-single-item"}), (g1c, {"G1c"}),
    (g_single, {"G-single-item"}), (g2_item, {"G2-item"}), (internal, {"internal"}),
    (incompatible, {"incompatible-order"}), (duplicate, {"duplicate-elements"}),
    (dirty_update, {"dirty-update", "G1a"}),
    (g_single_realtime, {"G-single-item-realtime"}), (g0_realtime, {"G0-realtime"}),
    (g1c_realtime, {"G1c-realtime"}), (g2_item_realtime, {"G2-item-realtime"}),
    (g_single_process, {"G-single-item-process"}),
]
IDS = [make.__name__ for make, _ in CASES]


@pytest.mark.parametrize("make,anomaly", CASES, ids=IDS)
def test_failing_history_has_exactly_its_anomaly(make: Any, anomaly: set[str]) -> None:
    v = elle.check(make(False).ops)
    assert {a["type"] for a in v["anomalies"]} == anomaly
    assert v["valid"] is False
    assert all(a["explanation"] for a in v["anomalies"])


@pytest.mark.parametrize("make,anomaly", CASES, ids=IDS)
def test_fixed_twin_is_valid(make: Any, anomaly: set[str]) -> None:
    v = elle.check(make(True).ops)
    assert v["anomalies"] == []
    assert v["valid"] is True



# --- realtime order and indeterminate (info) txns -------------------------------
# An info txn may have taken effect at any time after its invoke, or never: it
# follows in real time every txn that completed before its invoke, and precedes
# nothing (it never completed).


def _info_appends_x2(h: History, *, invoked_after_read: bool) -> None:
    if invoked_after_read:
        h.txn(1, [["r", "x", [2]]])
        h.invoke(2, [["append", "x", 2]])
    else:
        h.invoke(2, [["append", "x", 2]])
        h.txn(1, [["r", "x", [2]]])
    h.info(2)


def test_read_completed_before_an_info_append_was_invoked_is_g1c_realtime() -> None:
    h = History()
    _info_appends_x2(h, invoked_after_read=True)
    v = elle.check(h.ops)
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert a["type"] == "G1c-realtime"
    # The cycle names both txns: the read (ops 0-1) and the info append (op 2).
    assert {(t["invoke"], t["status"]) for t in a["cycle"]} == {(0, "ok"), (2, "info")}
    assert {s["kind"] for s in a["steps"]} == {"wr", "realtime"}


def test_read_overlapping_an_info_append_may_see_it() -> None:
    h = History()
    _info_appends_x2(h, invoked_after_read=False)
    v = elle.check(h.ops)
    assert v["anomalies"] == [] and v["valid"] is True


def test_an_info_txn_precedes_nothing_in_real_time() -> None:
    # The info append may take effect after T2's read of [], and before T3's.
    # Were its info completion taken for a commit, T2 would be G-single-realtime.
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.info(1)
    h.txn(2, [["r", "x", []]])
    h.txn(3, [["r", "x", [1]]])
    v = elle.check(h.ops)
    assert v["anomalies"] == [] and v["valid"] is True


def test_a_read_after_an_acked_append_missing_it_is_g_single_realtime() -> None:
    # The ok twin of the case above: the same steps with the append acknowledged.
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["r", "x", []]])
    h.txn(3, [["r", "x", [1]]])
    v = elle.check(h.ops)
    assert [a["type"] for a in v["anomalies"]] == ["G-single-item-realtime"]
    assert {t["invoke"] for t in v["anomalies"][0]["cycle"]} == {0, 2}
