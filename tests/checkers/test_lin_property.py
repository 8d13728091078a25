"""Property: a history recorded from a real sequential execution, with ops
overlapping at random, is linearizable; corrupting one read's value makes it
not linearizable (or unknown, only if the budget runs out)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.history import Op
from checkers.linearizability import Budget, check, check_ops, prepare
from checkers.models import ANY_STATE, NO_STATE, Model, RegisterModel, get_model


@st.composite
def executions(draw, max_procs=4, max_steps=40):
    """Ops on one register: each op's effect happens at a point inside its
    window. Info ops take effect or not; ok reads return the true value."""
    n_procs = draw(st.integers(1, max_procs))
    n_steps = draw(st.integers(1, max_steps))
    value = None
    next_value = 0
    history = []
    running = {}   # process -> [invoke op, result or None, info?]
    procs = list(range(n_procs))
    next_proc = n_procs

    def emit(p, typ, f, v, error=None):
        history.append(Op(len(history), len(history), p, typ, f, v, error=error))

    for _ in range(n_steps):
        action = draw(st.sampled_from(["invoke", "apply", "complete"]))
        idle = [p for p in procs if p not in running]
        if action == "invoke" and idle:
            p = draw(st.sampled_from(idle))
            f = draw(st.sampled_from(["read", "write", "cas"]))
            next_value += 1
            v = (None if f == "read" else next_value if f == "write"
                 else [draw(st.sampled_from([value, next_value - 1])), next_value])
            emit(p, "invoke", f, v)
            running[p] = [history[-1], None, draw(st.booleans()) and draw(st.booleans())]
        elif action == "apply" and any(r[1] is None for r in running.values()):
            p = draw(st.sampled_from([p for p, r in running.items() if r[1] is None]))
            inv = running[p][0]
            if inv.f == "read":
                running[p][1] = ("ok", value)
            elif inv.f == "write":
                value = inv.value
                running[p][1] = ("ok", inv.value)
            elif value == inv.value[0]:
                value = inv.value[1]
                running[p][1] = ("ok", inv.value)
            else:
                running[p][1] = ("fail", inv.value)
        elif action == "complete" and running:
            p = draw(st.sampled_from(sorted(running)))
            inv, result, info = running[p]
            if not info and result is None:
                continue  # a determinate op completes only after it took effect
            del running[p]
            if info:
                emit(p, "info", inv.f, None, error="timeout")
                procs.remove(p)
                procs.append(next_proc)
                next_proc += 1
            else:
                emit(p, result[0], inv.f, result[1])
    # Ops still open at the end stay open: the checker treats them as info.
    return history


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(executions())
def test_real_executions_are_linearizable(history):
    v = check(history, model="cas-register", time_limit=10)
    assert v["valid"] is True, v["anomalies"]


@SETTINGS
@given(executions(), st.data())
def test_one_corrupted_read_is_caught(history, data):
    reads = [i for i, o in enumerate(history) if o.type == "ok" and o.f == "read"]
    if not reads:
        return
    i = data.draw(st.sampled_from(reads))
    history[i].value = -1  # never written by anyone
    v = check(history, model="cas-register", time_limit=10)
    assert v["valid"] is False or (v["valid"] == "unknown"
                                   and "limit" in v["anomalies"][0]["reason"])
    if v["valid"] is False:
        a = v["anomalies"][0]
        assert a["op"] is not None
        # Nothing can explain the corrupted read, so the prefix never holds it.
        assert all(o["result"] != -1 for o in a["linearized"] if o["f"] == "read")


class _Plain(RegisterModel):
    """The cas register with the unique-value rules switched off: no greedy
    moves (every call may mutate), no once-produced states (products unknown),
    info ops tried in every state, none promoted as witnessed, none dropped as
    unobserved, no values merged. The plain WGL search to compare against."""

    def mutates(self, call):
        return True

    def produces(self, call):
        return ANY_STATE

    def changes_from(self, call):
        return NO_STATE

    # The bulk answers a model may give for speed must come from the methods
    # above, not RegisterModel's own.
    facts = Model.facts
    witnessed = Model.witnessed
    relevant_infos = Model.relevant_infos
    canonical = Model.canonical


PLAIN = _Plain("cas-register-plain")
FAST = get_model("cas-register")


def _results(history):
    out = []
    for model in (FAST, PLAIN):
        (ops,) = prepare(history, model).values() or [[]]
        out.append(check_ops(ops, model, Budget.of(20, None)))
    return out


RULES = ("forced", "sticky_pruned", "indeterminate_witnessed")


def test_rules_agree_with_the_plain_search():
    """On longer histories than the brute-force oracle can take, with a read
    made stale (it returns an older written value), or not. The plain side
    must have used none of the rules, the fast side each of them often, or
    the comparison shows nothing about them."""
    used = dict.fromkeys(RULES, 0)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(executions(max_procs=6, max_steps=150), st.data())
    def compare(history, data):
        reads = [i for i, o in enumerate(history) if o.type == "ok" and o.f == "read"]
        written = sorted({o.value for o in history if o.type == "invoke" and o.f == "write"})
        if reads and written and data.draw(st.booleans()):
            history[data.draw(st.sampled_from(reads))].value = data.draw(st.sampled_from(written))
        fast, plain = _results(history)
        assert fast.valid == plain.valid
        assert all(plain.stats[k] == 0 for k in RULES), plain.stats
        for k in RULES:
            used[k] += fast.stats[k]

    compare()
    assert all(used[k] > 10 for k in RULES), used
