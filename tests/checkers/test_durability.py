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


# --- every anomaly in full, and the edges of each rule (mutants that survived) --


def ref(op: Op) -> dict:
    """An op as anomalies cite it, written out field by field."""
    return {"index": op.index, "process": op.process, "type": op.type, "f": op.f,
            "value": op.value, "time": op.time}


def test_lost_and_failed_committed_writes_against_dumps_in_full():
    h = H()
    h.call(0, "write", 1)                                   # ops 0, 1: committed
    h.call(0, "write", 2)                                   # ops 2, 3: lost
    h.call(1, "write", 3, typ="fail", result=None)          # ops 4, 5: committed anyway
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(4, put(3))), REGISTERS)
    assert v["anomalies"] == [
        {"type": "lost-write", "value": 2, "key": None, "evidence": "dumps",
         "write": ref(h.ops[2]), "ack": ref(h.ops[3])},
        {"type": "failed-write-committed", "value": 3, "key": None, "offsets": [4],
         "write": ref(h.ops[4]), "fail": ref(h.ops[5])}]


def test_phantom_from_another_key_and_aborted_read_in_full():
    h = H()
    h.call(0, "write", 1, key="k1")                          # ops 0, 1
    h.call(0, "write", 2, typ="fail", result=None, key="k2")  # ops 2, 3
    h.call(1, "read", None, result=1, key="k2")              # ops 4, 5
    h.call(1, "read", None, result=2, key="k2")              # ops 6, 7
    v = durability.check(h.ops, log_dump(entry(0, put(1, "k1"))), REGISTERS)
    assert v["anomalies"] == [
        {"type": "phantom-read", "value": 1, "key": "k2", "why": "written-to-other-key",
         "read": ref(h.ops[5]), "writer": ref(h.ops[0])},
        {"type": "aborted-read", "value": 2, "key": "k2", "read": ref(h.ops[7]),
         "write": ref(h.ops[2]), "write_completion": ref(h.ops[3])}]


def test_a_read_of_a_value_written_under_another_key_is_a_phantom():
    h = H()
    h.call(0, "write", 1, key="r")
    h.call(1, "read", None, result=1, key="r")
    dumps = log_dump(entry(0, put(1, "r")))
    assert durability.check(h.ops, dumps, REGISTERS)["valid"] is True
    h = H()
    h.call(0, "write", 1, key="r")
    h.call(1, "read", None, result=1, key="s")
    v = durability.check(h.ops, dumps, REGISTERS)
    assert [(a["type"], a["why"]) for a in v["anomalies"]] == [
        ("phantom-read", "written-to-other-key")]


def test_ok_cas_from_nil_observed_nothing_and_kv_cas_observes_its_own_key():
    h = H()
    h.call(0, "cas", [None, 1], key="k1")    # from the initial nil: nothing was read
    h.call(0, "cas", [1, 2], key="k1")       # saw 1, on k1
    dumps = log_dump(entry(0, put(1, "k1")), entry(1, put(2, "k1")))
    v = durability.check(h.ops, dumps, REGISTERS)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["values_read"] == 1


def test_list_append_duplicates_in_dumps_and_in_a_read_in_full():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])                              # ops 0, 1
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1, 1]]])  # ops 2, 3
    txn = {"op": "txn", "ops": [["append", "x", 1]]}
    v = durability.check(h.ops, log_dump(entry(0, txn), entry(1, txn)), LISTS)
    assert v["anomalies"] == [
        {"type": "duplicate-append", "value": 1, "evidence": "dumps", "offsets": [0, 1]},
        {"type": "duplicate-append", "key": "x", "values": [1], "evidence": "read",
         "read": ref(h.ops[3])}]


def test_a_register_value_committed_twice_is_no_duplicate_append():
    h = H()
    h.call(0, "write", 1)
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, put(1))), REGISTERS)
    assert v["valid"] is True, v["anomalies"]


def test_dump_stats_count_ok_and_indeterminate_writes_committed_or_absent():
    h = H()
    h.call(0, "write", 1)                                  # ok, committed
    h.call(0, "write", 2, typ="info", result=None)         # info, committed
    h.call(0, "write", 3, typ="info", result=None)         # info, absent
    h.add(1, "invoke", "write", 4)                         # never completed: info, absent
    h.call(2, "write", 5, typ="fail", result=None)         # fail, absent: not counted
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, put(2))), REGISTERS)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["writes"] == {"ok": 1, "fail": 1, "info": 3}
    assert v["stats"]["dumps"] == {"committed_values": 2, "ok_writes_committed": 1,
                                   "info_writes_committed": 1, "info_writes_absent": 2}
    assert "relaxed_acks" not in v["stats"]


def relaxed_history() -> H:
    h = H()
    h.call(0, "write", 1)                                         # quorum ack, committed
    for i, level in ((2, "leader"), (3, "leader"), (4, "none"), (5, "none")):  # below quorum
        h.add(1, "invoke", "write", i)
        h.ops.append(Op(len(h.ops), len(h.ops), 1, "ok", "write", i, level=level))
    return h


def test_writes_acked_below_quorum_are_counted_per_level_and_may_be_lost():
    h = relaxed_history()
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, put(2))), REGISTERS)
    assert v["valid"] is True, v["anomalies"]  # 3, 4 and 5 are gone, as their levels allow
    assert v["stats"]["relaxed_acks"] == {"leader": {"acked": 2, "lost": 1},
                                          "none": {"acked": 2, "lost": 2}}
    assert v["stats"]["writes"] == {"ok": 1, "fail": 0, "info": 4}
    assert v["stats"]["relaxed_acks_lost"] == 3
    # Without dumps nothing tells what was lost; with every write committed, none was.
    v = durability.check(h.ops, None, REGISTERS)
    assert v["stats"]["relaxed_acks"] == {"leader": {"acked": 2, "lost": None},
                                          "none": {"acked": 2, "lost": None}}
    assert v["stats"]["relaxed_acks_lost"] is None
    everything = log_dump(*(entry(i, put(i + 1)) for i in range(5)))
    v = durability.check(h.ops, everything, REGISTERS)
    assert v["stats"]["relaxed_acks"] == {"leader": {"acked": 2, "lost": 0},
                                          "none": {"acked": 2, "lost": 0}}
    assert v["stats"]["relaxed_acks_lost"] == 0


def test_the_same_loss_acked_at_quorum_is_a_lost_write():
    h = relaxed_history()
    h.call(0, "write", 9)
    v = durability.check(h.ops, log_dump(entry(0, put(1)), entry(1, put(2))), REGISTERS)
    assert [(a["type"], a["value"]) for a in v["anomalies"]] == [("lost-write", 9)]


def test_freeze_makes_lists_and_maps_hashable_and_order_free():
    assert durability.freeze([1, [2, 3]]) == (1, (2, 3))
    assert durability.freeze({"b": 1, "a": [2]}) == durability.freeze({"a": [2], "b": 1})
    assert durability.freeze({"a": [2]}) == (("a", (2,)),)
    assert durability.freeze({1: "x", "a": "y"}) == durability.freeze({"a": "y", 1: "x"})
    assert durability.freeze("s") == "s" and durability.freeze(None) is None


def test_list_values_are_judged_by_content():
    h = H()
    h.call(0, "write", [1, 2], key="k")
    h.call(1, "read", None, result=[1, 2], key="k")
    h.call(1, "read", None, result=[2, 1], key="k")  # never written
    v = durability.check(h.ops, log_dump(entry(0, put([1, 2], "k"))), REGISTERS)
    assert [(a["type"], a["value"]) for a in v["anomalies"]] == [("phantom-read", [2, 1])]


def test_ops_shaped_for_another_workload_are_ignored():
    foreign = {
        "write": ("write", 101, 101),
        "cas": ("cas", [101, 102], [101, 102]),
        "txn": ("txn", [["append", "x", 104]], [["append", "x", 104], ["r", "x", [105]]]),
        "append": ("append", ["a", 106], ["a", 106, 0]),
        "read": ("read", ["a", 0, 10], ["a", 0, [[0, 107]]]),
    }
    own = {REGISTERS: ("write", "cas", "read"), LISTS: ("txn",), LOGS: ("append", "read")}
    for data, mine in own.items():
        h = H()
        for name, (f, value, result) in foreign.items():
            if name not in mine:
                h.call(0, f, value, result=result)
        v = durability.check(h.ops, log_dump(), data)
        assert v["valid"] is True, (data, v["anomalies"])


def test_malformed_values_in_the_history_are_skipped():
    h = H()
    h.call(0, "cas", 5, key="k")                                   # not [expected, new]
    h.call(0, "cas", None, result=None, key="k")
    h.call(0, "write", 1, key="k")
    h.call(1, "read", None, result=1, key="k")
    assert durability.check(h.ops, log_dump(entry(0, put(1, "k"))), REGISTERS)["valid"] is True
    h = H()
    h.call(0, "txn", [5, ["append", "x"], ["append", "x", 1]])      # ops 0, 1
    h.call(1, "txn", [["r", "x"]], result=[7, ["r", "x"], ["r", "x", [1]], ["r", "y", 3]])
    assert durability.check(h.ops, None, LISTS)["valid"] is True


def test_malformed_log_reads_and_acks_are_skipped():
    h = H()
    h.call(0, "append", ["a", "v1"], result=["a", "v1", 0])
    h.call(0, "append", ["a", "v2"], result=["a", "v2"])        # ok, but no offset
    h.call(1, "read", ["a", 0, 10], result=None)
    h.call(1, "read", ["a", 0], result=["a", 0, [[0, "v1"]]])   # no count
    h.call(1, "read", ["a", 0, "9"], result=["a", 0, [[0, "v1"]]])
    h.call(1, "read", ["a", 0, 10], result=["a", "0", [[0, "v1"]]])
    h.call(1, "read", ["a", 0, 10], result=["a", 0])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, 5])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 99]], "extra"])
    # The well-formed entry counts; malformed ones name no value and no offset.
    h.call(1, "read", ["a", 0, 10],
           result=["a", 0, [[0, "v1"], [1, 98, "x"], ["x", 97], 5, [2]]])
    v = durability.check(h.ops, None, LOGS)
    assert v["valid"] is True, v["anomalies"]


def test_malformed_dump_entries_are_skipped_not_the_rest_of_the_dump():
    h = H()
    h.call(0, "txn", [["append", "x", 1]])
    dump = log_dump(
        entry(0, {"op": "put", "key": "x"}),                      # no value
        entry(1, "not a map"),
        entry(2, {"op": "txn", "ops": None}),
        entry(3, {"op": "txn", "ops": [5, ["append", "x"], ["r", "x", 1]]}),
        entry(4, {"op": "noop", "ops": [["append", "x", 9]], "x": 1}),
        entry(5, {"op": "txn", "ops": [["append", "x", 1]]}))
    dump["n1"]["entries"].insert(0, "junk")
    v = durability.check(h.ops, dump, LISTS)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["dumps"]["committed_values"] == 1


def test_list_append_final_read_is_an_ok_read_and_every_write_is_judged():
    h = H()
    h.call(2, "txn", [["append", "x", 5]], typ="info", result=None)   # not judged
    h.call(0, "txn", [["append", "x", 1]])                             # ops 2, 3
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [1]]])    # ops 4, 5
    h.call(1, "txn", [["r", "x", None]], typ="info", result=[["r", "x", []]])
    h.add(3, "invoke", "txn", [["r", "x", None]])                     # never completed
    v = durability.check(h.ops, None, LISTS)
    assert v["valid"] is True, v["anomalies"]
    h.call(1, "txn", [["r", "x", None]], result=[["r", "x", [5]]])    # ops 9, 10
    v = durability.check(h.ops, None, LISTS)
    assert v["anomalies"] == [
        {"type": "lost-write", "value": 1, "key": "x", "evidence": "final-read",
         "write": ref(h.ops[2]), "ack": ref(h.ops[3]), "final_read": ref(h.ops[10])}]


# --- log rules at their edges ------------------------------------------------------


def acked(h: H, process: int, log: str, value: Any, offset: int) -> None:
    h.call(process, "append", [log, value], result=[log, value, offset])


def lost_offsets(v: dict) -> list[int]:
    return [a["offset"] for a in v["anomalies"] if a["type"] == "lost-write"]


def test_log_offset_anomalies_in_full_and_each_reported_once():
    h = H()
    acked(h, 0, "a", 1, 0)                                                # ops 0, 1
    acked(h, 0, "a", 2, 0)                                                # ops 2, 3
    h.call(1, "read", ["a", 0, 1], result=["a", 0, [[1, 1]]])             # ops 4, 5
    h.call(1, "read", ["a", 0, 1], result=["a", 0, [[1, 1]]])             # ops 6, 7
    h.call(1, "read", ["a", 0, 3], result=["a", 0, [[2, 1], [1, 1]]])     # ops 8, 9
    h.call(1, "read", ["a", 0, 1], result=["a", 0, [[0, 2]]])             # offset 0 again
    v = durability.check(h.ops, None, LOGS)
    changed = [a for a in v["anomalies"] if a["type"] == "offset-changed"]
    conflicts = [a for a in v["anomalies"] if a["type"] == "offset-conflict"]
    order = [a for a in v["anomalies"] if a["type"] == "read-out-of-order"]
    assert changed == [{"type": "offset-changed", "log": "a", "value": 1, "offsets": [0, 1],
                        "first_seen": ref(h.ops[1]), "then": ref(h.ops[5])}]
    assert conflicts == [{"type": "offset-conflict", "log": "a", "offset": 0, "values": [1, 2],
                          "first_seen": ref(h.ops[1]), "then": ref(h.ops[3])}]
    assert order == [{"type": "read-out-of-order", "log": "a", "offsets": [2, 1],
                      "read": ref(h.ops[9])}]


def test_log_read_went_backwards_in_full_names_the_first_op_that_saw_the_offset():
    h = H()
    for i in range(2):
        h.add(9, "invoke", "append", ["a", i + 1])
        h.add(9, "info", "append", ["a", i + 1])                          # ops 0-3
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2]]])     # ops 4, 5
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2]]])     # ops 6, 7
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1]]])             # ops 8, 9
    v = durability.check(h.ops, None, LOGS)
    assert v["anomalies"] == [
        {"type": "read-went-backwards", "process": 1, "log": "a", "seen_offset": 1,
         "seen_by": ref(h.ops[5]), "read_up_to": 0, "read": ref(h.ops[9])}]


def test_log_a_process_may_not_read_less_than_it_appended():
    h = H()
    acked(h, 1, "b", 7, 0)                                  # another log, never read
    acked(h, 1, "a", 1, 0)                                  # ops 2, 3
    h.call(1, "read", ["a", 0, 10], result=["a", 0, []])    # ops 4, 5: empty
    v = durability.check(h.ops, None, LOGS)
    back = [a for a in v["anomalies"] if a["type"] == "read-went-backwards"]
    assert back == [{"type": "read-went-backwards", "process": 1, "log": "a",
                     "seen_offset": 0, "seen_by": ref(h.ops[3]), "read_up_to": -1,
                     "read": ref(h.ops[5])}]
    assert lost_offsets(v) == [0]


def test_log_backwards_only_inside_the_reads_window_and_below_what_was_seen():
    h = H()
    for i in range(3):
        h.add(9, "invoke", "append", ["a", i + 1])
        h.add(9, "info", "append", ["a", i + 1])
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1], [1, 2]]])     # saw offset 1
    h.call(1, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2]]])    # top == seen
    h.call(2, "read", ["a", 2, 10], result=["a", 2, [[2, 3]]])            # saw offset 2
    h.call(2, "read", ["a", 0, 2], result=["a", 0, [[0, 1]]])             # window ends at 1
    h.call(3, "read", ["a", 5, 10], result=["a", 5, []])                  # an empty read
    h.call(3, "read", ["a", 0, 10], result=["a", 0, [[0, 1], [1, 2], [2, 3]]])
    v = durability.check(h.ops, None, LOGS)
    assert v["valid"] is True, v["anomalies"]


def test_log_a_read_before_the_processs_own_append_is_not_judged_by_it():
    h = H()
    h.call(1, "read", ["a", 0, 10], result=["a", 0, []])
    acked(h, 1, "a", 1, 0)
    assert durability.check(h.ops, None, LOGS)["valid"] is True


def test_log_a_full_read_never_claims_the_end_of_the_log():
    h = H()
    acked(h, 1, "a", 1, 0)
    acked(h, 1, "a", 2, 1)
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1], [0, 1]]])
    # Two entries for a count of two: not a short read, so not backwards (offset 1
    # was seen), and it vouches only up to its top offset.
    assert types(durability.check(h.ops, None, LOGS)) == ["read-out-of-order"]


def test_log_a_short_read_vouches_for_its_window_up_to_the_known_end():
    h = H()
    for i in range(3):
        acked(h, 0, "a", i + 1, i)                                       # offsets 0, 1, 2
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1]]])            # short: window 0-1
    v = durability.check(h.ops, None, LOGS)
    assert lost_offsets(v) == [1]
    [lost] = [a for a in v["anomalies"] if a["type"] == "lost-write"]
    assert lost == {"type": "lost-write", "value": 2, "log": "a", "offset": 1,
                    "evidence": "final-read", "write": ref(h.ops[2]), "ack": ref(h.ops[3]),
                    "final_read": ref(h.ops[7])}


def test_log_a_full_read_with_a_gap_vouches_up_to_its_last_offset():
    h = H()
    acked(h, 0, "a", 1, 0)
    acked(h, 0, "a", 2, 1)
    acked(h, 0, "a", 3, 2)
    h.call(1, "read", ["a", 0, 2], result=["a", 0, [[0, 1], [2, 3]]])
    assert lost_offsets(durability.check(h.ops, None, LOGS)) == [1]


def test_log_an_empty_read_covers_offsets_acked_out_of_order():
    # The append at the higher offset is invoked first: the known end of the
    # log is the highest acked offset, not the last one met.
    h = H()
    h.add(1, "invoke", "append", ["a", 2])
    acked(h, 0, "a", 1, 1)
    h.add(1, "ok", "append", ["a", 2, 2])
    h.call(2, "read", ["a", 1, 10], result=["a", 1, []])
    assert sorted(lost_offsets(durability.check(h.ops, None, LOGS))) == [1, 2]


def test_log_offset_zero_is_covered_but_not_by_a_read_from_further_on():
    h = H()
    acked(h, 0, "a", 1, 0)
    h.call(1, "read", ["a", 1, 10], result=["a", 1, []])
    assert durability.check(h.ops, None, LOGS)["valid"] is True
    h.call(1, "read", ["a", 0, 10], result=["a", 0, []])
    assert lost_offsets(durability.check(h.ops, None, LOGS)) == [0]


def test_log_a_read_invoked_before_the_ack_need_not_show_it():
    h = H()
    h.add(0, "invoke", "append", ["a", 1])
    h.call(1, "read", ["a", 0, 10], result=["a", 0, []])
    h.add(0, "ok", "append", ["a", 1, 0])
    assert durability.check(h.ops, None, LOGS)["valid"] is True


def test_log_a_read_vouches_for_at_most_max_read_cover_offsets():
    cap = durability.MAX_READ_COVER
    h = H()
    acked(h, 0, "a", 1, cap - 1)   # the last offset a read from 0 vouches for
    acked(h, 0, "a", 2, cap)       # beyond it
    h.call(1, "read", ["a", 0, 10**12], result=["a", 0, []])
    assert lost_offsets(durability.check(h.ops, None, LOGS)) == [cap - 1]


def test_log_what_a_process_saw_is_cited_by_its_first_ack_at_that_offset():
    h = H()
    acked(h, 0, "a", 1, 1)                                  # ops 0, 1
    acked(h, 0, "a", 2, 1)                                  # ops 2, 3: same offset
    h.call(0, "read", ["a", 0, 10], result=["a", 0, []])
    [back] = [a for a in durability.check(h.ops, None, LOGS)["anomalies"]
              if a["type"] == "read-went-backwards"]
    assert back["seen_by"] == ref(h.ops[1])
