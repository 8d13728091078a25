"""The node-state checker: pass and fail twins for every rule."""

from __future__ import annotations

from typing import Any

import pytest

from checkers import node_state
from checkers.datatypes import LISTS, LOGS, REGISTER_TXNS, REGISTERS
from checkers.history import Op

S = 1_000_000_000


class H:
    """A history under construction: ops with explicit times (seconds)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, process: int, t0: float, t1: float | None, f: str, value: Any,
           done: str = "ok", key: Any = None, done_value: Any = None,
           level: str | None = None) -> H:
        self.ops.append(Op(len(self.ops), int(t0 * S), process, "invoke", f, value, key))
        if t1 is not None:
            self.ops.append(Op(len(self.ops), int(t1 * S), process, done, f,
                               value if done_value is None else done_value, key, level=level))
        self.ops.sort(key=lambda o: o.time)
        for i, o in enumerate(self.ops):
            o.index = i
        return self


def state(position: int, keys: dict[Any, Any], digest: str = "d", **extra: Any
          ) -> dict[str, Any]:
    return {"position": position, "digest": digest,
            "keys": [[k, v] for k, v in keys.items()], **extra}


def types(v: dict[str, Any]) -> list[str]:
    return [a["type"] for a in v["anomalies"]]


# --- the nodes against each other --------------------------------------------

def test_same_position_same_state_is_valid() -> None:
    h = H().op(1, 0, 1, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 5})}, h.ops, REGISTERS)
    assert v["valid"] is True and v["stats"]["judged_against_history"] is True


def test_same_position_different_state_names_the_nodes_and_key() -> None:
    h = H().op(1, 0, 1, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 4}, digest="e")},
                         h.ops, REGISTERS)
    assert v["valid"] is False
    a = next(a for a in v["anomalies"] if a["type"] == "divergent-state")
    assert a["key"] == "r0" and a["nodes"] == ["n1", "n2"] and a["values"] == {"n1": 5, "n2": 4}


def test_same_keys_different_digest_at_one_position_is_divergent() -> None:
    v = node_state.check({"n1": state(9, {}, digest="a"), "n2": state(9, {}, digest="b")},
                         [], REGISTERS)
    assert types(v) == ["divergent-state"]


def test_nodes_at_different_positions_are_not_compared_key_by_key() -> None:
    # n2 is behind: it may hold an older value; nothing is judged against the
    # history either (the nodes did not agree).
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 5}), "n2": state(7, {"r0": 4}, digest="e")},
                         h.ops, REGISTERS)
    assert v["valid"] is True and v["stats"]["judged_against_history"] is False


def test_list_prefixes_at_different_positions_are_valid() -> None:
    h = H().op(1, 0, 1, "txn", [["append", 1, 10], ["append", 1, 11]])
    v = node_state.check({"n1": state(9, {"1": [10, 11]}), "n2": state(8, {"1": [10]}, "e")},
                         h.ops, LISTS)
    assert v["valid"] is True


def test_lists_that_are_not_prefixes_of_each_other_diverge() -> None:
    h = H().op(1, 0, 1, "txn", [["append", 1, 10], ["append", 1, 11]])
    v = node_state.check({"n1": state(9, {"1": [10, 11]}), "n2": state(8, {"1": [11]}, "e")},
                         h.ops, LISTS)
    assert "divergent-list" in types(v)
    a = next(a for a in v["anomalies"] if a["type"] == "divergent-list")
    assert a["index"] == 0 and a["values"] == {"n1": 10, "n2": 11}


# --- registers against the history -------------------------------------------

def test_the_last_acknowledged_write_is_valid() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 5})}, h.ops, REGISTERS)
    assert v["valid"] is True


def test_a_value_older_than_an_acknowledged_write_is_stale() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 4}), "n2": state(9, {"r0": 4})}, h.ops, REGISTERS)
    assert types(v) == ["stale-value", "stale-value"]
    a = v["anomalies"][0]
    assert a["node"] == "n1" and a["key"] == "r0" and a["value"] == 4
    assert a["overwritten_with"] == 5


def test_concurrent_acknowledged_writes_may_either_be_final() -> None:
    h = H().op(1, 0, 2, "write", 4, key="r0").op(2, 1, 3, "write", 5, key="r0")
    for final in (4, 5):
        assert node_state.check({"n1": state(9, {"r0": final})}, h.ops,
                                REGISTERS)["valid"] is True


def test_an_indeterminate_write_may_be_final_even_after_later_acks() -> None:
    # It timed out at 1 s, but may have taken effect after the ok write at 2-3 s.
    h = H().op(1, 0, 1, "write", 4, key="r0", done="info").op(2, 2, 3, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 4})}, h.ops, REGISTERS)
    assert v["valid"] is True


def test_a_write_acked_below_quorum_counts_as_indeterminate() -> None:
    h = (H().op(1, 0, 1, "write", 4, key="r0").op(2, 2, 3, "write", 5, key="r0")
         .op(3, 4, 5, "write", 6, key="r0", level="none"))
    # 6 acked at "none" may be lost: 5 may be final, 4 may not.
    assert node_state.check({"n1": state(9, {"r0": 5})}, h.ops, REGISTERS)["valid"] is True
    assert node_state.check({"n1": state(9, {"r0": 4})}, h.ops, REGISTERS)["valid"] is False


def test_a_failed_write_never_is_final() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0").op(2, 2, 3, "write", 5, key="r0", done="fail")
    assert node_state.check({"n1": state(9, {"r0": 4})}, h.ops, REGISTERS)["valid"] is True
    v = node_state.check({"n1": state(9, {"r0": 5})}, h.ops, REGISTERS)
    assert types(v) == ["unwritten-value"] and v["anomalies"][0]["failed_write"] == 2


def test_a_value_nobody_wrote_is_unwritten() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0")
    assert types(node_state.check({"n1": state(9, {"r0": 99})}, h.ops,
                                  REGISTERS)) == ["unwritten-value"]


def test_an_absent_key_after_an_acknowledged_write_is_stale() -> None:
    h = H().op(1, 0, 1, "cas", [None, 4], key="r0")
    assert types(node_state.check({"n1": state(9, {})}, h.ops, REGISTERS)) == ["stale-value"]
    # No write acknowledged (the cas failed): absent is right.
    h = H().op(1, 0, 1, "cas", [3, 4], key="r0", done="fail")
    assert node_state.check({"n1": state(9, {})}, h.ops, REGISTERS)["valid"] is True


def test_the_keyless_register_is_key_none() -> None:
    h = H().op(1, 0, 1, "write", 4).op(1, 2, 3, "write", 5)
    assert node_state.check({"n1": state(9, {None: 5})}, h.ops, REGISTERS)["valid"] is True
    assert node_state.check({"n1": state(9, {None: 4})}, h.ops, REGISTERS)["valid"] is False


def test_register_txns_judge_their_w_micro_ops() -> None:
    h = (H().op(1, 0, 1, "txn", [["w", 1, 4], ["r", 2, None]])
         .op(1, 2, 3, "txn", [["w", 1, 5]]))
    assert node_state.check({"n1": state(9, {"1": 5})}, h.ops, REGISTER_TXNS)["valid"] is True
    assert node_state.check({"n1": state(9, {"1": 4})}, h.ops, REGISTER_TXNS)["valid"] is False
    # Without real-time order (a serializable model) the older value may be final.
    assert node_state.check({"n1": state(9, {"1": 4})}, h.ops, REGISTER_TXNS,
                            realtime=False)["valid"] is True


# --- lists against the history -----------------------------------------------

def lists_history() -> H:
    return (H().op(1, 0, 1, "txn", [["append", 1, 10]])
            .op(2, 0, 1, "txn", [["append", 1, 11]], done="info")
            .op(3, 2, 3, "txn", [["append", 1, 12]], done="fail"))


def test_a_list_with_every_acked_append_is_valid() -> None:
    for held in ([10], [10, 11], [11, 10]):
        assert node_state.check({"n1": state(9, {"1": held})}, lists_history().ops,
                                LISTS)["valid"] is True


def test_a_list_missing_an_acked_append_loses_it() -> None:
    v = node_state.check({"n1": state(9, {"1": [11]})}, lists_history().ops, LISTS)
    assert types(v) == ["lost-append"] and v["anomalies"][0]["value"] == 10


@pytest.mark.parametrize("held, kind", [
    ([10, 12], "failed-append-applied"),
    ([10, 13], "unwritten-element"),
    ([10, 10], "duplicate-element"),
])
def test_elements_that_must_not_be_there(held: list[int], kind: str) -> None:
    v = node_state.check({"n1": state(9, {"1": held})}, lists_history().ops, LISTS)
    assert types(v) == [kind] and v["anomalies"][0]["node"] == "n1"


# --- logs against the history ------------------------------------------------

def test_logs_hold_each_acked_append_at_its_offset() -> None:
    h = H().op(1, 0, 1, "append", ["a", 7], done_value=["a", 7, 0])
    good = {"n1": state(9, {}, logs=[["a", [7]]])}
    bad = {"n1": state(9, {}, logs=[["a", [8, 7]]])}
    assert node_state.check(good, h.ops, LOGS)["valid"] is True
    v = node_state.check(bad, h.ops, LOGS)
    assert types(v) == ["lost-append"] and v["anomalies"][0]["held"] == 8


# --- what it cannot judge ----------------------------------------------------

def test_a_silent_node_is_unknown_and_the_majority_still_judged() -> None:
    """n3 silent to the end: its part is unknown, so the verdict is, naming
    it and the nodes judged valid; the majority holding the last acked value."""
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    states = {"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 5}), "n3": None}
    v = node_state.check(states, h.ops, REGISTERS)
    assert v["valid"] == "unknown" and v["stats"]["judged_against_history"] is True
    assert v["stats"]["unknown_nodes"] == {"n3": "did not answer: no applied state read"}
    assert v["stats"]["judged_valid"] == ["n1", "n2"]
    assert v["stats"]["reason"] == ("1 of 3 node(s) did not answer (n3): its state unknown; "
                                    "n1, n2 judged against the history: valid")


@pytest.mark.parametrize("down, why", [
    ([], "did not answer though its process was running: no applied state read"),
    (["n3"], "did not answer: its process was not running at the end, and no fault "
             "accounts for that (node-exits judges its exit)")])
def test_a_silent_node_no_fault_left_down_is_unknown_saying_whether_it_ran(down, why) -> None:
    """Jepsen's "nothing to judge" is unknown: a live node that never said its
    state is never valid, whether its process ran or had gone for no fault."""
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    states = {"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 5}), "n3": None}
    v = node_state.check(states, h.ops, REGISTERS, down=down, left_down={})
    assert v["valid"] == "unknown" and v["stats"]["unknown_nodes"] == {"n3": why}
    assert "left_down_by_fault" not in v["stats"]


def test_a_node_a_fault_left_down_is_left_out_and_named() -> None:
    """The twin: n3 was removed and every heal failed to add it back, so
    nothing was expected of it; the others, judged valid, are the verdict."""
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    states = {"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 5}), "n3": None}
    why = "a fault that makes nodes leave was still in force for it at the end"
    v = node_state.check(states, h.ops, REGISTERS, down=["n3"], left_down={"n3": why})
    assert v["valid"] is True and v["stats"]["judged_against_history"] is True
    assert v["stats"]["left_down_by_fault"] == {"n3": why}
    # Excused, it hides nothing on the others.
    stale = {"n1": state(9, {"r0": 4}), "n2": state(9, {"r0": 4}), "n3": None}
    v = node_state.check(stale, h.ops, REGISTERS, down=["n3"], left_down={"n3": why})
    assert v["valid"] is False and types(v) == ["stale-value", "stale-value"]


def test_nodes_left_down_leaving_a_minority_answering_are_unknown() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0")
    states = {"n1": state(9, {"r0": 4}), "n2": None, "n3": None}
    left = {"n2": "exited", "n3": "exited"}
    v = node_state.check(states, h.ops, REGISTERS, down=["n2", "n3"], left_down=left)
    assert v["valid"] == "unknown" and v["stats"]["reason"] == (
        "no node judged against the history (fewer than a majority of the nodes answered); "
        "n2, n3 left down by a fault")


def test_a_silent_node_does_not_hide_a_stale_value_on_the_majority() -> None:
    """The twin: the majority holds a value an acknowledged write overwrote."""
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    states = {"n1": state(9, {"r0": 4}), "n2": state(9, {"r0": 4}), "n3": None}
    v = node_state.check(states, h.ops, REGISTERS)
    assert v["valid"] is False and types(v) == ["stale-value", "stale-value"]
    assert v["stats"]["silent"] == ["n3"]


def test_a_silent_node_does_not_hide_the_comparison() -> None:
    states = {"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 4}, digest="e"), "n3": None}
    v = node_state.check(states, [], REGISTERS, leader_known=False)
    assert v["valid"] is False and types(v) == ["divergent-state"]


def test_with_a_minority_answering_no_node_is_judged() -> None:
    """One of three answered: nothing judged against the history, unknown,
    saying why."""
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 4}), "n2": None, "n3": None}, h.ops, REGISTERS)
    assert v["valid"] == "unknown" and v["stats"]["judged_valid"] == []
    assert v["stats"]["reason"] == (
        "2 of 3 node(s) did not answer (n2, n3): their state unknown; no node judged against "
        "the history (fewer than a majority of the nodes answered)")


def test_one_answering_node_of_several_is_unknown() -> None:
    v = node_state.check({"n1": state(9, {}), "n2": None}, [], REGISTERS)
    assert v["valid"] == "unknown" and "1 of 2" in v["stats"]["reason"]


def test_no_node_answering_is_unknown() -> None:
    v = node_state.check({"n1": None, "n2": None}, [], REGISTERS)
    assert v["valid"] == "unknown" and "no node answered" in v["stats"]["reason"]


def test_a_data_type_without_rules_is_unknown() -> None:
    v = node_state.check({"n1": state(9, {})}, [], "queues")
    assert v["valid"] == "unknown" and "queues" in v["stats"]["reason"]


def test_without_a_known_leader_the_history_is_not_judged() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    states = {"n1": state(9, {"r0": 4}), "n2": state(9, {"r0": 4})}
    assert node_state.check(states, h.ops, REGISTERS)["valid"] is False
    v = node_state.check(states, h.ops, REGISTERS, leader_known=False)
    assert v["valid"] is True and "no leader" in v["stats"]["not_judged_because"]


def test_nodes_at_one_position_that_differ_are_each_judged_against_the_history() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    v = node_state.check({"n1": state(9, {"r0": 5}), "n2": state(9, {"r0": 4}, digest="e")},
                         h.ops, REGISTERS)
    assert sorted(types(v)) == ["divergent-state", "stale-value"]
    assert next(a for a in v["anomalies"] if a["type"] == "stale-value")["node"] == "n2"


def test_many_anomalies_of_one_kind_do_not_hide_another() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0")
    many = {f"k{i}": i for i in range(node_state.MAX_PER_KIND + 10)}
    states = {"n1": state(9, {"r0": 4, **many}), "n2": state(9, {"r0": 4}, digest="e")}
    v = node_state.check(states, h.ops, REGISTERS)
    assert "stale-value" in types(v)
    assert types(v).count("divergent-state") == node_state.MAX_PER_KIND
    assert v["stats"]["anomalies_by_kind"]["divergent-state"] == node_state.MAX_PER_KIND + 10


# --- from a run dir: the harness's `down` and the faults of the history ------


def judged_from_run_dir(tmp_path: Any, ops: list[Op], down: list[str] | None) -> dict[str, Any]:
    """node-state as a run is judged: n4 silent, the others holding r0's last
    acknowledged write; `down`: run.json node_states' (None: a run saved before)."""
    import msgpack

    from checkers.checker import APPLIED_STATE
    from checkers.history import History
    from checkers.registry import check_loaded
    from checkers.rundir import NODE_STATE, Run
    from workloads.judging import plan_for

    for n in ("n1", "n2", "n3", "n4", "n5"):
        d = tmp_path / "nodes" / n
        d.mkdir(parents=True)
        held = None if n == "n4" else state(9, {"r0": 5})
        (d / NODE_STATE).write_bytes(msgpack.packb(held))
    collected = {"leader": "n1", "agreed": False, "workloads": ["register"],
                 **({"down": down} if down is not None else {})}
    run = {"config": {"workload": "register"}, "artifacts": [APPLIED_STATE],
           "start_monotonic_ns": 0, "node_states": collected}
    plan = {"node-state": plan_for(run)["node-state"]}
    return check_loaded(Run(tmp_path, run, History(ops)), plan)["checkers"]["node-state"]


def removed_n4(restore: dict[str, Any]) -> list[Op]:
    """Writes of 4 then 5 to r0; n4 removed at 10 s, restored at 20 s with `restore`."""
    ops = H().op(1, 0, 1, "write", 4, key="r0").op(1, 2, 3, "write", 5, key="r0").ops
    return [*ops,
            Op(4, 10 * S, "nemesis", "invoke", "membership", None),
            Op(5, 10 * S + 1, "nemesis", "info", "membership",
               {"change": "remove", "nodes": ["n4"], "ok": True}),
            Op(6, 20 * S, "nemesis", "invoke", "restore-voters", None),
            Op(7, 20 * S + 1, "nemesis", "info", "restore-voters", restore)]


def test_a_member_no_heal_could_add_back_leaves_the_verdict_valid(tmp_path) -> None:
    failed = {"nodes": [], "failed": {"n4": "member_not_ready"}, "given_up": ["n4"]}
    v = judged_from_run_dir(tmp_path, removed_n4(failed), down=["n4"])
    assert v["valid"] is True and list(v["stats"]["left_down_by_fault"]) == ["n4"]


@pytest.mark.parametrize("restore, down", [
    ({"nodes": ["n4"], "failed": {}}, ["n4"]),   # added back, yet down: its own doing
    ({"nodes": [], "failed": {"n4": "member_not_ready"}}, []),   # still out, but running
    ({"nodes": [], "failed": {"n4": "member_not_ready"}}, None)])  # a run saved before
def test_a_silent_node_no_fault_accounts_for_stays_unknown(tmp_path, restore, down) -> None:
    v = judged_from_run_dir(tmp_path, removed_n4(restore), down=down)
    assert v["valid"] == "unknown" and list(v["stats"]["unknown_nodes"]) == ["n4"]
    assert "left_down_by_fault" not in v["stats"]


def test_a_companion_without_rules_is_named_as_not_judged() -> None:
    h = H().op(1, 0, 1, "write", 4, key="r0")
    states = {"n1": state(9, {"r0": 4}), "n2": state(9, {"r0": 4})}
    v = node_state.check(states, h.ops, REGISTERS, companions={"queue": "queues"},
                         main="register")
    assert v["valid"] is True
    assert v["stats"]["workloads_not_judged"] == {"queue": "no node-state rules for data "
                                                           "'queues'"}
