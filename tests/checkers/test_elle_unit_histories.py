"""Elle's own unit-test histories (tests/data/elle_unit_histories.json,
translated from jepsen-io/elle's list_append_test.clj and
rw_register_test.clj): for each, faultline's verdict under the model Elle was
asked about, the anomaly types Elle reported (each must be among faultline's)
and Elle's boundary (`not`, the weakest models ruled out) must agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checkers.elle import check, rw_register
from checkers.history import Op

DATA = json.loads((Path(__file__).parents[1] / "data" / "elle_unit_histories.json").read_text())


def mops(shorthand: str | list, invoke: bool, register: bool) -> list[list[Any]]:
    """Elle's op shorthand as micro-ops: a letter a/w/r starts a micro-op, x y
    z t u name its key, digits its value (an appended element, a register
    value, or the elements of a list read); _ is nil. An invoke's reads are nil."""
    if isinstance(shorthand, list):
        return [[f, k, None if invoke and f == "r" else v] for f, k, v in shorthand]
    out: list[list[Any]] = []
    for c in shorthand:
        if c in "awr":
            out.append([{"a": "append", "w": "w", "r": "r"}[c], None, None])
        elif c in "xyztu":
            out[-1][1] = c
        elif c == "_":
            out[-1][2] = None
        else:
            f, v = out[-1][0], int(c)
            if f == "r" and not register:
                out[-1][2] = (out[-1][2] or []) + [v]
            else:
                out[-1][2] = v
    if invoke:
        for m in out:
            if m[0] == "r":
                m[2] = None
    return out


def history(case: dict) -> list[Op]:
    register = case["workload"] == "rw-register"
    return [Op(index=i, time=i, type=t, process=p, f="txn",
               value=mops(v, t == "invoke", register))
            for i, (t, p, v) in enumerate(case["ops"])]


CHECKS = [pytest.param(case, n, id=f"{case['name']}-{n}")
          for case in DATA["cases"] for n in range(len(case["checks"]))]


@pytest.mark.parametrize(("case", "n"), CHECKS)
def test_faultline_agrees_with_elle(case: dict, n: int) -> None:
    want = case["checks"][n]
    model = want["model"] or "strict-serializable"
    run = rw_register.check if case["workload"] == "rw-register" else check
    v = run(history(case), model=model, **want.get("options", {}))
    found = set(v["stats"]["anomaly_counts"])
    assert set(want["types"]) <= found, (want["types"], found)
    if want["model"] is not None:
        assert v["valid"] == want["valid"], v["anomalies"]
    if want["not"] is not None:
        assert v["stats"]["not"] == sorted(want["not"]), v["stats"]["anomaly_counts"]


def test_the_translations_cover_both_checkers_and_many_verdicts() -> None:
    assert {c["workload"] for c in DATA["cases"]} == {"list-append", "rw-register"}
    assert len(CHECKS) >= 30
    # none is excused: each check holds faultline to Elle's own answer
    assert all(set(k) <= {"model", "valid", "types", "not", "options"}
               for c in DATA["cases"] for k in c["checks"])
