"""Durability checker: every rule with a history that must fail and one that must pass."""

from __future__ import annotations

from typing import Any

from checkers import durability
from checkers.datatypes import LISTS, LOGS, REGISTERS
from checkers.history import Op


class H:
    """Builds a history op by op: `call` is an invoke and its completion, back to back."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, process: Any, typ: str, f: str, value: Any, key: Any = None) -> Op:
        op = Op(len(self.ops), len(self.ops) * 1_000_000, process, typ, f, value, key)
        self.ops.append(op)
        return op

    def call(self, process: int, f: str, value: Any, typ: str = "ok", result: Any = "same",
             key: Any = None) -> None:
        self.add(process, "invoke", f, value, key)
        self.add(process, typ, f, value if result == "same" else result, key)


def entry(offset: int, payload: dict, committed: bool = True) -> dict:
    return {"offset": offset, "epoch": 1, "committed": committed, "digest": f"{offset:016x}",
            "payload": payload}


def log_dump(*entries: dict) -> dict[str, dict]:
    return {"n1": {"node": "n1", "log_start_offset": 0, "log_end_offset": len(entries),
                   "high_watermark": len(entries), "epoch": 1, "epochs": [[1, 0]],
                   "entries": list(entries)}}


def put(v: int, key: str = "r") -> dict:
    return {"op": "put", "key": key, "value": v, "rid": v}


def types(v: dict) -> list[str]:
    return [a["type"] for a in v["anomalies"]]


# --- register / kv -----------------------------------------------------------


def test_register_acknowledged_write_in_the_committed_log_passes():
    h = H()
    h.call(0, "write", 1)
    h.call(1, "cas", [1, 2])
    h.call(0, "read", None, result=2)
    dumps = log_dump(entry(0, put(1)), entry(1, {"op": "cas", "key": "r", "expect": 1,
                                                 "value": 2, "rid": 9}))
    v = durability.check(h.ops, dumps, REGISTERS)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["dumps"]["ok_writes_committed"] == 2


def test_register_acknowledged_write_missing_from_the_log_is_lost():
    h = H()
    h.call(0, "write", 1)
    h.call(0, "write", 2)
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, put(2), committed=False)),
                         REGISTERS)
    assert types(v) == ["lost-write"] and v["anomalies"][0]["value"] == 2


def test_register_without_dumps_cannot_judge_lost_writes():
    h = H()
    h.call(0, "write", 1)
    assert durability.check(h.ops, None, REGISTERS)["valid"] == "unknown"


def test_read_of_a_value_never_written_is_a_phantom():
    h = H()
    h.call(0, "write", 1)
    h.call(1, "read", None, result=77)
    v = durability.check(h.ops, log_dump(entry(0, put(1))), REGISTERS)
    assert types(v) == ["phantom-read"] and v["anomalies"][0]["why"] == "never-written"


def test_read_of_an_indeterminate_write_passes():
    h = H()
    h.call(0, "write", 1, typ="info", result=None)
    h.call(1, "read", None, result=1)
    h.call(1, "cas", [1, 3], typ="fail", result=None)
    h.add(2, "invoke", "write", 4)  # never completed: as good as info
    h.call(3, "read", None, result=4)
    assert durability.check(h.ops, log_dump(entry(0, put(1))), REGISTERS)["valid"] is True


def test_read_of_a_definitively_failed_write_is_an_aborted_read():
    h = H()
    h.call(0, "write", 1)
    h.call(1, "cas", [1, 2], typ="fail", result=None)
    h.call(0, "read", None, result=2)
    v = durability.check(h.ops, log_dump(entry(0, put(1))), REGISTERS)
    assert types(v) == ["aborted-read"] and v["anomalies"][0]["value"] == 2


def test_failed_write_found_committed_fails_but_failed_cas_does_not():
    h = H()
    h.call(0, "write", 1, typ="fail", result=None)
    h.call(1, "cas", [5, 2], typ="fail", result=None)
    cas = {"op": "cas", "key": "r", "expect": 5, "value": 2, "rid": 2}
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, cas)), REGISTERS)
    assert types(v) == ["failed-write-committed"] and v["anomalies"][0]["value"] == 1


def test_kv_read_of_another_keys_value_is_a_phantom():
    h = H()
    h.call(0, "write", 1, key="k1")
    h.call(1, "read", None, result=1, key="k2")
    dumps = log_dump(entry(0, put(1, "k1")))
    v = durability.check(h.ops, dumps, REGISTERS)
    assert types(v) == ["phantom-read"] and v["anomalies"][0]["why"] == "written-to-other-key"
    h2 = H()
    h2.call(0, "write", 1, key="k1")
    h2.call(1, "read", None, result=1, key="k1")
    assert durability.check(h2.ops, dumps, REGISTERS)["valid"] is True


# --- list-append ---------------------------------------------------------------


def test_list_append_final_read_with_every_acknowledged_append_passes():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    h.call(1, "txn", [["append", "x", 2], ["r", "x", None]],
           result=[["append", "x", 2], ["r", "x", [1, 2]]])
    h.call(0, "txn", [["r", "x", None]], result=[["r", "x", [1, 2]]])
    v = durability.check(h.ops, None, LISTS)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["lost_write_evidence"] == ["final-reads"]


def test_list_append_final_read_missing_an_acknowledged_append_is_lost():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    h.call(1, "txn", [["append", "x", 2]])
    h.call(0, "txn", [["r", "x", None]], result=[["r", "x", [2]]])
    v = durability.check(h.ops, None, LISTS)
    assert types(v) == ["lost-write"] and v["anomalies"][0]["value"] == 1


def test_list_append_read_invoked_before_the_ack_need_not_show_it():
    h = H()
    h.add(0, "invoke", "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", []]])
    h.add(0, "ok", "txn", [["append", "x", 1]])
    assert durability.check(h.ops, None, LISTS)["valid"] is True



def test_list_append_is_judged_on_a_keys_last_read_not_its_first():
    # The first read, after the ack, shows 1; the last read no longer does.
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1]]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", []]])
    v = durability.check(h.ops, None, LISTS)
    assert types(v) == ["lost-write"]
    [lost] = v["anomalies"]
    assert lost["value"] == 1 and lost["key"] == "x"
    assert lost["final_read"]["index"] == 5  # the second read's completion


def test_list_append_last_read_showing_the_append_passes_after_an_early_read():
    # The first read, invoked before the ack, need not show 1; the last one does.
    h = H()
    h.add(0, "invoke", "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", []]])
    h.add(0, "ok", "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1]]])
    v = durability.check(h.ops, None, LISTS)
    assert v["valid"] is True, v["anomalies"]

def test_list_append_duplicate_in_a_read_fails():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1, 1]]])
    assert "duplicate-append" in types(durability.check(h.ops, None, LISTS))


def test_list_append_checked_against_committed_txn_entries():
    h = H()
    h.call(0, "txn", [["append", "x", 1], ["append", "y", 2]])
    ok = log_dump(entry(0, {"op": "txn", "ops": [["append", "x", 1], ["append", "y", 2]]}))
    assert durability.check(h.ops, ok, LISTS)["valid"] is True
    lost = log_dump(entry(0, {"op": "txn", "ops": [["append", "x", 1]]}))
    v = durability.check(h.ops, lost, LISTS)
    assert types(v) == ["lost-write"] and v["anomalies"][0]["key"] == "y"


# --- log -------------------------------------------------------------------------


def append(offset: int, log: str, v: int) -> dict:
    return entry(offset, {"op": "append", "log": log, "value": v, "rid": v})


def test_log_appends_committed_once_pass():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(0, "append", ["a", 2], result=["a", 2, 1])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2]]])
    v = durability.check(h.ops, log_dump(append(0, "a", 1), append(1, "a", 2)), LOGS)
    assert v["valid"] is True, v["anomalies"]


def test_log_acknowledged_append_lost_from_dumps_fails():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(0, "append", ["a", 2], result=["a", 2, 1])
    v = durability.check(h.ops, log_dump(append(0, "a", 1)), LOGS)
    assert types(v) == ["lost-write"] and v["anomalies"][0]["value"] == 2


def test_log_append_committed_twice_is_duplicated():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    v = durability.check(h.ops, log_dump(append(0, "a", 1), append(1, "a", 1)), LOGS)
    assert types(v) == ["duplicate-append"] and v["anomalies"][0]["offsets"] == [0, 1]


def test_log_acknowledged_append_missing_from_the_last_covering_read_is_lost():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(0, "append", ["a", 2], result=["a", 2, 1])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1]]])
    v = durability.check(h.ops, None, LOGS)
    assert types(v) == ["lost-write"]
    assert (v["anomalies"][0]["value"], v["anomalies"][0]["offset"]) == (2, 1)


def test_log_value_seen_at_two_offsets_fails():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(0, "append", ["a", 2], result=["a", 2, 1])
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 2], [1, 1]]])
    v = durability.check(h.ops, None, LOGS)
    # The acked offsets now hold other values, so the appends also count as lost.
    assert sorted(set(types(v))) == ["lost-write", "offset-changed", "offset-conflict"]
    changed = next(a for a in v["anomalies"] if a["type"] == "offset-changed")
    assert (changed["value"], changed["offsets"]) == (2, [1, 0])  # acked at 1, read at 0


def test_log_read_with_offsets_out_of_order_fails():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(0, "append", ["a", 2], result=["a", 2, 1])
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[1, 2], [0, 1]]])
    assert types(durability.check(h.ops, None, LOGS)) == ["read-out-of-order"]


def test_log_process_reading_less_than_it_saw_fails():
    h = H()
    for i in range(3):
        h.add(9, "invoke", "append", ["a", i + 1])
    for i in range(3):
        h.add(9, "info", "append", ["a", i + 1])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2], [2, 3]]])
    h.call(1, "read", ["a", 1, 10], result=["a", 1, [[1, 2]]])
    v = durability.check(h.ops, None, LOGS)
    assert types(v) == ["read-went-backwards"]
    a = v["anomalies"][0]
    assert (a["process"], a["seen_offset"], a["read_up_to"]) == (1, 2, 1)


def test_log_a_full_read_or_an_earlier_window_is_not_backwards():
    h = H()
    for i in range(3):
        h.add(9 + i, "invoke", "append", ["a", i + 1])
        h.add(9 + i, "info", "append", ["a", i + 1])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2], [2, 3]]])
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1], [1, 2]]])
    h.call(2, "read", ["a", 0, 10], result=["a", 0, [[0, 1]]])  # another process
    assert durability.check(h.ops, None, LOGS)["valid"] is True


def test_unknown_data_type_is_unknown():
    assert durability.check([], None, "queue")["valid"] == "unknown"


def test_hostile_read_count_does_not_hang():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(1, "read", ["a", 0, 10**12], result=["a", 0, [[0, 1]]])
    assert durability.check(h.ops, None, LOGS)["valid"] is True


# --- what the anomalies point at (mutants that survived) -----------------------


def test_lost_list_append_names_its_write_ack_and_final_read():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])                       # ops 0, 1
    h.call(2, "txn", [["append", "y", 9]], typ="fail")          # ops 2, 3: judged on nothing
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", []]])  # ops 4, 5
    v = durability.check(h.ops, None, LISTS)
    [lost] = v["anomalies"]
    assert (lost["type"], lost["key"], lost["value"]) == ("lost-write", "x", 1)
    assert (lost["write"]["index"], lost["ack"]["index"], lost["final_read"]["index"]) == (0, 1, 5)
    assert lost["evidence"] == "final-read"


def test_duplicate_in_a_list_read_names_the_key_value_and_read():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1, 1]]])
    [dup] = durability.check(h.ops, None, LISTS)["anomalies"]
    assert (dup["type"], dup["key"], dup["values"]) == ("duplicate-append", "x", [1])
    assert dup["read"]["index"] == 3


def test_log_read_holding_one_offset_twice_is_out_of_order():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1], [0, 1]]])
    v = durability.check(h.ops, None, LOGS)
    assert "read-out-of-order" in types(v)
    bad = next(a for a in v["anomalies"] if a["type"] == "read-out-of-order")
    assert bad["read"]["index"] == 3


def test_log_offset_conflict_names_both_values_and_both_ops():
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(0, "append", ["a", 2], result=["a", 2, 0])
    v = durability.check(h.ops, None, LOGS)
    conflict = next(a for a in v["anomalies"] if a["type"] == "offset-conflict")
    assert conflict["values"] == [1, 2]
    assert (conflict["first_seen"]["index"], conflict["then"]["index"]) == (1, 3)


def test_each_bad_value_is_reported_once_with_its_read_and_writer():
    h = H()
    h.call(0, "write", 1)                                   # ops 0, 1
    h.call(0, "write", 2, typ="fail", result=None)          # ops 2, 3
    for seen in (9, 9, 2, 2, 8):                            # ops 4..13
        h.call(1, "read", None, result=seen)
    v = durability.check(h.ops, log_dump(entry(0, put(1))), REGISTERS)
    brief = [(a["type"], a["value"], a["read"]["index"]) for a in v["anomalies"]]
    assert brief == [("phantom-read", 9, 5), ("aborted-read", 2, 9), ("phantom-read", 8, 13)]
    assert v["anomalies"][0]["writer"] is None
    aborted = v["anomalies"][1]
    assert (aborted["write"]["index"], aborted["write_completion"]["index"]) == (2, 3)


def test_anomalies_over_the_cap_are_cut_and_counted():
    h = H()
    for i in range(durability.MAX_ANOMALIES + 5):
        h.call(1, "read", None, result=1000 + i)
    v = durability.check(h.ops, log_dump(), REGISTERS)
    assert len(v["anomalies"]) == durability.MAX_ANOMALIES
    assert v["stats"]["anomalies_omitted"] == 5
    h = H()
    for i in range(durability.MAX_ANOMALIES):
        h.call(1, "read", None, result=1000 + i)
    v = durability.check(h.ops, log_dump(), REGISTERS)
    assert len(v["anomalies"]) == durability.MAX_ANOMALIES
    assert "anomalies_omitted" not in v["stats"]


def test_register_without_dumps_and_without_acked_writes_has_nothing_to_lose():
    h = H()
    h.call(0, "write", 1, typ="fail", result=None)
    h.call(1, "read", None, result=None)
    v = durability.check(h.ops, None, REGISTERS)
    assert v["valid"] is True and v["stats"]["lost_write_evidence"] == []
    assert v["stats"]["writes"] == {"ok": 0, "fail": 1, "info": 0}


def test_unknown_data_type_names_the_known_ones():
    v = durability.check([], None, "queue")
    assert v["anomalies"] == []
    assert v["stats"]["error"] == ("no durability rules for data type 'queue'; known: "
                                   "['registers', 'lists', 'logs']")


def test_a_successful_cas_observed_its_expected_value():
    h = H()
    h.call(0, "write", 1)                        # ops 0, 1
    h.call(1, "cas", [99, 5])                    # ops 2, 3: 99 was never written
    h.call(1, "cas", [1, 6])                     # ops 4, 5: 1 was
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, put(5)), entry(2, put(6))),
                         REGISTERS)
    [a] = v["anomalies"]
    assert (a["type"], a["value"], a["read"]["index"], a["read"]["f"]) == (
        "phantom-read", 99, 3, "cas")


def test_phantoms_in_list_append_and_log_reads_name_key_and_read():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1, 42]]])  # ops 2, 3
    [a] = durability.check(h.ops, None, LISTS)["anomalies"]
    assert (a["type"], a["key"], a["value"], a["read"]["index"]) == ("phantom-read", "x", 42, 3)
    h = H()
    h.call(0, "append", ["a", 1], result=["a", 1, 0])
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1], [1, 7]]])  # ops 2, 3
    v = durability.check(h.ops, None, LOGS)
    [a] = [x for x in v["anomalies"] if x["type"] == "phantom-read"]
    assert (a["key"], a["value"], a["read"]["index"]) == ("a", 7, 3)
