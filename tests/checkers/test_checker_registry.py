"""The checker registry: one signature for every checker, plans derived from
the workload registry, each checker named once."""

import pytest

from checkers.history import History, Op
from checkers.registry import CHECKS, check_loaded, run_check
from checkers.rundir import Run
from workloads.judging import default_checkers, plan_for
from workloads.registry import WORKLOADS


def _run(ops, config):
    return Run(None, {"config": config, "artifacts": []}, History(ops))


GOOD = [Op(0, 0, 0, "invoke", "write", 1, key="r0"), Op(1, 1, 0, "ok", "write", 1, key="r0"),
        Op(2, 2, 0, "invoke", "read", None, key="r0"), Op(3, 3, 0, "ok", "read", 1, key="r0")]
BAD = GOOD[:3] + [Op(3, 3, 0, "ok", "read", 7, key="r0")]


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_workloads_plan_names_registered_checkers_with_options(workload):
    plan = plan_for({"config": {"workload": workload}})
    assert list(plan) == default_checkers(workload)
    assert all(name in CHECKS and isinstance(opts, dict) for name, opts in plan.items())


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_every_checker_has_the_one_signature(name):
    """Called as check(run, options) on a register history, each answers a verdict
    (a crash would be an unknown naming the exception)."""
    config = {"workload": "register"}
    options = plan_for({"config": {**config, "checkers": [name]}})[name]
    v, seconds = run_check(name, _run(GOOD, config), options)
    assert "error" not in v.get("stats", {}), v
    assert v["valid"] in (True, False, "unknown") and seconds >= 0


def test_workload_defaults_sit_under_the_configs_options():
    assert plan_for({"config": {"workload": "register"}})["linearizability"]["model"] == \
        "register-kv"
    assert plan_for({"config": {"workload": "register", "lin_model": "cas-register"}})[
        "linearizability"]["model"] == "cas-register"
    rw = plan_for({"config": {"workload": "rw-register", "consistency_model": "serializable"}})
    assert rw["rw-register"] == {"model": "serializable", "wfr_keys": True,
                                 "linearizable_keys": False}
    assert plan_for({"config": {}}) == {"linearizability": {}}
    # An imported rw-register history (no workload) gets the same inference as a run.
    assert plan_for({"config": {"checkers": ["rw-register"]}})["rw-register"] == {
        "model": "strict-serializable", "wfr_keys": True, "linearizable_keys": True}
    assert plan_for({"config": {"checkers": ["rw-register"], "elle_options": {
        "sequential-keys": 1}}})["rw-register"] == {"model": "strict-serializable",
                                                    "sequential_keys": True}


def test_a_plan_judges_good_and_bad_histories_apart():
    plan = {"linearizability": {"model": "register-kv"}}
    assert check_loaded(_run(GOOD, {}), plan)["valid"] is True
    assert check_loaded(_run(BAD, {}), plan)["valid"] is False


def test_unknown_checker_names_are_refused():
    with pytest.raises(ValueError, match="unknown checker"):
        plan_for({"config": {"checkers": ["nope"]}})
