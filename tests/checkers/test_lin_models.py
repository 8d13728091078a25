"""Each model's sequential rules, one legal and one illegal step apiece."""

import pytest

from checkers.history import Op
from checkers.models import (
    ACQUIRE,
    APPEND,
    CAS,
    CAS_FAILED,
    CAS_MAYBE,
    GET,
    MODELS,
    PUT,
    READ,
    READ_ANY,
    RELEASE,
    WRITE,
    ModelError,
    get_model,
)

ETCD = MODELS["cas-register"]
KNOSSOS = MODELS["cas-register-knossos"]


def op(typ, f, value, process=0, error=None):
    return Op(0, 0, process, typ, f, value, error=error)


@pytest.mark.parametrize("state, call, legal, after", [
    (None, (READ, None), True, None),
    (1, (READ, None), False, 1),
    (1, (READ, 1), True, 1),
    (1, (READ, 2), False, 1),
    (1, (WRITE, 2), True, 2),
    (1, (CAS, 1, 3), True, 3),
    (2, (CAS, 1, 3), False, 2),
    (2, (CAS_FAILED, 1, 3), True, 2),
    (1, (CAS_FAILED, 1, 3), False, 1),
    (1, (CAS_MAYBE, 1, 3), True, 3),
    (2, (CAS_MAYBE, 1, 3), True, 2),
])
def test_register_steps(state, call, legal, after):
    assert ETCD.step(state, call) == (legal, after)


def test_register_interpretation_etcd_flavour():
    inv = op("invoke", "cas", [1, 2])
    assert ETCD.interpret(inv, op("fail", "cas", [1, 2])) == ((CAS_FAILED, 1, 2), "det")
    # A cas refused before reaching the register is no evidence about its value.
    assert ETCD.interpret(inv, op("fail", "cas", [1, 2], error="not_leader")) is None
    assert ETCD.interpret(inv, op("info", "cas", None)) == ((CAS_MAYBE, 1, 2), "info")
    assert ETCD.interpret(inv, None) == ((CAS_MAYBE, 1, 2), "info")
    assert ETCD.interpret(op("invoke", "read", None), op("fail", "read", None)) is None
    assert ETCD.interpret(op("invoke", "write", 5), op("info", "write", None)) == \
        ((WRITE, 5), "info")


def test_register_interpretation_knossos_flavour():
    inv = op("invoke", "cas", [1, 2])
    assert KNOSSOS.interpret(inv, op("fail", "cas", [1, 2])) is None
    nil_read = KNOSSOS.interpret(op("invoke", "read", None), op("ok", "read", None))
    assert nil_read == ((READ_ANY,), "det")
    assert KNOSSOS.step(7, nil_read[0]) == (True, 7)
    assert KNOSSOS.step(7, (READ, 8)) == (False, 7)


def test_plain_register_has_no_cas():
    with pytest.raises(ModelError):
        MODELS["register"].interpret(op("invoke", "cas", [1, 2]), op("ok", "cas", [1, 2]))
    with pytest.raises(ModelError):
        ETCD.interpret(op("invoke", "cas", 5), op("ok", "cas", 5))


def test_register_drops_unobserved_info_writes_only_without_failed_cas():
    det = [(READ, 1)]
    info = [(WRITE, 1), (WRITE, 2), (CAS_MAYBE, 1, 9)]
    assert ETCD.relevant_infos(det, info) == [True, False, False]
    assert ETCD.relevant_infos(det + [(CAS_FAILED, 4, 5)], info) == [True, True, True]


def test_kv_steps():
    kv = MODELS["kv"]
    assert kv.init() == ""
    assert kv.step("", (APPEND, "x")) == (True, "x")
    assert kv.step("x", (PUT, "y")) == (True, "y")
    assert kv.step("xy", (GET, "xy")) == (True, "xy")
    assert kv.step("xy", (GET, "x")) == (False, "xy")
    assert kv.dead_end("xy", (GET, "xz"), resets_pending=False)
    assert not kv.dead_end("xy", (GET, "xyz"), resets_pending=False)
    assert not kv.dead_end("xy", (GET, "q"), resets_pending=True)
    assert kv.partition_key(Op(0, 0, 0, "invoke", "get", None, key="3")) == "3"


def test_mutex_steps():
    mutex = MODELS["mutex"]
    assert mutex.step(None, (ACQUIRE, 1)) == (True, 1)
    assert mutex.step(2, (ACQUIRE, 1)) == (False, 2)
    assert mutex.step(1, (RELEASE, 1)) == (True, None)
    assert mutex.step(2, (RELEASE, 1)) == (False, 2)
    assert mutex.step(None, (RELEASE, 1)) == (False, None)


def test_unknown_model_is_a_model_error():
    with pytest.raises(ModelError):
        get_model("no-such-model")


def test_lists_become_hashable():
    got = MODELS["register-kv"].interpret(op("invoke", "write", [1, [2]]),
                                          op("ok", "write", [1, [2]]))
    assert got == ((WRITE, (1, (2,))), "det")


def _random_register_calls(rng, n):
    values = [None, 0, 1, 2, "a", (1, 2)]
    out = []
    for _ in range(n):
        code = rng.choice([READ, WRITE, CAS, CAS_FAILED, CAS_MAYBE, READ_ANY])
        if code == READ_ANY:
            out.append((READ_ANY,))
        elif code in (READ, WRITE):
            out.append((code, rng.choice(values)))
        else:
            out.append((code, rng.choice(values), rng.choice(values)))
    return out


# Models whose `facts` is their own (the others inherit the base's, which
# asks the per-call methods) and kv's, which shows the base's answer.
@pytest.mark.parametrize("name", [n for n in sorted(MODELS)
                                  if isinstance(MODELS[n], type(ETCD)) or n == "kv"])
def test_bulk_facts_agree_with_the_per_call_methods(name):
    import random

    from checkers.models import Model
    model = MODELS[name]
    rng = random.Random(7)
    if name == "kv":
        calls = [(rng.choice([GET, PUT, APPEND]), rng.choice(["", "x", "xy"]))
                 for _ in range(200)]
    else:
        calls = _random_register_calls(rng, 400)
        calls += model.canonical(calls, [])[0]     # UNOBSERVED values too
    mutates, needs, produces = model.facts(calls)
    assert mutates == [model.mutates(c) for c in calls]
    assert needs == [model.needs(c) for c in calls]
    assert produces == [model.produces(c) for c in calls]
    assert Model.facts(model, calls) == (mutates, needs, produces)


def test_register_canonical_merges_only_values_nobody_observes():
    from checkers.models import UNOBSERVED
    det = [(WRITE, 1), (WRITE, 2), (READ, 1), (CAS, 1, 3), (WRITE, None)]
    info = [(CAS_MAYBE, 3, 4), (WRITE, 5)]
    got_det, got_info = ETCD.canonical(det, info)
    assert got_det == [(WRITE, 1), (WRITE, UNOBSERVED), (READ, 1), (CAS, 1, 3), (WRITE, None)]
    assert got_info == [(CAS_MAYBE, 3, UNOBSERVED), (WRITE, UNOBSERVED)]
    assert ETCD.canonical([(WRITE, 1), (READ, 1)], []) == ([(WRITE, 1), (READ, 1)], [])
