from checkers.history import Op
from checkers.stats import check


def ops(*pairs):
    out = []
    for i, (f, typ) in enumerate(pairs):
        out += [Op(2 * i, 2 * i, i, "invoke", f), Op(2 * i + 1, 2 * i + 1, i, typ, f)]
    return out


def test_every_kind_succeeded_is_valid():
    v = check(ops(("read", "ok"), ("write", "ok"), ("write", "fail")))
    assert v["valid"] is True
    assert v["stats"]["by_f"]["write"] == {"ok": 1, "fail": 1, "refused": 0, "error": 1,
                                           "info": 0}


def test_a_kind_that_never_succeeded_is_unknown():
    v = check(ops(("read", "ok"), ("txn", "fail"), ("txn", "info")))
    assert v["valid"] == "unknown"
    assert v["anomalies"][0]["f"] == "txn"


def test_empty_history_is_unknown():
    v = check([])
    assert v["valid"] == "unknown" and v["stats"]["reason"] == "no client operations"


def nemesis_ops(start: int) -> list[Op]:
    # A kill whose outcome the nemesis could not confirm (info), and a heal
    # that failed: as client ops these would be two kinds that never succeeded.
    return [Op(start, start, "nemesis", "invoke", "kill"),
            Op(start + 1, start + 1, "nemesis", "info", "kill"),
            Op(start + 2, start + 2, "nemesis", "invoke", "heal"),
            Op(start + 3, start + 3, "nemesis", "fail", "heal")]


def test_nemesis_ops_are_not_counted_as_client_ops():
    history = ops(("read", "ok"), ("write", "ok"))
    v = check(history + nemesis_ops(len(history)))
    assert v["valid"] is True, v["anomalies"]
    assert set(v["stats"]["by_f"]) == {"read", "write"}


def test_only_nemesis_ops_is_a_history_with_no_client_ops():
    v = check(nemesis_ops(0))
    assert v["valid"] == "unknown" and v["anomalies"] == []
    assert v["stats"]["by_f"] == {}


def test_a_client_kind_that_never_succeeded_is_named_among_nemesis_ops():
    history = ops(("read", "ok"), ("write", "info"))
    v = check(history + nemesis_ops(len(history)))
    assert v["valid"] == "unknown"
    assert [a["f"] for a in v["anomalies"]] == ["write"]


def test_counts_and_the_unknown_verdict_say_what_never_succeeded():
    history = ops(("read", "ok"), ("read", "ok"), ("read", "info"), ("cas", "fail"),
                  ("cas", "info"), ("txn", "fail"))
    v = check(history)
    assert v["valid"] == "unknown"
    assert v["stats"]["by_f"] == {
        "cas": {"ok": 0, "fail": 1, "refused": 1, "error": 0, "info": 1},
        "read": {"ok": 2, "fail": 0, "refused": 0, "error": 0, "info": 1},
        "txn": {"ok": 0, "fail": 1, "refused": 0, "error": 1, "info": 0}}
    assert v["stats"]["reason"] == ("no successful cas, txn ops: the run shows nothing "
                                    "about them")
    assert v["anomalies"] == [
        {"type": "no-successful-ops", "f": "cas",
         "explanation": "no cas op succeeded (1 refused, 0 failed with an error, 1 "
                        "unknown)"},
        {"type": "no-successful-ops", "f": "txn",
         "explanation": "no txn op succeeded (0 refused, 1 failed with an error, 0 "
                        "unknown)"}]
