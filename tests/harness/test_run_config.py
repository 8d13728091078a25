import json

import pytest

from harness.run.config import ConfigError, RunConfig, parse_nemesis, validate


def test_defaults_are_valid_and_round_trip():
    c = validate(RunConfig())
    assert RunConfig.from_json(c.to_json()) == c


@pytest.mark.parametrize("change, words", [
    ({"workload": "bank"}, "unknown workload 'bank'"),
    ({"db": "mysql"}, "unknown system 'mysql': choose one of"),
    ({"nemesis": ["kill", "flood"]}, "unknown nemesis 'flood'"),
    ({"nodes": 0}, "--nodes must be at least 1"),
    ({"rate": -1.0}, "--rate must not be negative"),
    ({"concurrency": 0}, "--concurrency"),
    ({"time_limit": 0}, "--time-limit"),
    ({"db": "etcd", "bugs": ["x"]}, "--bug: system etcd has no bug switches"),
    ({"lin_options": {"deadline": 5}}, "unknown linearizability option 'deadline'"),
    ({"lin_options": {"time_limit": -1}}, "time_limit must be a positive number or null"),
    ({"lin_options": {"memory_limit_mb": "lots"}}, "memory_limit_mb must be a positive"),
    ({"lin_options": {"stop_on_first_failure": 1}}, "must be true or false"),
])
def test_bad_arguments_are_one_sentence(change, words):
    with pytest.raises(ConfigError) as e:
        validate(RunConfig(**change))
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_lin_options_reach_the_linearizability_checker(tmp_path):
    from checkers.history import Op
    from checkers.registry import check_loaded
    from checkers.rundir import load_run
    from harness.cli import main
    from harness.results.store import create_run_dir
    from harness.run.history import HistoryWriter
    from workloads.judging import plan_for

    # 16 overlapping writes then an impossible read: ~16 * 2**16 configurations.
    run_dir = create_run_dir(tmp_path)
    with HistoryWriter(run_dir / "history.msgpack") as w:
        for p in range(16):
            w.append(Op(0, p, p, "invoke", "write", p))
        for p in range(16):
            w.append(Op(0, 16 + p, p, "ok", "write", p))
        w.append(Op(0, 40, 99, "invoke", "read"))
        w.append(Op(0, 41, 99, "ok", "read", -1))
    config = validate(RunConfig(lin_options={"time_limit": 0.01, "memory_limit_mb": None}))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "complete", "artifacts": [],
        "config": config.to_json()}))
    loaded = load_run(run_dir)
    lin = check_loaded(loaded, plan_for(loaded.run))["checkers"]["linearizability"]
    assert lin["valid"] == "unknown"
    assert "time limit" in lin["anomalies"][0]["reason"]
    # On the command line: K=V pairs, values read as JSON.
    assert main(["run", "--lin-option", "time_limit=oops", "--results", str(tmp_path)]) == 254


def test_parse_nemesis():
    assert parse_nemesis("partition, kill,pause") == ["partition", "kill", "pause"]
    assert parse_nemesis("none") == []


def test_checkers_a_system_cannot_feed_are_skipped_with_a_reason():
    from checkers.registry import runnable, skipped_checks
    from workloads.judging import plan_for

    def checks_for(run):
        return list(runnable(run, plan_for(run)))

    etcd = {"config": {"db": "etcd", "workload": "register"}, "artifacts": []}
    assert checks_for(etcd) == ["stats", "linearizability", "availability"]
    assert skipped_checks(etcd, {"divergence": {}}) == {"divergence": "etcd leaves no log dumps"}
    appends = {"config": {"db": "etcd", "workload": "list-append"}, "artifacts": []}
    assert "durability" in checks_for(appends)
    raft = {"config": {"db": "raft", "workload": "register"}, "artifacts": ["events", "log_dump"]}
    assert "divergence" in checks_for(raft) and "elections" in checks_for(raft)
    # A run.json from before artefacts were recorded keeps every requested checker.
    assert "divergence" in checks_for({"config": {"workload": "register"}})


def test_nemesis_variants():
    validate(RunConfig(nemesis=["partition:one-way", "kill:majority", "lose-unsynced:all"]))
    with pytest.raises(ConfigError, match="bad nemesis variant 'partition:sideways'"):
        validate(RunConfig(nemesis=["partition:sideways"]))


def test_every_workload_option_its_docs_name_is_accepted() -> None:
    from harness.run.config import RunConfig, validate
    for workload, options in [("register", {"ops_per_key": 100}),
                              ("register", {"ops_per_key": 0}),
                              ("register", {"cas": False}),
                              ("rw-register", {"active_keys": 3, "max_writes_per_key": 4}),
                              ("list-append", {"active_keys": 3, "max_appends_per_key": 4})]:
        validate(RunConfig(db="raft", workload=workload, workload_options=options))


def test_a_negative_ops_per_key_is_refused_before_anything_starts() -> None:
    from harness.run.config import ConfigError, RunConfig, validate
    with pytest.raises(ConfigError, match="ops_per_key"):
        validate(RunConfig(db="raft", workload="register", workload_options={"ops_per_key": -1}))
