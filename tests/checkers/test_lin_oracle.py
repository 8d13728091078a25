"""The WGL search against a brute-force oracle on thousands of small random
register histories: every subset of the indeterminate ops, every order that
respects real time. The search's pruning (cache, symmetry, chain rule, the
compact linearized-set window) must never change a verdict."""

import random
from dataclasses import dataclass
from itertools import combinations

import pytest

from checkers.history import Op
from checkers.linearizability import check

INF = float("inf")


@dataclass(frozen=True)
class Call:
    f: str                # "read", "write" or "cas"
    value: object         # read: the value seen; write: v; cas: (old, new)
    status: str           # "ok", "fail" or "info"
    invoke: int
    ret: float            # INF for info: it may take effect any time later


def random_calls(rng: random.Random, unique: bool) -> list[Call]:
    """With `unique`, every write and cas writes a value of its own (as the
    register workload does), so reads pin down which info ops took effect."""
    calls: list[Call] = []
    fresh = iter(range(1, 100))

    def new_value() -> int:
        return next(fresh) if unique else rng.randint(1, 3)

    def seen_value() -> int:
        return rng.randint(1, 4) if unique else rng.randint(1, 3)

    for _ in range(rng.randint(2, 7)):
        f = rng.choice(("read", "write", "cas"))
        status = rng.choices(("ok", "info", "fail"), (6, 2, 1))[0]
        if f == "read":
            value = rng.choice((None, seen_value()))
            status = "ok"
        elif f == "write":
            value = new_value()
        else:
            value = (seen_value(), new_value())
        start = rng.randint(0, 12)
        calls.append(Call(f, value, status, start, INF if status == "info"
                          else start + rng.randint(1, 6)))
    return calls


def to_history(calls: list[Call], rng: random.Random) -> list[Op]:
    events = []
    for p, c in enumerate(calls):
        invoke_value = None if c.f == "read" else list(c.value) if c.f == "cas" else c.value
        events.append((c.invoke, rng.random(), p, "invoke", c.f, invoke_value))
        done_value = list(c.value) if c.f == "cas" else c.value
        if c.status == "info":
            events.append((100, rng.random(), p, "info", c.f, invoke_value))
        else:
            events.append((c.ret, rng.random(), p, c.status, c.f, done_value))
    # A completion never precedes its own invoke: ties order invokes first.
    events.sort(key=lambda e: (e[0], e[3] != "invoke", e[1]))
    return [Op(i, i * 1000, p, t, f, v) for i, (_, _, p, t, f, v) in enumerate(events)]


def legal(c: Call, state: object, knossos: bool) -> tuple[bool, object]:
    if c.f == "read":
        return (c.value is None and knossos) or state == c.value, state
    if c.f == "write":
        return True, c.value
    old, new = c.value
    if c.status == "fail":                  # etcd flavour: the value differed
        return state != old, state
    return state == old, new


def oracle(calls: list[Call], knossos: bool) -> bool:
    """Some choice of indeterminate ops has an order respecting real time in
    which every op is legal."""
    # A failed write did not happen; a failed cas (etcd flavour) says the value
    # differed at some point in its window.
    must = [c for c in calls
            if c.status == "ok" or (c.status == "fail" and c.f == "cas" and not knossos)]
    maybe = [c for c in calls if c.status == "info" and c.f != "read"]

    def orders(left: tuple[Call, ...], state: object) -> bool:
        if not left:
            return True
        for c in left:
            # c may go next only if nothing still left had returned before c began.
            if any(o.ret < c.invoke for o in left if o is not c):
                continue
            ok, nxt = legal(c, state, knossos)
            if ok and orders(tuple(o for o in left if o is not c), nxt):
                return True
        return False

    return any(orders(tuple(must) + extra, None)
               for k in range(len(maybe) + 1) for extra in combinations(maybe, k))


@pytest.mark.parametrize("unique", [False, True], ids=["shared-values", "unique-values"])
@pytest.mark.parametrize("model", ["cas-register", "cas-register-knossos"])
def test_search_agrees_with_brute_force(model, unique):
    rng = random.Random(20261121)
    verdicts = {True: 0, False: 0}
    rules = {"forced": 0, "sticky_pruned": 0, "indeterminate_witnessed": 0}
    for _ in range(1500):
        calls = random_calls(rng, unique)
        expected = oracle(calls, knossos=model.endswith("knossos"))
        v = check(to_history(calls, rng), model=model)
        assert v["valid"] is expected, calls
        verdicts[expected] += 1
        for k in rules:
            rules[k] += v["stats"]["per_key"][0].get(k, 0) if v["stats"]["per_key"] else 0
    # Both verdicts well represented, or the comparison proves little.
    assert min(verdicts.values()) > 300, verdicts
    # The greedy rule took part, and with unique values the one-producer
    # pruning and the info ops promoted because a read saw their value.
    assert rules["forced"] > 100, rules
    if unique:
        assert rules["sticky_pruned"] > 100, rules
        assert rules["indeterminate_witnessed"] > 100, rules
