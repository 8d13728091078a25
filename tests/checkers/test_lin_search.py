"""Hand-written histories for each model and each tricky rule: a pass and a fail case."""

import argparse
import json
import time

import pytest

from checkers.history import Op
from checkers.lin_report import render_html, write_html
from checkers.linearizability import check


def H(*events):
    """Ops from (process, type, f, value[, key]) tuples; position is time."""
    ops = []
    for i, e in enumerate(events):
        p, t, f, v = e[:4]
        ops.append(Op(i, i * 1000, p, t, f, v, e[4] if len(e) > 4 else None))
    return ops


def valid(history, **kw):
    return check(history, **kw)["valid"]


def failing_op(history, **kw):
    """(index, description) of the op the search could not linearize; asserts
    the history was judged not linearizable."""
    v = check(history, **kw)
    assert v["valid"] is False, v
    a = v["anomalies"][0]
    assert a["type"] == "nonlinearizable"
    return a["op"]["index"], a["op"]["what"]


def seq(p, f, v, result=None, typ="ok", key=None):
    """An op that runs alone: its invoke and completion back to back."""
    done = v if result is None else result
    return [(p, "invoke", f, None if f in ("read", "get") else v, key),
            (p, typ, f, done, key)]


def test_register_sequential():
    assert valid(H(*seq(0, "write", 1), *seq(1, "read", None, 1)), model="register")
    assert failing_op(H(*seq(0, "write", 1), *seq(1, "read", None, 2)),
                      model="register") == (2, "read -> 2")


def test_concurrent_write_and_read_may_see_either():
    for seen in (None, 1):
        h = H((0, "invoke", "write", 1), (1, "invoke", "read", None),
              (1, "ok", "read", seen), (0, "ok", "write", 1))
        assert valid(h) is True
    stale = H(*seq(0, "write", 1), (0, "invoke", "write", 2), (1, "invoke", "read", None),
              (1, "ok", "read", None), (0, "ok", "write", 2))
    assert failing_op(stale) == (3, "read -> None")


def test_info_write_that_happens_later():
    h = H((0, "invoke", "write", 1), (0, "info", "write", None),
          *seq(1, "read", None, None), *seq(2, "read", None, 1))
    assert valid(h) is True
    # Once seen, it cannot un-happen.
    h = H((0, "invoke", "write", 1), (0, "info", "write", None),
          *seq(1, "read", None, 1), *seq(2, "read", None, None))
    assert failing_op(h) == (4, "read -> None")


def test_info_write_that_never_happens():
    h = H(*seq(0, "write", 1), (1, "invoke", "write", 2), (1, "info", "write", None),
          *seq(2, "read", None, 1), *seq(3, "read", None, 1))
    assert valid(h) is True
    # An ok write cannot be skipped the same way.
    h = H(*seq(0, "write", 1), *seq(1, "write", 2), *seq(2, "read", None, 1))
    assert failing_op(h) == (4, "read -> 1")


def test_failed_write_did_not_happen():
    # A write that failed definitively is not indeterminate: nothing may read it.
    h = H((0, "invoke", "write", 1), (0, "fail", "write", 1), *seq(1, "read", None, 1))
    assert failing_op(h) == (2, "read -> 1")
    assert failing_op(h, model="cas-register-knossos") == (2, "read -> 1")
    maybe = H((0, "invoke", "write", 1), (0, "info", "write", None), *seq(1, "read", None, 1))
    assert valid(maybe) is True


def test_failed_kv_put_and_append_did_not_happen():
    for f in ("put", "append"):
        h = H((0, "invoke", f, "x", "k"), (0, "fail", f, "x", "k"),
              *seq(1, "get", None, "x", key="k"))
        assert failing_op(h, model="kv") == (2, "get -> 'x'")
        maybe = H((0, "invoke", f, "x", "k"), (0, "info", f, None, "k"),
                  *seq(1, "get", None, "x", key="k"))
        assert valid(maybe, model="kv") is True


def test_open_invoke_is_indeterminate():
    h = H((0, "invoke", "write", 1), *seq(1, "read", None, 1))
    assert valid(h) is True
    assert failing_op(H((0, "invoke", "write", 1), *seq(1, "read", None, 2))) == (1, "read -> 2")


def test_info_cas_chain():
    # Two indeterminate cas ops must both happen, in order, to explain the read.
    h = H(*seq(0, "write", 1), (1, "invoke", "cas", [2, 3]), (1, "info", "cas", None),
          (2, "invoke", "cas", [1, 2]), (2, "info", "cas", None), *seq(3, "read", None, 3))
    assert valid(h) is True
    h = H(*seq(0, "write", 1), (1, "invoke", "cas", [2, 3]), (1, "info", "cas", None),
          (2, "invoke", "cas", [5, 2]), (2, "info", "cas", None), *seq(3, "read", None, 3))
    # The read of 3 says cas 2->3 happened before it, which no order allows.
    assert failing_op(h) == (2, "cas 2->3 (maybe)")


def test_concurrent_cas():
    both_from_0 = H(*seq(0, "write", 0), (1, "invoke", "cas", [0, 1]),
                    (2, "invoke", "cas", [0, 2]), (1, "ok", "cas", [0, 1]),
                    (2, "ok", "cas", [0, 2]))
    # Either cas can be the one placed second; the blame falls on one of them.
    assert failing_op(both_from_0) in {(2, "cas 0->1"), (3, "cas 0->2")}
    chained = H(*seq(0, "write", 0), (2, "invoke", "cas", [1, 2]),
                (1, "invoke", "cas", [0, 1]), (2, "ok", "cas", [1, 2]),
                (1, "ok", "cas", [0, 1]), *seq(3, "read", None, 2))
    assert valid(chained) is True


def test_failed_cas_is_evidence_in_etcd_flavour_only():
    h = H(*seq(0, "write", 1), *seq(1, "cas", [1, 2], typ="fail"))
    assert failing_op(h, model="cas-register") == (2, "cas 1->2 (failed)")
    assert valid(h, model="cas-register-knossos") is True
    concurrent_write = H(*seq(0, "write", 1), (2, "invoke", "write", 3),
                         (1, "invoke", "cas", [1, 2]), (1, "fail", "cas", [1, 2]),
                         (2, "ok", "write", 3))
    assert valid(concurrent_write, model="cas-register") is True


def test_nil_read_flavours():
    h = H(*seq(0, "write", 1), *seq(1, "read", None, None))
    assert failing_op(h, model="cas-register") == (2, "read -> None")
    assert valid(h, model="cas-register-knossos") is True
    assert failing_op(H(*seq(0, "write", 1), *seq(1, "read", None, 2)),
                      model="cas-register-knossos") == (2, "read -> 2")


def test_read_of_never_written_key():
    h = H(*seq(0, "write", 1, key="b"), *seq(1, "read", None, None, key="a"),
          *seq(1, "read", None, 1, key="b"))
    assert valid(h, model="register-kv") is True
    h = H(*seq(0, "write", 1, key="b"), *seq(1, "read", None, 1, key="a"))
    v = check(h, model="register-kv")
    assert v["valid"] is False
    assert [a["key"] for a in v["anomalies"]] == ["a"]
    assert {k["key"]: k["valid"] for k in v["stats"]["per_key"]} == {"a": False, "b": True}


def test_cas_on_a_never_written_key():
    """The register workload's absent-key probe: a cas that expects a value
    nobody wrote, on a key nobody writes, must fail; one that succeeds is not
    linearizable (a store whose lookup defaults to the expected value)."""
    fails = H(*seq(0, "write", 1, key="r0"), *seq(1, "cas", [7, 8], typ="fail", key="r0-absent"),
              *seq(1, "read", None, None, key="r0-absent"))
    assert valid(fails, model="register-kv") is True
    succeeds = H(*seq(0, "write", 1, key="r0"), *seq(1, "cas", [7, 8], key="r0-absent"))
    v = check(succeeds, model="register-kv")
    assert v["valid"] is False
    assert [a["key"] for a in v["anomalies"]] == ["r0-absent"]


def test_kv_model():
    ok = H(*seq(0, "append", "x ", key="k"), *seq(1, "append", "y ", key="k"),
           *seq(2, "get", None, "x y ", key="k"), *seq(0, "put", "z", key="k"),
           *seq(1, "get", None, "z", key="k"), *seq(2, "get", None, "", key="j"))
    assert valid(ok, model="kv") is True
    bad = H(*seq(0, "append", "x ", key="k"), *seq(1, "append", "y ", key="k"),
            *seq(2, "get", None, "y x ", key="k"))
    assert failing_op(bad, model="kv") == (4, "get -> 'y x '")


def test_mutex():
    ok = H(*seq(0, "acquire", None), *seq(0, "release", None), *seq(1, "acquire", None))
    assert valid(ok, model="mutex") is True
    bad = H(*seq(0, "acquire", None), *seq(1, "acquire", None))
    assert failing_op(bad, model="mutex") == (2, "acquire by 1")
    overlapping = H((0, "invoke", "acquire", None), (1, "invoke", "acquire", None),
                    (0, "ok", "acquire", None), (1, "fail", "acquire", None))
    assert valid(overlapping, model="mutex") is True


def test_mutex_failed_release_did_not_happen():
    # The holder's release failed: the lock is still held when 1 acquires it.
    h = H(*seq(0, "acquire", None), (0, "invoke", "release", None),
          (0, "fail", "release", None), *seq(1, "acquire", None))
    assert failing_op(h, model="mutex") == (4, "acquire by 1")
    maybe = H(*seq(0, "acquire", None), (0, "invoke", "release", None),
              (0, "info", "release", None), *seq(1, "acquire", None))
    assert valid(maybe, model="mutex") is True


def test_mutex_indeterminate_acquire_may_never_have_happened():
    h = H((0, "invoke", "acquire", None), (0, "info", "acquire", None),
          *seq(1, "acquire", None), *seq(1, "release", None))
    assert valid(h, model="mutex") is True
    bad = H(*seq(0, "acquire", None), *seq(0, "release", None), *seq(1, "release", None))
    assert failing_op(bad, model="mutex") == (4, "release by 1")


def test_never_completed_kv_and_mutex_ops_are_indeterminate():
    put = H((0, "invoke", "put", "x", "k"), *seq(1, "get", None, "x", key="k"),
            *seq(1, "get", None, None, key="j"))  # nil get of an untouched key is ""
    assert valid(put, model="kv") is True
    assert failing_op(H((0, "invoke", "put", "x", "k"), *seq(1, "get", None, "y", key="k")),
                      model="kv") == (1, "get -> 'y'")
    acquire = H((0, "invoke", "acquire", None), *seq(1, "acquire", None))
    assert valid(acquire, model="mutex") is True


def test_mutex_op_it_has_no_meaning_for_is_unknown():
    v = check(H(*seq(0, "write", 1)), model="mutex")
    assert v["valid"] == "unknown"
    assert "no operation 'write'" in json.dumps(v["anomalies"])


def test_nemesis_ops_are_ignored():
    h = H(("nemesis", "invoke", "kill", {"nodes": ["n1"]}), *seq(0, "write", 1),
          ("nemesis", "info", "kill", {"nodes": ["n1"]}), *seq(1, "read", None, 1))
    assert valid(h) is True


def test_counterexample_names_the_op_and_its_neighbours():
    h = H(*seq(0, "write", 1), (1, "invoke", "write", 2), (2, "invoke", "read", None),
          (2, "ok", "read", 3), (1, "ok", "write", 2))
    v = check(h)
    (a,) = v["anomalies"]
    assert a["type"] == "nonlinearizable"
    assert a["op"]["what"] == "read -> 3" and a["op"]["process"] == 2
    assert [o["what"] for o in a["linearized"]][0] == "write 1"
    assert [o["what"] for o in a["concurrent"]] == ["write 2"]


def many_concurrent_writes(n):
    """n overlapping writes then an impossible read: exhausts about n * 2**n configs."""
    evs = [(p, "invoke", "write", p) for p in range(n)]
    evs += [(p, "ok", "write", p) for p in range(n)]
    return H(*evs, *seq(n, "read", None, -1))


def test_budget_time_gives_unknown_not_a_hang():
    v = check(many_concurrent_writes(16), time_limit=0.05)
    assert v["valid"] == "unknown"
    (a,) = v["anomalies"]
    assert a["type"] == "search-incomplete" and "time limit" in a["reason"]
    assert a["stats"]["steps"] > 0


def test_budget_memory_gives_unknown():
    v = check(many_concurrent_writes(16), memory_limit_mb=0)
    assert v["valid"] == "unknown"
    assert "memory limit" in v["anomalies"][0]["reason"]


def test_small_exhaustive_search_fails_within_budget():
    assert failing_op(many_concurrent_writes(8)) == (16, "read -> -1")


def test_stop_on_first_failure():
    h = H(*seq(0, "write", 1, key="a"), *seq(1, "read", None, 2, key="a"),
          *seq(0, "write", 1, key="b"), *seq(1, "read", None, 2, key="b"))
    assert len(check(h, model="register-kv")["anomalies"]) == 2
    v = check(h, model="register-kv", stop_on_first_failure=True)
    assert v["valid"] is False and len(v["anomalies"]) == 1
    assert (v["stats"]["keys"], v["stats"]["keys_checked"]) == (2, 1)


def test_ill_formed_history_is_unknown():
    v = check(H((0, "ok", "write", 1)))
    assert v["valid"] == "unknown" and v["anomalies"][0]["type"] == "ill-formed-history"
    assert check(H(*seq(0, "write", 1)), model="nope")["valid"] == "unknown"


def test_html_view(tmp_path):
    v = check(H(*seq(0, "write", 1), (1, "invoke", "write", 2), (1, "info", "write", None),
                *seq(2, "read", None, 3)))
    out = tmp_path / "linearizability.html"
    write_html(v, out)
    text = out.read_text()
    assert "NOT linearizable" in text and "<svg" in text and "class='fail" in text
    assert "<script src" not in text and "<link" not in text  # standalone
    assert "linearizable</span>" in render_html(check(H(*seq(0, "write", 1))))


@pytest.mark.parametrize("read, code", [(1, 0), (2, 1)])
def test_cli_exit_codes(tmp_path, capsys, read, code):
    from checkers.history import pack_op
    from harness.commands import check_lin

    path = tmp_path / "history.msgpack"
    path.write_bytes(b"".join(pack_op(o) for o in H(*seq(0, "write", 1),
                                                    *seq(1, "read", None, read))))
    parser = argparse.ArgumentParser()
    check_lin.register(parser.add_subparsers())
    html = tmp_path / "out.html"
    args = parser.parse_args(["check-lin", str(path), "--model", "register",
                              "--html", str(html)])
    assert args.func(args) == code
    assert ("valid" if code == 0 else "INVALID") in capsys.readouterr().out
    assert html.exists()


def test_initial_value_option():
    # Knossos's own harness starts its registers at 0.
    reads_zero = H(*seq(1, "read", None, 0), *seq(0, "write", 1), *seq(1, "read", None, 1))
    assert valid(reads_zero, model="cas-register-knossos",
                 model_options={"initial": 0}) is True
    assert valid(reads_zero, model="cas-register-knossos") is False
    cas_from_zero = H(*seq(0, "cas", [0, 2]), *seq(1, "read", None, 2))
    assert valid(cas_from_zero, model="cas-register", model_options={"initial": 0}) is True
    assert valid(cas_from_zero, model="cas-register") is False
    # Once left, the initial value cannot be read again (it is written by nobody).
    stale_zero = H(*seq(0, "write", 1), *seq(1, "read", None, 0))
    assert valid(stale_zero, model="cas-register", model_options={"initial": 0}) is False
    v = check(reads_zero, model="cas-register", model_options={"colour": 1})
    assert v["valid"] == "unknown" and "no option 'colour'" in v["anomalies"][0]["reason"]


def txn(p, mops, result=None, typ="ok"):
    """A txn running alone; `result` fills its reads' values."""
    return [(p, "invoke", "txn", [[f, k, None if f == "r" else v] for f, k, v in mops]),
            (p, typ, "txn", result if result is not None else mops)]


def test_multi_register_txns():
    ok = H(*txn(0, [["w", "x", 1], ["w", "y", 2]]), *txn(1, [["r", "x", 1], ["r", "y", 2]]),
           *txn(2, [["w", "x", 3], ["r", "x", 3]]), *txn(1, [["r", "x", 3], ["r", "y", 2]]))
    assert valid(ok, model="multi-register") is True
    # A txn is atomic: nobody sees half of it.
    def concurrent_read(x, y):
        return H(*txn(0, [["w", "x", 0], ["w", "y", 0]]),
                 (0, "invoke", "txn", [["w", "x", 1], ["w", "y", 1]]),
                 (1, "invoke", "txn", [["r", "x", None], ["r", "y", None]]),
                 (1, "ok", "txn", [["r", "x", x], ["r", "y", y]]),
                 (0, "ok", "txn", [["w", "x", 1], ["w", "y", 1]]))
    assert valid(concurrent_read(1, 1), model="multi-register") is True
    assert valid(concurrent_read(0, 0), model="multi-register") is True
    assert valid(concurrent_read(1, 0), model="multi-register") is False
    # A nil read is unknown (Knossos), so it fits anywhere.
    nil = H(*txn(0, [["w", "x", 1]]), *txn(1, [["r", "x", None], ["r", "y", None]]))
    assert valid(nil, model="multi-register") is True
    stale = H(*txn(0, [["w", "x", 1]]), *txn(0, [["w", "x", 2]]), *txn(1, [["r", "x", 1]]))
    v = check(stale, model="multi-register")
    assert v["valid"] is False and v["anomalies"][0]["op"]["what"] == "txn r('x' 1)"


def test_multi_register_indeterminate_and_initial():
    # An info txn may have happened: its write explains a later read, then stays.
    h = H((0, "invoke", "txn", [["w", "x", 5], ["r", "y", None]]), (0, "info", "txn", None),
          *txn(1, [["r", "x", 5]]))
    assert valid(h, model="multi-register") is True
    h = H((0, "invoke", "txn", [["w", "x", 5]]), (0, "info", "txn", None),
          *txn(1, [["r", "x", 5]]), *txn(1, [["r", "x", 6]]))
    assert valid(h, model="multi-register") is False
    # A failed txn never happened.
    h = H(*txn(0, [["w", "x", 5]], typ="fail"), *txn(1, [["r", "x", 5]]))
    assert valid(h, model="multi-register") is False
    starts = H(*txn(1, [["r", "x", 0], ["r", "y", 0]]), *txn(0, [["w", "x", 1]]),
               *txn(1, [["r", "x", 1], ["r", "y", 0]]))
    assert valid(starts, model="multi-register",
                 model_options={"initial": {"x": 0, "y": 0}}) is True
    assert valid(starts, model="multi-register", model_options={"initial": {"x": 0}}) is False


@pytest.mark.parametrize("options, code", [([], 1), (["--model-option", "initial=0"], 0)])
def test_cli_model_option(tmp_path, capsys, options, code):
    from checkers.history import pack_op
    from harness.commands import check_lin

    path = tmp_path / "history.msgpack"
    path.write_bytes(b"".join(pack_op(o) for o in H(*seq(0, "read", None, 0))))
    parser = argparse.ArgumentParser()
    check_lin.register(parser.add_subparsers())
    args = parser.parse_args(["check-lin", str(path), "--model", "cas-register", *options])
    assert args.func(args) == code


def test_mutex_indeterminate_release():
    # Only the holder's maybe-release can free the lock for the next acquire.
    def h(releaser):
        return H(*seq(0, "acquire", None), (releaser, "invoke", "release", None),
                 (releaser, "info", "release", None), *seq(1, "acquire", None))
    assert valid(h(0), model="mutex") is True
    assert valid(h(2), model="mutex") is False


def test_a_stale_read_far_later_is_the_op_named():
    # Unique values: the read of 1 long after 1 was overwritten is what fails,
    # not the write that had to overwrite 1 while that read was still unplaced.
    ops = [*seq(0, "write", 1), *seq(1, "read", None, 1)]
    for v in range(2, 30):
        ops += [*seq(0, "write", v), *seq(1, "read", None, v)]
    stale = H(*ops, *seq(2, "read", None, 1), *seq(0, "write", 99))
    v = check(stale)
    assert v["valid"] is False
    (a,) = v["anomalies"]
    assert a["op"]["what"] == "read -> 1" and a["op"]["process"] == 2
    assert a["overwritten_by"]["what"] == "write 2" and "produced only once" in a["why"]
    html = render_html(v)
    assert "produced only once" in html and "class='over'" in html
    assert valid(H(*ops, *seq(2, "read", None, 29), *seq(0, "write", 99))) is True


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_as_it_was_after_a_check(enabled):
    import gc
    h = H(*seq(0, "write", 1), *seq(1, "read", None, 2))
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert valid(h, model="register") is False
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# --- what the counterexample and an incomplete search say (mutants that survived)


def test_counterexample_prefix_shows_an_indeterminate_write_as_info():
    history = H((0, "invoke", "write", 1), (0, "ok", "write", 1),
                (1, "invoke", "write", 2),                       # never completes
                (2, "invoke", "read", None), (2, "ok", "read", 2),
                (3, "invoke", "write", 1), (3, "ok", "write", 1),
                (2, "invoke", "read", None), (2, "ok", "read", 2))  # 2 is gone by now
    v = check(history, model="register")
    [a] = v["anomalies"]
    assert [(o["index"], o["type"]) for o in a["linearized"]] == [(0, "ok"), (2, "info"), (3, "ok")]
    info = a["linearized"][1]
    assert (info["what"], info["result"], info["complete_time"], info["det"]) == (
        "write 2", None, None, False)
    assert (a["op"]["index"], a["op"]["what"]) == (7, "read -> 2")


def test_an_incomplete_search_names_its_key():
    history = many_concurrent_writes(16)
    keyed = [Op(o.index, o.time, o.process, o.type, o.f, o.value, key="k") for o in history]
    v = check(keyed, model="register-kv", time_limit=0.05)
    (a,) = v["anomalies"]
    assert (a["type"], a["key"]) == ("search-incomplete", "k")
    assert set(a) == {"type", "key", "reason", "stats"}


def test_counterexample_state_starts_from_the_models_initial_value():
    history = H((0, "invoke", "read", None), (0, "ok", "read", 5))
    [a] = check(history, model="register", model_options={"initial": 0})["anomalies"]
    assert (a["state"], a["linearized_count"], a["op"]["what"]) == (0, 0, "read -> 5")
    [a] = check(history, model="register")["anomalies"]
    assert a["state"] is None


# ------------------------------------------- which op a counterexample names


def test_stuck_search_names_the_first_op_to_return_not_the_first_called():
    # Both reads are impossible (nothing wrote 9 or 7); the one that returned
    # first is the op every order must place next, so it is the one named.
    h = H((0, "invoke", "read", None), (1, "invoke", "read", None),
          (1, "ok", "read", 7), (0, "ok", "read", 9))
    assert failing_op(h, model="register") == (1, "read -> 7")
    ok = H((0, "invoke", "read", None), (1, "invoke", "read", None),
           (1, "ok", "read", None), (0, "ok", "read", None))
    assert valid(ok, model="register") is True


def test_stale_read_behind_a_cas_names_the_cas_that_overwrote_its_value():
    # 1 is written once and the cas 1 -> 2 (legal only from 1) must replace
    # it before the read of 1 starts: the read is the op no order explains.
    stale = H(*seq(0, "write", 1), *seq(1, "cas", [1, 2]), *seq(2, "read", None, 1))
    v = check(stale, model="cas-register")
    assert v["valid"] is False
    a = v["anomalies"][0]
    assert (a["op"]["index"], a["op"]["what"]) == (4, "read -> 1")
    assert a["overwritten_by"]["index"] == 2 and "produced only once" in a["why"]
    fresh = H(*seq(0, "write", 1), *seq(1, "cas", [1, 2]), *seq(2, "read", None, 2))
    assert valid(fresh, model="cas-register") is True


def test_kv_get_explained_by_an_earlier_indeterminate_put_is_not_pruned():
    # After append "x" the get of "q" cannot follow from "x" by appends alone,
    # but the indeterminate put "q" invoked before the get returned may run
    # first: the dead-end rule must see that reset still pending.
    with_put = H(*seq(0, "append", "x", key="k"), (1, "invoke", "put", "q", "k"),
                 (1, "info", "put", None, "k"), *seq(2, "get", None, "q", key="k"))
    assert valid(with_put, model="kv") is True
    without = H(*seq(0, "append", "x", key="k"), *seq(2, "get", None, "q", key="k"))
    assert failing_op(without, model="kv") == (2, "get -> 'q'")


def test_per_key_search_seconds_are_part_of_the_check_time():
    # A part of the wall time cannot exceed the whole: stats report the
    # search's own seconds, rounded, never a constant.
    h = H(*seq(0, "write", 1), *seq(1, "read", None, 1))
    started = time.monotonic()
    v = check(h, model="register")
    elapsed = time.monotonic() - started
    seconds = v["stats"]["per_key"][0]["seconds"]
    assert isinstance(seconds, float) and 0.0 <= seconds <= elapsed


def test_counterexample_names_model_times_and_search_size():
    v = check(H(*seq(0, "write", 1), *seq(1, "read", None, 2)), model="register")
    (a,) = v["anomalies"]
    assert a["model"] == "register"
    assert (a["op"]["invoke_time"], a["op"]["complete_time"]) == (2000, 3000)
    per_key = v["stats"]["per_key"][0]
    assert per_key["configurations"] >= 1 and per_key["steps"] >= per_key["configurations"]


def test_memory_limit_reason_states_the_estimate_in_mib():
    from checkers.linearizability import Budget, _Search
    from checkers.models import get_model
    search = _Search(get_model("register", None), [], [], Budget.of(None, 1))
    search.memory, search.entries, search.steps = 3 << 20, 7, 9
    assert search.budget_problem() == (
        "memory limit reached: about 3 MiB in 7 configurations after 9 steps "
        "(at most 0 of 0 determinate ops linearized)")


def test_mutex_acquire_invoked_later_may_take_the_lock_first():
    # p0's acquire is pending while p1 acquires and releases: only the order
    # p1, p1's release, p0 explains it, so p0's acquire must not be placed first.
    h = H((0, "invoke", "acquire", None), *seq(1, "acquire", None),
          *seq(1, "release", None), (0, "ok", "acquire", None))
    assert valid(h, model="mutex") is True
    twice = H(*seq(0, "acquire", None), *seq(1, "acquire", None))
    assert failing_op(twice, model="mutex")[0] == 2


def test_kv_put_or_append_without_a_value_writes_the_empty_string():
    for f in ("put", "append"):
        h = H(*seq(0, "put", "a", key="k"), *seq(1, f, None, key="k"),
              *seq(2, "get", None, "" if f == "put" else "a", key="k"))
        assert valid(h, model="kv") is True, f
        wrong = H(*seq(0, "put", "a", key="k"), *seq(1, f, None, key="k"),
                  *seq(2, "get", None, "a" if f == "put" else "", key="k"))
        assert failing_op(wrong, model="kv")[0] == 4, f


def test_cas_to_a_composite_value_is_judged_on_its_frozen_form():
    h = H(*seq(0, "write", 1), *seq(1, "cas", [1, [2, 3]]), *seq(2, "read", None, [2, 3]))
    assert valid(h, model="cas-register") is True
    stale = H(*seq(0, "write", 1), *seq(1, "cas", [1, [2, 3]]), *seq(2, "read", None, [2]))
    assert failing_op(stale, model="cas-register") == (4, "read -> (2,)")


def test_multi_register_bad_micro_op_is_refused_saying_what_a_micro_op_is():
    h = H((0, "invoke", "txn", [["incr", "x", 1]]), (0, "ok", "txn", [["incr", "x", 1]]))
    v = check(h, model="multi-register")
    assert v["valid"] == "unknown"
    reason = v["anomalies"][0]["reason"]
    assert "bad micro-op ['incr', 'x', 1]" in reason and "[read|write, key, value]" in reason


def test_kv_dead_end_rule_stops_the_search_at_once():
    # After append "x", eight concurrent appends can never make the get of
    # "xq" legal (the value only grows, and it must start with "xa".."xh" or
    # stay "x"): the rule ends the search in a few steps, where trying the
    # appends' orders and subsets takes hundreds of thousands.
    ev = [*seq(0, "append", "x", key="k")]
    ev += [(p, "invoke", "append", c, "k") for p, c in enumerate("abcdefgh", 1)]
    ev += [(20, "invoke", "get", None, "k"), (20, "ok", "get", "xq", "k")]
    ev += [(p, "ok", "append", c, "k") for p, c in enumerate("abcdefgh", 1)]
    v = check(H(*ev), model="kv")
    assert v["valid"] is False and v["anomalies"][0]["op"]["what"] == "get -> 'xq'"
    assert v["stats"]["per_key"][0]["steps"] < 1000
    # Appends make no state sticky (their product depends on what was there).
    assert v["stats"]["per_key"][0]["sticky_pruned"] == 0


def test_sticky_prunes_are_counted_each_time():
    # Seven concurrent writes and a read of 3 among them, then a read of 1:
    # 1 and 3 are each written once, so every move that would leave one of
    # them while its read is unplaced is cut, and each cut is counted.
    ev = [(v, "invoke", "write", v) for v in range(1, 8)]
    ev += [(20, "invoke", "read", None), (20, "ok", "read", 3)]
    ev += [(v, "ok", "write", v) for v in range(1, 8)]
    ev += seq(21, "read", None, 1)
    v = check(H(*ev), model="cas-register")
    assert v["valid"] is True
    assert v["stats"]["per_key"][0]["sticky_pruned"] > 1
    # The two reads change nothing: each is placed by the greedy rule once
    # legal, and each placement is counted.
    assert v["stats"]["per_key"][0]["forced"] == 2


def test_kv_keys_that_are_lists_are_frozen_to_partition_by():
    h = H(*seq(0, "put", "a", key=[1, 2]), *seq(1, "get", None, "a", key=[1, 2]),
          *seq(2, "get", None, "", key=[3]))
    v = check(h, model="kv")
    assert v["valid"] is True and v["stats"]["keys"] == 2
    bad = H(*seq(0, "put", "a", key=[1, 2]), *seq(1, "get", None, "b", key=[1, 2]))
    assert failing_op(bad, model="kv") == (2, "get -> 'b'")


def test_multi_register_txn_is_described_by_its_micro_ops():
    h = H((0, "invoke", "txn", [["w", "x", 1], ["r", "y", None]]),
          (0, "ok", "txn", [["w", "x", 1], ["r", "y", 5]]))
    assert failing_op(h, model="multi-register") == (0, "txn w('x' 1) r('y' 5)")


def test_an_indeterminate_cas_is_tried_only_in_the_state_it_compares_against():
    """Info ops are indexed by the state they can change: the search steps an
    indeterminate cas only where the register holds its old value (stepping
    every info op in every configuration cost 43 model steps per search step
    on a 20-minute run)."""
    from checkers.linearizability import check_ops, prepare
    from checkers.models import CAS_MAYBE, RegisterModel

    tried = []

    class Recording(RegisterModel):
        def step(self, state, call):
            if call[0] == CAS_MAYBE:
                tried.append((state, call))
            return super().step(state, call)

    model = Recording("cas-register")
    events = [*seq(0, "write", 1)]
    # Only a chain of indeterminate cas ops explains the last read; the
    # others compare against values the register may or may not reach.
    for p, (old, new) in enumerate([(1, 2), (7, 8), (2, 3), (8, 9), (9, 3), (3, 4)], start=1):
        events += [(p, "invoke", "cas", [old, new]), (p, "info", "cas", None)]
    events += [*seq(9, "read", None, 4), *seq(9, "cas", [5, 6], typ="fail")]
    (ops,) = prepare(H(*events), model).values()
    assert check_ops(ops, model).valid is True
    assert tried
    for i, (state, call) in enumerate(tried):
        # Stepped elsewhere only by the chain rule, right after a try in its
        # own state: would it have acted the same without the info op before?
        assert state == call[1] or tried[i - 1] == (call[1], call), tried


def _cli(path, *argv):
    from harness.cli import main
    return main(["check-lin", str(path), *argv])


def test_cli_judges_a_keyed_history_per_key_by_default(tmp_path, capsys):
    """A run's register history moves to a fresh key every 1,000 ops: judged as
    one register it looked broken (a read of key r1's initial None after r0's
    writes), a false INVALID for a run the harness had called VALID."""
    from checkers.history import pack_op
    keyed = H(*seq(0, "write", 1, key="r0"), *seq(1, "read", None, 1, key="r0"),
              *seq(0, "read", None, None, key="r1"), *seq(1, "write", 2, key="r1"))
    path = tmp_path / "keyed.msgpack"
    path.write_bytes(b"".join(pack_op(o) for o in keyed))
    assert _cli(path) == 0
    assert "register-kv" in capsys.readouterr().out
    assert _cli(path, "--model", "cas-register") == 254
    assert "name 2 keys" in capsys.readouterr().err
    # A history of one register keeps the single-register default.
    single = tmp_path / "single.msgpack"
    single.write_bytes(b"".join(pack_op(o) for o in H(*seq(0, "write", 1),
                                                      *seq(1, "read", None, 2))))
    assert _cli(single) == 1
    assert "cas-register" in capsys.readouterr().out


# ------------------------------------------------------------------
# The search's bookkeeping of indeterminate ops, its dominance cache and its
# memory estimate: each case below is one that a one-character slip in that
# bookkeeping gets wrong (found by mutation testing, docs/mutation.md).


def _kv(*events):
    return H(*[(p, t, f, v, "k") for p, t, f, v in events])


# An info put "x" and an info append "y", then gets of "y" and of "x": the
# only order is append y, get y, put x, get x. The search tries put x first
# (it was invoked first), backtracks, then places append y: the put must then
# count as not yet used, or the dead-end rule (appends only extend a value
# until a put runs) ends the search wrongly.
def test_kv_info_put_backtracked_over_is_still_free_to_run_later():
    ok = _kv((0, "invoke", "put", "x"), (1, "invoke", "append", "y"),
             (2, "invoke", "get", None), (2, "ok", "get", "y"),
             (3, "invoke", "get", None), (3, "ok", "get", "x"))
    assert valid(ok, model="kv") is True
    # Twin: the last get sees a value no order of these writes leaves.
    bad = _kv((0, "invoke", "put", "x"), (1, "invoke", "append", "y"),
              (2, "invoke", "get", None), (2, "ok", "get", "y"),
              (3, "invoke", "get", None), (3, "ok", "get", "xz"))
    assert failing_op(bad, model="kv") == (4, "get -> 'xz'")


# Two info calls reach the same value from the same state (put "y" and
# append "y" on ""): having used one is not having used the other. The put
# is tried first and leaves nothing to return to "y" after "yz"; the append
# leaves the put free to do it. The first info op (append "q") is there so
# the two are not the first info ops of the key.
def test_info_ops_reaching_the_same_config_are_told_apart():
    events = [(0, "invoke", "append", "q"), (1, "invoke", "put", "y"),
              (2, "invoke", "append", "y"),
              (3, "invoke", "get", None), (3, "ok", "get", "y"),
              (4, "invoke", "append", "z"), (4, "ok", "append", "z"),
              (5, "invoke", "get", None), (5, "ok", "get", "yz")]
    ok = _kv(*events, (6, "invoke", "get", None), (6, "ok", "get", "y"))
    assert valid(ok, model="kv") is True
    bad = _kv(*events, (6, "invoke", "get", None), (6, "ok", "get", "yy"))
    assert failing_op(bad, model="kv") == (9, "get -> 'yy'")


# Stale-read naming must skip reads already linearized: the read of nil by
# p1 is placed first (before the write), so the one that cannot be placed is
# p3's later read of nil, after p2 saw the write.
def test_stale_read_named_is_one_not_yet_linearized():
    ev = [(0, "invoke", "write", 3), (1, "invoke", "read", None), (2, "invoke", "read", None),
          (1, "ok", "read", None), (0, "ok", "write", 3), (3, "invoke", "read", None),
          (2, "ok", "read", 3)]
    v = check(H(*ev, (3, "ok", "read", None)), model="cas-register")
    assert v["valid"] is False
    (a,) = v["anomalies"]
    assert (a["op"]["index"], a["op"]["process"]) == (5, 3)
    assert a["overwritten_by"]["what"] == "write 3"
    # Twin: p3 reads 3, as it must.
    assert valid(H(*ev, (3, "ok", "read", 3)), model="cas-register") is True


# A budget stop in mid-descent reports how deep the search got: a sequence of
# 3000 writes is placed one op per step with no dead end, so at the first
# budget look (BUDGET_EVERY steps) BUDGET_EVERY - 1 ops are placed.
def test_budget_stop_mid_descent_reports_the_depth_reached():
    from checkers.linearizability import BUDGET_EVERY
    h = H(*[e for v in range(3000) for e in seq(0, "write", v)])
    assert valid(h) is True
    v = check(h, memory_limit_mb=0)
    assert v["valid"] == "unknown"
    (a,) = v["anomalies"]
    assert f"at most {BUDGET_EVERY - 1} of 3000 determinate ops linearized" in a["reason"]
    assert a["stats"]["max_linearized"] == BUDGET_EVERY - 1


# The sticky rule holds for info ops too: with put "a" acked and its get
# still to come, no info put may leave "a" first. get "z" can never be
# placed, so the search ends after the one configuration put "a" reaches.
def test_info_op_may_not_leave_a_state_a_pending_get_needs():
    ev = [(0, "invoke", "put", "a"), (0, "ok", "put", "a")]
    ev += [(p, "invoke", "put", c) for p, c in enumerate("bcdefghi", 1)]
    ev += [(20, "invoke", "get", None), (20, "ok", "get", "z"),
           (21, "invoke", "get", None), (21, "ok", "get", "a")]
    v = check(_kv(*ev), model="kv")
    assert v["valid"] is False and v["anomalies"][0]["op"]["what"] == "get -> 'z'"
    assert v["stats"]["per_key"][0]["configurations"] == 1


# The memory estimate that decides `unknown` under memory_limit_mb: per cache
# key ENTRY_OVERHEAD bytes plus one info set (n_info // 8 bytes), and for each
# further info set kept under a key that set plus an 8-byte list slot.
# Here 8 info ops (6 invoked after everything, never tried) make a set 1 byte.
# The search (worked by hand): put "a" (info) reaches "a" [key 1]; get "a"
# [key 2]; get "zz" is hopeless; append "a" on "a" [key 3], dead; then append
# "a" instead of the put reaches "a" again with a different info set [a second
# set under key 1] and get "a" [a second set under key 2]; nothing more.
def test_memory_estimate_counts_keys_and_info_sets():
    from checkers.linearizability import ENTRY_OVERHEAD
    ev = [(0, "invoke", "put", "a"), (1, "invoke", "append", "a"),
          (2, "invoke", "get", None), (2, "ok", "get", "a"),
          (3, "invoke", "get", None), (3, "ok", "get", "zz")]
    ev += [(p, "invoke", "append", "w") for p in range(4, 10)]
    v = check(_kv(*ev), model="kv")
    assert v["valid"] is False
    stats = v["stats"]["per_key"][0]
    assert stats["indeterminate_searched"] == 8 and stats["configurations"] == 3
    assert stats["memory_estimate_bytes"] == 3 * (ENTRY_OVERHEAD + 1) + 2 * (1 + 8)
    # A key with no determinate op is linearizable before anything is cached.
    alone = check(_kv((0, "invoke", "put", "a")), model="kv")
    assert alone["valid"] is True
    per_key = alone["stats"]["per_key"][0]
    assert (per_key["memory_estimate_bytes"], per_key["configurations"], per_key["steps"]) == (
        0, 0, 0)


# The dominance cache: a configuration reached again by the same det ops
# with no new info op is not explored again, so the search's steps stay
# within a few per configuration (a config is entered once; from it at most
# the n + 1 entries before the first return are tried, then it backtracks).
# Without it, the eight concurrent writes are tried in every order (8! paths).
def test_each_configuration_is_explored_once():
    n = 8
    v = check(many_concurrent_writes(n))
    assert v["valid"] is False
    stats = v["stats"]["per_key"][0]
    assert stats["steps"] <= (n + 3) * stats["configurations"]
    assert stats["configurations"] <= n * 2 ** n


# An info op that reaches a configuration some det ops alone reached, with no
# info op the search had not used there, is pruned like a det op would be.
# History: info put "a", info put "b", append "b", then get "zz" that no
# order explains. Worked by hand, the search keeps 7 configurations: append
# "b" -> "b"; put "a" after it; put "a" first -> "a"; append "b" -> "ab"; put
# "b" after that would reach "b" with "b" appended, as the append alone did:
# pruned; put "b" first -> "b"; append "b" -> "bb"; put "a" after it.
def test_info_op_reaching_a_config_det_ops_reached_is_pruned():
    ev = [(0, "invoke", "put", "a"), (1, "invoke", "put", "b"),
          (2, "invoke", "append", "b"), (2, "ok", "append", "b"),
          (3, "invoke", "get", None), (3, "ok", "get", "zz")]
    v = check(_kv(*ev), model="kv")
    assert v["valid"] is False and v["anomalies"][0]["op"]["what"] == "get -> 'zz'"
    assert v["stats"]["per_key"][0]["configurations"] == 7


# _check gives up on the biggest searches only while the live ones together
# exceed the limit: at exactly the limit every search goes on.
def test_memory_shedding_stops_the_biggest_only_above_the_limit():
    from checkers.linearizability import Budget, _Job, _shed_memory, prepare
    from checkers.models import get_model
    model = get_model("cas-register", None)
    ops = prepare(H(*seq(0, "write", 1), *seq(1, "read", None, 1)), model)[None]

    def jobs(*memory):
        out = []
        for m in memory:
            job = _Job(ops, model, Budget(), None)
            job.search.memory = m
            out.append(job)
        return out

    active = jobs(300, 700)
    _shed_memory(active, 1000)
    assert [j.search.memory for j in active] == [300, 700]
    assert not any(j.done for j in active)
    big, small = jobs(700, 300)
    active = [small, big]
    _shed_memory(active, 999)
    assert active == [small] and big.done and not small.done
    assert big.search.valid == "unknown" and big.reason.startswith("memory limit reached")


# kv with puts only names every value's producer in advance, so a get of a
# value long overwritten is named as the stale op, with the put that had to
# replace its value (as for registers), not just the op the search stopped at.
def test_kv_stale_get_is_named_with_the_put_that_overwrote_its_value():
    ev = [*seq(0, "put", "a", key="k"), *seq(1, "get", None, "a", key="k")]
    for v in "bcdefgh":
        ev += [*seq(0, "put", v, key="k"), *seq(1, "get", None, v, key="k")]
    v = check(H(*ev, *seq(2, "get", None, "a", key="k"), *seq(0, "put", "z", key="k")),
              model="kv")
    assert v["valid"] is False
    (a,) = v["anomalies"]
    assert (a["op"]["what"], a["op"]["index"]) == ("get -> 'a'", 32)
    assert a["overwritten_by"]["what"] == "put 'b'" and "produced only once" in a["why"]
    assert v["stats"]["per_key"][0]["sticky_pruned"] > 0
    ok = H(*ev, *seq(2, "get", None, "h", key="k"), *seq(0, "put", "z", key="k"))
    assert valid(ok, model="kv") is True


# Stale-read naming with a window that does not start at op 0: after w1, r1
# the window starts at op 2, and p3's read of 1 (placed first, before w3) is
# in it; the read that cannot be placed is p5's, after p4 saw 3.
def test_stale_read_named_past_the_start_of_the_window():
    ev = [*seq(0, "write", 1), *seq(1, "read", None, 1),
          (2, "invoke", "write", 3), (3, "invoke", "read", None), (4, "invoke", "read", None),
          (3, "ok", "read", 1), (2, "ok", "write", 3), (5, "invoke", "read", None),
          (4, "ok", "read", 3)]
    v = check(H(*ev, (5, "ok", "read", 1)), model="cas-register")
    assert v["valid"] is False
    (a,) = v["anomalies"]
    assert (a["op"]["process"], a["op"]["index"]) == (5, 9)
    assert a["overwritten_by"]["what"] == "write 3"
    assert valid(H(*ev, (5, "ok", "read", 3)), model="cas-register") is True


# The window part of the memory estimate: a byte per 8 ops of window. p0's
# write stays unplaced while p1's nine reads of nil are placed, so the window
# after the k-th read is k + 1 bits wide: 8, 9 and 10 bits (one byte each)
# after the 7th, 8th and 9th. Ten configurations, no info op.
def test_memory_estimate_counts_the_window_bytes():
    from checkers.linearizability import ENTRY_OVERHEAD
    ev = [(0, "invoke", "write", 1)]
    for _ in range(9):
        ev += seq(1, "read", None, None)
    v = check(H(*ev, (0, "ok", "write", 1)), model="cas-register")
    stats = v["stats"]["per_key"][0]
    assert v["valid"] is True and stats["configurations"] == 10
    assert stats["memory_estimate_bytes"] == 10 * ENTRY_OVERHEAD + 3


def test_witnessed_info_ops_are_counted():
    # p0's write of 1 never completes, but p1 read 1: it took effect.
    h = H((0, "invoke", "write", 1), *seq(1, "read", None, 1), *seq(2, "write", 2))
    v = check(h, model="cas-register")
    stats = v["stats"]["per_key"][0]
    assert v["valid"] is True
    assert (stats["indeterminate"], stats["indeterminate_witnessed"]) == (1, 1)


def test_stop_on_first_failure_stops_keys_still_searching():
    # Key "a" needs more than one budget slice (3000 ops, one step each);
    # key "b" fails in its first. Stopping on the first failure leaves "a"
    # unfinished instead of searching it to the end.
    a = [e for v in range(3000) for e in seq(0, "write", v, key="a")]
    b = [*seq(1, "write", 1, key="b"), *seq(2, "read", None, 2, key="b")]
    h = H(*a, *b)
    v = check(h, model="register-kv", stop_on_first_failure=True)
    assert v["valid"] is False and v["stats"]["keys_checked"] == 1
    assert {k["key"]: k["valid"] for k in v["stats"]["per_key"]} == {"a": "unknown", "b": False}
    full = check(h, model="register-kv")
    assert {k["key"]: k["valid"] for k in full["stats"]["per_key"]} == {"a": True, "b": False}


def test_budget_stop_mid_descent_with_a_read_pending_on_the_state():
    # Each read of v overlaps the write of v + 1: at the first budget look the
    # last op placed is a write whose read is still to come, and the op that
    # must go next (the next write) would leave that value: the deepest
    # configuration is recorded with a stale-reader candidate in view.
    from checkers.linearizability import BUDGET_EVERY
    ev = [*seq(0, "write", 0)]
    for v in range(1500):
        ev += [(1, "invoke", "read", None), (0, "invoke", "write", v + 1),
               (0, "ok", "write", v + 1), (1, "ok", "read", v)]
    h = H(*ev)
    assert valid(h) is True
    v = check(h, memory_limit_mb=0)
    assert v["valid"] == "unknown"
    assert v["anomalies"][0]["stats"]["max_linearized"] == BUDGET_EVERY - 1
