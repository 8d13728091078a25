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
    assert v["stats"]["by_f"]["write"] == {"ok": 1, "fail": 1, "info": 0}


def test_a_kind_that_never_succeeded_is_unknown():
    v = check(ops(("read", "ok"), ("txn", "fail"), ("txn", "info")))
    assert v["valid"] == "unknown"
    assert v["anomalies"][0]["f"] == "txn"


def test_empty_history_is_unknown_and_nemesis_ops_do_not_count():
    assert check([])["valid"] == "unknown"
    nemesis = [Op(0, 0, "nemesis", "invoke", "kill"), Op(1, 1, "nemesis", "info", "kill")]
    assert check(nemesis)["valid"] == "unknown"
