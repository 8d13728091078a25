"""The rw-register checker on hand-written histories: each anomaly with a
failing history and its fixed twin, and each of Elle's version-order sources
shown to find a cycle only when it is turned on."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.elle import rw_register
from checkers.elle.simulate import serial_history

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import History as _History  # noqa: E402


class History(_History):
    @staticmethod
    def _unknown_reads(mops: list) -> list:
        return [[f, k, v if f == "w" else None] for f, k, v in mops]


# The five models these tests were written for; the rest of the lattice is
# tested in test_elle_lattice.py.
FIVE = ("read-committed", "repeatable-read", "snapshot-isolation", "serializable",
        "strict-serializable")


def check(h: History, **kw: Any) -> dict:
    return rw_register.check(h.ops, **kw)


def types(h: History, **kw: Any) -> set[str]:
    return {a["type"] for a in check(h, **kw)["anomalies"]}


def read_skew(fixed: bool) -> History:
    h = History()
    h.txn(1, [["w", "x", 1], ["w", "y", 1]])
    h.txn(2, [["r", "x", 1], ["r", "y", 1 if fixed else None]])
    return h


def write_skew(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["r", "x", None], ["w", "y", 1]]),
                 (2, [["r", "y", 1 if fixed else None], ["w", "x", 1]]))
    return h


def aborted_read(fixed: bool) -> History:
    h = History()
    h.invoke(1, [["w", "x", 1]])
    h.ok(1) if fixed else h.fail(1)
    h.txn(2, [["r", "x", 1]])
    return h


def intermediate_read(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["w", "x", 1], ["w", "x", 2]]), (2, [["r", "x", 2 if fixed else 1]]))
    return h


def internal(fixed: bool) -> History:
    h = History()
    h.txn(1, [["w", "x", 1], ["r", "x", 1 if fixed else 2]])
    h.txn(2, [["r", "x", 1]])   # so there is something to judge
    return h


def circular_information_flow(fixed: bool) -> History:
    # Each txn read the other's write: T1 -wr-> T2 -wr-> T1.
    h = History()
    h.concurrent((1, [["w", "x", 1], ["r", "y", 2]]),
                 (2, [["w", "y", 2], ["r", "x", None if fixed else 1]]))
    return h


def stale_after_ack(fixed: bool) -> History:
    # T2 began after T1's write of x was acknowledged, yet read x's initial
    # state: T2 -rw-> T1 -realtime-> T2.
    h = History()
    h.txn(1, [["w", "x", 1]])
    h.txn(2, [["r", "x", 1 if fixed else None]])
    return h


def own_write_missed(fixed: bool) -> History:
    # The same, by one process: its own later txn missed its write.
    h = History()
    h.txn(1, [["w", "x", 1]])
    h.txn(1, [["r", "x", 1 if fixed else None]])
    return h


CASES = [(read_skew, {"G-single-item"}), (write_skew, {"G2-item"}), (aborted_read, {"G1a"}),
         (intermediate_read, {"G1b"}), (internal, {"internal"}),
         (circular_information_flow, {"G1c"}), (stale_after_ack, {"G-single-item-realtime"}),
         (own_write_missed, {"G-single-item-process"})]


@pytest.mark.parametrize("make,anomaly", CASES, ids=[m.__name__ for m, _ in CASES])
def test_failing_history_has_its_anomaly(make: Any, anomaly: set[str]) -> None:
    v = check(make(False))
    assert {a["type"] for a in v["anomalies"]} == anomaly
    assert v["valid"] is False
    assert all(a["explanation"] for a in v["anomalies"])


@pytest.mark.parametrize("make,anomaly", CASES, ids=[m.__name__ for m, _ in CASES])
def test_fixed_twin_is_valid(make: Any, anomaly: set[str]) -> None:
    v = check(make(True))
    assert v["anomalies"] == [] and v["valid"] is True


def test_write_skew_is_snapshot_isolation_not_serializable() -> None:
    got = check(write_skew(False))["stats"]["models"]
    models = {m: got[m]["valid"] for m in FIVE}
    assert models == {"read-committed": True, "repeatable-read": False,
                      "snapshot-isolation": True, "serializable": False,
                      "strict-serializable": False}


@pytest.mark.parametrize("make", [stale_after_ack, own_write_missed])
def test_process_and_realtime_cycles_rule_out_strict_serializable_only(make: Any) -> None:
    got = check(make(False))["stats"]["models"]
    models = {m: got[m]["valid"] for m in FIVE}
    assert models == {"read-committed": True, "repeatable-read": True,
                      "snapshot-isolation": True, "serializable": True,
                      "strict-serializable": False}


def write_cycle(fixed: bool) -> History:
    # With writes following reads, T1's read of y = 2 orders y: 2 < 1, and
    # T2's read of x = 1 orders x: 1 < 2: T1 -ww-> T2 -ww-> T1. Fixed: T2
    # read x's initial state, so nothing orders T1's x before T2's.
    h = History()
    h.concurrent((1, [["r", "y", 2], ["w", "x", 1], ["w", "y", 1]]),
                 (2, [["r", "x", None if fixed else 1], ["w", "x", 2], ["w", "y", 2]]))
    return h


def test_a_write_cycle_is_g0_once_versions_are_ordered() -> None:
    v = check(write_cycle(False), wfr_keys=True)
    assert "G0" in {a["type"] for a in v["anomalies"]}
    [g0] = [a for a in v["anomalies"] if a["type"] == "G0"]
    assert sorted(s["kind"] for s in g0["steps"]) == ["ww", "ww"]
    assert v["stats"]["models"]["read-committed"]["valid"] is False
    # Without the inference no write is ordered: only the reads' cycle shows.
    assert types(write_cycle(False)) == {"G1c"}
    v = check(write_cycle(True), wfr_keys=True)
    assert v["anomalies"] == [] and v["valid"] is True


def test_read_skew_explanation_names_the_initial_state() -> None:
    [a] = check(read_skew(False))["anomalies"]
    assert "initial state (nil)" in a["explanation"] and "(wr)" in a["explanation"]


def wfr_cycle() -> History:
    # T2 read x = 1 and then wrote x = 2: with writes following reads, 1 < 2.
    # T3 saw T2's y but x = 1: it missed T2's write of x.
    h = History()
    h.txn(1, [["w", "x", 1]])
    h.concurrent((2, [["r", "x", 1], ["w", "x", 2], ["w", "y", 2]]),
                 (3, [["r", "x", 1], ["r", "y", 2]]))
    return h


def test_writes_follow_reads_orders_versions_only_when_asked() -> None:
    assert check(wfr_cycle())["valid"] is True
    v = check(wfr_cycle(), wfr_keys=True)
    assert v["valid"] is False and "G-single-item" in {a["type"] for a in v["anomalies"]}
    assert v["stats"]["version_sources"] == ["initial-state", "wfr-keys"]


def after_the_write(fixed: bool) -> History:
    # T1 completes before T2 starts: on a linearizable key, 1 < 2. T3 saw
    # T2's y but x = 1, missing T2's write of x.
    h = History()
    h.txn(1, [["w", "x", 1]])
    h.concurrent((2, [["w", "x", 2], ["w", "y", 2]]),
                 (3, [["r", "x", 2 if fixed else 1], ["r", "y", 2]]))
    return h


def test_linearizable_keys_order_versions_by_realtime() -> None:
    assert check(after_the_write(False))["valid"] is True
    v = check(after_the_write(False), linearizable_keys=True)
    assert v["valid"] is False and "G-single-item" in {a["type"] for a in v["anomalies"]}
    assert check(after_the_write(True), linearizable_keys=True)["valid"] is True


def stale_read(concurrent: bool) -> History:
    h = History()
    h.txn(1, [["w", "x", 1]])
    if concurrent:
        h.concurrent((2, [["w", "x", 2]]), (3, [["r", "x", 1]]))
    else:
        h.txn(2, [["w", "x", 2]])
        h.txn(3, [["r", "x", 1]])
    return h


def test_a_stale_read_of_a_linearizable_key_makes_its_versions_cyclic() -> None:
    # Realtime says 1 < 2 (T1 before T2) and 2 < 1 (T2 before T3, which read 1).
    assert check(stale_read(False))["valid"] is True
    v = check(stale_read(False), linearizable_keys=True)
    assert {a["type"] for a in v["anomalies"]} == {"cyclic-versions"}
    assert v["valid"] is False
    assert check(stale_read(True), linearizable_keys=True)["valid"] is True


def test_sequential_keys_order_versions_by_process() -> None:
    h = History()
    h.txn(1, [["w", "x", 1]])
    h.txn(1, [["w", "x", 2]])
    h.txn(2, [["r", "x", 2]])
    h.txn(2, [["r", "x", 1]])   # process 2 went back in time
    assert check(h)["valid"] is True
    v = check(h, sequential_keys=True)
    assert v["valid"] is False and "cyclic-versions" in {a["type"] for a in v["anomalies"]}
    fixed = History()
    fixed.txn(1, [["w", "x", 1]])
    fixed.txn(1, [["w", "x", 2]])
    fixed.txn(2, [["r", "x", 1]])
    fixed.txn(2, [["r", "x", 2]])
    # (process 2 read 1 after process 1 wrote 2: stale, but sequential)
    assert check(fixed, sequential_keys=True, model="serializable")["valid"] is True
    assert check(fixed, sequential_keys=True)["valid"] is False


def cyclic_versions(fixed: bool) -> History:
    h = History()
    h.concurrent((1, [["r", "x", 2], ["w", "x", 3]]),
                 (2, [["r", "x", None if fixed else 3], ["w", "x", 2]]))
    return h


def test_cyclic_versions() -> None:
    v = check(cyclic_versions(False), wfr_keys=True)
    assert "cyclic-versions" in {a["type"] for a in v["anomalies"]}
    (a,) = [a for a in v["anomalies"] if a["type"] == "cyclic-versions"]
    assert a["key"] == "x" and a["explanation"].startswith("The versions of key 'x' are")
    assert v["stats"]["models"]["read-committed"]["valid"] is False
    assert check(cyclic_versions(True), wfr_keys=True)["valid"] is True


def test_no_transactions_or_duplicate_writes_are_unknown() -> None:
    assert rw_register.check([])["valid"] == "unknown"
    h = History()
    h.txn(1, [["w", "x", 1]])
    h.txn(2, [["w", "x", 1]])
    v = check(h)
    assert v["valid"] == "unknown" and "duplicate-write" in {a["type"] for a in v["anomalies"]}


def test_cli_checks_rw_register_edn(tmp_path: Path) -> None:
    from harness.cli import main
    path = tmp_path / "history.edn"
    for read_y, code in (("nil", 1), ("1", 0)):
        path.write_text(
            "{:index 0 :type :invoke :value [[:w :x 1] [:w :y 1]]}\n"
            "{:index 1 :type :ok     :value [[:w :x 1] [:w :y 1]]}\n"
            "{:index 2 :type :invoke :value [[:r :x nil] [:r :y nil]]}\n"
            f"{{:index 3 :type :ok     :value [[:r :x 1] [:r :y {read_y}]]}}\n")
        assert main(["check-elle", str(path), "--workload", "rw-register",
                     "--model", "serializable"]) == code


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 60), keys=st.integers(1, 4),
       concurrency=st.integers(1, 6), max_writes=st.integers(1, 8),
       p_fail=st.sampled_from([0.0, 0.2]), p_info=st.sampled_from([0.0, 0.2]))
def test_serial_executions_are_strict_serializable_with_every_inference(
        seed: int, n: int, keys: int, concurrency: int, max_writes: int, p_fail: float,
        p_info: float) -> None:
    # Txns applied one at a time, each between its invoke and completion: every
    # key is linearizable, and writes follow reads. No inference may find a cycle.
    ops = serial_history(n, keys=keys, concurrency=concurrency, max_writes_per_key=max_writes,
                         p_fail=p_fail, p_info=p_info, registers=True,
                         rng=random.Random(seed))
    v = rw_register.check(ops, wfr_keys=True, sequential_keys=True, linearizable_keys=True)
    assert v["anomalies"] == [], v["anomalies"][0]["explanation"]
    # valid unless nothing is ordered (then unknown, saying so)
    assert v["valid"] is ("unknown" if "reason" in v["stats"] else True)
    if sum(op.type == "ok" for op in ops) >= 2 and concurrency == 1:
        assert v["valid"] is True


def test_stale_register_reads_are_caught() -> None:
    ops = serial_history(400, keys=3, concurrency=4, max_writes_per_key=20, p_stale=0.3,
                         registers=True, rng=random.Random(7))
    v = rw_register.check(ops, wfr_keys=True, linearizable_keys=True)
    assert v["valid"] is False


def test_the_same_history_gets_the_same_report_in_every_process() -> None:
    # Version pairs holding None (the initial state) once sat in sets, whose
    # order followed None's address: another process reported other cycles.
    import json
    import subprocess

    code = ("import json, random\nfrom checkers.elle import rw_register\n"
            "from checkers.elle.simulate import serial_history\n"
            "ops = serial_history(600, keys=3, concurrency=6, max_writes_per_key=30, "
            "p_stale=0.3, p_info=0.1, registers=True, rng=random.Random(3))\n"
            "v = rw_register.check(ops, wfr_keys=True)\n"
            "print(json.dumps(v['anomalies'], sort_keys=True, default=str))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(3)]
    assert len(json.loads(runs[0])) > 5
    assert runs[0] == runs[1] == runs[2]
