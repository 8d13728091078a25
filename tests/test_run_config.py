import pytest

from harness.run_config import ConfigError, RunConfig, parse_nemesis, validate


def test_defaults_are_valid_and_round_trip():
    c = validate(RunConfig())
    assert RunConfig.from_json(c.to_json()) == c


@pytest.mark.parametrize("change, words", [
    ({"workload": "bank"}, "unknown workload 'bank'"),
    ({"db": "mysql"}, "unknown db"),
    ({"nemesis": ["kill", "flood"]}, "unknown nemesis 'flood'"),
    ({"nodes": 0}, "--nodes must be at least 1"),
    ({"rate": -1.0}, "--rate must not be negative"),
    ({"concurrency": 0}, "--concurrency"),
    ({"time_limit": 0}, "--time-limit"),
    ({"db": "etcd", "bugs": ["x"]}, "--bug switches exist only"),
])
def test_bad_arguments_are_one_sentence(change, words):
    with pytest.raises(ConfigError) as e:
        validate(RunConfig(**change))
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_parse_nemesis():
    assert parse_nemesis("partition, kill,pause") == ["partition", "kill", "pause"]
    assert parse_nemesis("none") == []


def test_checkers_a_system_cannot_feed_are_skipped_with_a_reason():
    from harness.checking import checks_for, skipped_checks
    etcd = {"config": {"db": "etcd", "workload": "register"}, "artifacts": []}
    assert checks_for(etcd) == ["stats", "linearizability", "availability"]
    assert skipped_checks(etcd, ["divergence"]) == {"divergence": "etcd leaves no log dumps"}
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
