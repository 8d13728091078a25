"""The public System API: one registry of systems, found by entry point or spec."""

from importlib.metadata import entry_points

import pytest

from faultline import System, registry
from faultline.builtin import RAFT, SYSTEMS
from faultline.pytest_plugin import system_spec
from harness.run.config import ConfigError, RunConfig, validate
from nodes.raft.db import RaftDB
from workloads.clients.raft import RaftClient

# A System defined at module level: found as `<this module>:ECHO`.
ECHO = System(name="echo-test", db=RaftDB, clients={"register": RaftClient})


def test_builtins_are_registered_as_entry_points_under_their_own_names():
    eps = {ep.name: ep for ep in entry_points(group=registry.GROUP)}
    for system in SYSTEMS:
        assert eps[system.name].load() is system
    assert {"raft", "etcd"} <= set(registry.names())


def test_get_by_name_and_by_spec():
    assert registry.get("raft") is RAFT
    assert registry.get("faultline.builtin:ETCD").name == "etcd"
    assert registry.get(f"{__name__}:ECHO") is ECHO


@pytest.mark.parametrize("name, says", [
    ("nosuch", "choose one of"),
    ("nosuch.module:X", "cannot import"),
    ("faultline.builtin:NOPE", "has no 'NOPE'"),
    ("faultline.builtin:SYSTEMS", "not a faultline System"),
])
def test_unknown_systems_are_one_sentence(name, says):
    with pytest.raises(registry.UnknownSystem, match=says):
        registry.get(name)


def test_config_validation_follows_the_system():
    validate(RunConfig(db=f"{__name__}:ECHO", workload="register"))
    with pytest.raises(ConfigError, match="no client for workload 'kv'"):
        validate(RunConfig(db=f"{__name__}:ECHO", workload="kv"))
    with pytest.raises(ConfigError, match="no client for workload 'log'"):
        validate(RunConfig(db="etcd", workload="log"))
    with pytest.raises(ConfigError, match="etcd has no bug switches"):
        validate(RunConfig(db="etcd", bugs=["x"]))
    with pytest.raises(ConfigError, match="unknown bug switch"):
        validate(RunConfig(db="raft", bugs=["no-such-bug"]))
    with pytest.raises(ConfigError, match="unknown --node-option 'tick_ms' for etcd"):
        validate(RunConfig(db="etcd", node_options={"tick_ms": 5}))


def test_unsupported_workload_names_what_is_supported():
    with pytest.raises(ValueError, match="supports register"):
        ECHO.client_class("kv")


def test_run_help_lists_the_registered_systems():
    import argparse

    from harness.commands.run import add_run_arguments
    p = argparse.ArgumentParser()
    add_run_arguments(p)
    text = p.format_help()
    for name in registry.names():
        assert name in text
    assert p.parse_args(["--db", "etcd"]).db == "etcd"      # the old spelling still works
    assert p.parse_args(["--system", "etcd"]).db == "etcd"


def test_plugin_names_a_system_object_the_workers_can_load():
    assert system_spec("raft") == "raft"
    assert system_spec(RAFT) == "raft"
    assert registry.get(system_spec(ECHO)) is ECHO
    with pytest.raises(ValueError, match="neither registered"):
        system_spec(System(name="anon", db=RaftDB, clients={}))


def test_a_trigger_fault_is_refused_for_a_system_without_event_lines():
    from faultline import catalog
    assert catalog.unmet_needs("kill-after-vote", registry.get("etcd")) == {"events"}
    assert catalog.unmet_needs("kill-after-vote", RAFT) == frozenset()
    assert catalog.unmet_needs("partition:one-way", registry.get("etcd")) == frozenset()
    with pytest.raises(ConfigError, match="kill-after-vote needs node events lines"):
        validate(RunConfig(db="etcd", nemesis=["kill-after-vote"]))
    validate(RunConfig(db="raft", nemesis=["kill-after-vote"]))


def test_systems_command_lists_every_registered_name(capsys):
    from faultline import catalog
    from harness.cli import main
    assert main(["systems", "--json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    assert set(doc["systems"]) == set(registry.names())
    assert doc["systems"]["raft"]["workloads"] == RAFT.workloads
    assert doc["systems"]["etcd"]["faults_it_cannot_take"] == [
        f.name for f in catalog.faults() if {"events", "preload-clock"} & f.needs]
    assert {w.name for w in catalog.workloads()} == set(doc["workloads"])


def test_workload_data_names_each_workloads_data_type():
    from faultline import LISTS, LOGS, REGISTER_TXNS, REGISTERS, workload_data
    assert workload_data("list-append") == LISTS
    assert workload_data("rw-register") == REGISTER_TXNS
    assert workload_data("register") == REGISTERS and workload_data("kv") == REGISTERS
    assert workload_data("log") == LOGS
    with pytest.raises(KeyError):
        workload_data("no-such-workload")
