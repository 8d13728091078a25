import itertools
import random

import pytest

from workloads.registry import WORKLOADS, get


def take(name, seed, n=500, config=None):
    return list(itertools.islice(get(name).generate(random.Random(seed), config or {}), n))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_same_seed_same_sequence(name):
    assert take(name, 7) == take(name, 7)
    assert take(name, 7) != take(name, 8)


def written_values(ops):
    for op in ops:
        if op.f == "write":
            yield op.value
        elif op.f == "cas":
            yield op.value[1]
        elif op.f == "append":
            yield op.value[1]
        elif op.f == "txn":
            yield from (v for f, _, v in op.value if f in ("append", "w"))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_written_values_are_unique(name):
    vals = list(written_values(take(name, 1, 2000)))
    assert vals and len(vals) == len(set(vals))


def test_register_mix():
    fs = {op.f for op in take("register", 3)}
    assert fs == {"read", "write", "cas"}


def test_kv_rotates_keys_with_bounded_ops_per_key():
    ops = take("kv", 5, 5000, {"active_keys": 3, "ops_per_key": 50})
    per_key = {}
    for op in ops:
        per_key[op.key] = per_key.get(op.key, 0) + 1
    assert len(per_key) > 3
    assert max(per_key.values()) <= 50


def test_list_append_txns_are_small():
    for op in take("list-append", 2):
        assert 1 <= len(op.value) <= 4
        for f, _k, v in op.value:
            assert (f == "r" and v is None) or (f == "append" and isinstance(v, int))


def test_unknown_workload_is_one_sentence():
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        get("nope")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_final_reads_cover_what_was_touched(name):
    issued = take(name, 4, 3000)
    finals = get(name).final_reads(issued)
    assert finals
    if name == "kv":
        assert {op.key for op in finals} == {op.key for op in issued}
    if name == "list-append":
        read = {k for op in finals for _, k, _ in op.value}
        assert read == {k for op in issued for _, k, _ in op.value}
    if name == "log":
        assert {op.value[0] for op in finals} == {op.value[0] for op in issued if op.f == "append"}


def test_register_without_cas_reads_and_writes_only():
    ops = take("register", 5, 2000, {"cas": False})
    assert {op.f for op in ops} == {"read", "write"}
    assert "cas" in {op.f for op in take("register", 5, 2000, {"cas": True})}


def test_register_rotates_to_a_fresh_key_every_n_ops():
    ops = take("register", 4, 2500, {"ops_per_key": 1000, "absent_key_ops": 0})
    keys = [op.key for op in ops]
    assert keys[:1000] == ["r0"] * 1000 and keys[1000:2000] == ["r1"] * 1000
    assert keys[2000:] == ["r2"] * 500
    # Each key starts afresh: a cas only ever names a value written to its own key.
    written = {}
    for op in ops:
        if op.f == "write":
            written[op.value] = op.key
        elif op.f == "cas":
            assert written[op.value[0]] == op.key
            written[op.value[1]] = op.key
    assert {op.key for op in take("register", 4, 3000, {"absent_key_ops": 0})} == {
        "r0", "r1", "r2"}  # the default
    assert {op.key for op in take("register", 4, 3000, {"ops_per_key": 0})} == {None}


def test_register_final_reads_cover_every_key():
    from workloads import register
    ops = take("register", 4, 2500, {"ops_per_key": 1000, "absent_key_ops": 0})
    assert [(o.f, o.key) for o in register.final_reads(ops)] == [
        ("read", "r0"), ("read", "r1"), ("read", "r2")]
    assert [o.key for o in register.final_reads([])] == [None]


@pytest.mark.parametrize("bad", [-1, "lots", 2.5])
def test_register_rejects_a_bad_ops_per_key(bad):
    from harness.run.config import ConfigError, RunConfig, validate
    with pytest.raises(ConfigError, match="ops_per_key must be a non-negative integer"):
        validate(RunConfig(workload="register", workload_options={"ops_per_key": bad}))


@pytest.mark.parametrize("name", ["register", "kv"])
def test_some_ops_read_or_cas_a_key_nobody_writes(name):
    """Every store has keys never written; a cas there must fail. The probes
    name only values no op writes, so a correct store leaves the key absent."""
    ops = take(name, 6, 4000)
    probes = [op for op in ops if str(op.key).endswith("-absent")]
    assert 0.02 < len(probes) / len(ops) < 0.1
    assert {op.f for op in probes} == {"read", "cas"}
    written = set(written_values(op for op in ops if op not in probes))
    for op in probes:
        if op.f == "cas":
            assert op.value[0] not in written and op.value[1] not in written
    # A probe's key is never the key of a write or of a cas that could succeed.
    assert not {op.key for op in probes} & {op.key for op in ops if op not in probes}
    assert {op.key for op in probes} <= {op.key for op in get(name).final_reads(ops)}


def test_absent_key_probes_follow_the_options():
    assert not [op for op in take("register", 6, 3000, {"absent_key_ops": 0})
                if str(op.key).endswith("-absent")]
    # One register for the whole run has no key beside it.
    assert {op.key for op in take("register", 6, 3000, {"ops_per_key": 0})} == {None}
    # Without cas, the probes only read.
    assert {op.f for op in take("register", 6, 3000, {"cas": False})
            if str(op.key).endswith("-absent")} == {"read"}
