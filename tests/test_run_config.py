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
