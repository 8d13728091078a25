"""Workload and fault options are metadata: one table each, from which the
generator's defaults, the config's validation and the CLI's help all come."""

import random

import pytest

from harness.cli import build_parser
from harness.run.config import ConfigError, RunConfig, validate
from nemesis.base import FAULTS, HEAL_F, INSTANT_FAULTS, LAZYFS_FAULTS, TRIGGER_FAULTS
from workloads.options import Option, resolve, table
from workloads.registry import WORKLOADS


def test_an_option_whose_default_is_not_its_kind_is_refused():
    with pytest.raises(ValueError, match="default"):
        Option("n", "positive-int", 0, "a count")


def test_resolve_fills_defaults_and_keeps_given_values():
    t = table(Option("a", "int", 1, ""), Option("b", "bool", False, ""))
    assert resolve(t, {"b": True, "client_only": 3}) == {"a": 1, "b": True}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_declares_its_options_and_generates_from_the_defaults(name):
    w = WORKLOADS[name]
    assert w.OPTIONS and all(isinstance(o, Option) for o in w.OPTIONS.values())
    ops = w.generate(random.Random(1), {})
    assert [next(ops) for _ in range(20)]


def test_a_default_given_explicitly_generates_the_same_ops():
    w = WORKLOADS["kv"]
    defaults = {n: o.default for n, o in w.OPTIONS.items()}
    a, b = w.generate(random.Random(3), {}), w.generate(random.Random(3), defaults)
    assert [next(a) for _ in range(300)] == [next(b) for _ in range(300)]


@pytest.mark.parametrize("options, words", [
    ({"ops_per_key": -1}, "non-negative integer"),
    ({"ops_per_key": "x"}, "non-negative integer"),
    ({"opz_per_key": 3}, "unknown --client-option"),
])
def test_validation_comes_from_the_table(options, words):
    with pytest.raises(ConfigError, match=words):
        validate(RunConfig(workload="register", workload_options=options))
    validate(RunConfig(workload="register", workload_options={"ops_per_key": 0}))


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return " ".join(sub.choices[command].format_help().split())


def test_the_run_help_lists_every_fault_and_workload_option_with_its_default():
    text = _help("run").replace("- ", "-")   # argparse wraps at hyphens
    for kind in FAULTS.values():
        assert kind.name in text
    for name, w in WORKLOADS.items():
        for o in w.OPTIONS.values():
            assert f"{o.name}={o.default}" in text, (name, o.name)


def test_fault_sets_are_derived_from_the_table():
    assert LAZYFS_FAULTS == {n for n, k in FAULTS.items() if k.needs_lazyfs}
    assert TRIGGER_FAULTS == {"kill-after-vote", "power-cut-after-vote", "power-cut-after-commit",
                              "fast-failover"}
    assert INSTANT_FAULTS == {"lose-unsynced"}
    assert HEAL_F["kill"] == "start" and HEAL_F["pause"] == "resume"
    assert FAULTS["partition"].variants()[0] == "isolate-one"


def test_a_one_of_kind_takes_its_values_and_refuses_the_rest():
    from workloads.options import Option, option_kind
    ok, what = option_kind("one-of:a|b-c")
    assert ok("a") and ok("b-c") and not ok("c") and not ok(None)
    assert what == "one of a, b-c"
    assert Option("mode", "one-of:fast|slow", "fast", "").problem("medium") == (
        "mode must be one of fast, slow, not 'medium'")
    with pytest.raises(ValueError):
        Option("mode", "one-of:fast|slow", "medium", "")
    with pytest.raises(KeyError):
        option_kind("no-such-kind")
