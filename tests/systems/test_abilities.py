"""The optional adapter abilities (nodes.abilities, re-exported by faultline):
each adapter has exactly the ones it implements, the faults that need one
refuse an adapter without it, and the workload registry's optional members
are asked the same way."""

from __future__ import annotations

import pytest

import faultline
from nemesis.base import FaultContext, make_fault
from nodes.abilities import (
    ABILITIES,
    AppliedState,
    ChangeVoters,
    Leadership,
    LogGrowth,
    MembersLeaveWhenRemoved,
    NodeLogPatterns,
    NodeStatus,
    PowerCutOnAck,
    PreloadClock,
    Reformat,
    ReplicaProgress,
    StateFiles,
    leaves_when_removed,
)
from nodes.etcd.db import EtcdDB
from nodes.raft.db import RaftDB
from workloads.contract import CheckerOptions
from workloads.registry import WORKLOADS


def held(db: object) -> set[str]:
    return {a.__name__ for a in ABILITIES if isinstance(db, a)}


def test_the_raft_adapter_has_every_ability_but_leaving_when_removed():
    assert held(RaftDB()) == {a.__name__ for a in ABILITIES} - {"MembersLeaveWhenRemoved"}
    assert not leaves_when_removed(RaftDB())


def test_the_etcd_adapter_has_what_it_implements_and_no_more():
    assert held(EtcdDB()) == {"Leadership", "AppliedState", "NodeLogPatterns", "ChangeVoters",
                              "MembersLeaveWhenRemoved", "PreloadClock"}
    assert not EtcdDB().clock_preload      # declared, and off: etcd reads the vDSO
    assert leaves_when_removed(EtcdDB())


def test_an_adapter_with_nothing_optional_has_no_ability():
    class Bare:
        kind = "bare"
        artifacts: frozenset[str] = frozenset()

    assert held(Bare()) == set()
    assert not leaves_when_removed(Bare())


def test_a_false_members_leave_flag_is_the_ability_present_but_off():
    class Stays:
        members_leave_when_removed = False

    assert isinstance(Stays(), MembersLeaveWhenRemoved) and not leaves_when_removed(Stays())


def test_the_public_api_exports_each_ability_defined_once():
    for ability in ABILITIES:
        assert getattr(faultline, ability.__name__) is ability
        assert ability.__module__ == "nodes.abilities"
        assert ability.__name__ in faultline.__all__
    assert {Leadership, ReplicaProgress, AppliedState, NodeLogPatterns, StateFiles, NodeStatus,
            LogGrowth, Reformat, ChangeVoters, MembersLeaveWhenRemoved,
            PreloadClock, PowerCutOnAck} == set(ABILITIES)


class NoAbilities:
    kind = "plain"
    artifacts: frozenset[str] = frozenset()


@pytest.mark.parametrize("spec, needed", [
    ("lose-state", "state files"),
    ("reformat", "re-format"),
    ("membership", "change voters"),
    ("fast-failover", "status and grow_log"),
])
def test_a_fault_needing_an_ability_refuses_an_adapter_without_it(spec, needed):
    with pytest.raises(ValueError, match=needed):
        make_fault(spec, FaultContext(db=NoAbilities(), extras={"mounts": {}}))


@pytest.mark.parametrize("spec", ["lose-state", "reformat", "membership", "fast-failover"])
def test_the_same_fault_accepts_the_raft_adapter(spec):
    assert make_fault(spec, FaultContext(db=RaftDB(), extras={"mounts": {}})).name == spec


def test_only_the_workloads_with_a_linearizability_model_set_checker_options():
    assert {n for n, w in WORKLOADS.items() if isinstance(w, CheckerOptions)} == {"register",
                                                                                  "kv"}


def test_extending_md_documents_every_ability_and_its_example_names_one():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text()
    for ability in ABILITIES:
        assert f"`{ability.__name__}`" in text, ability.__name__
    assert "class RedisDB(DB, Leadership):" in text
