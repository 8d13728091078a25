"""A run's companion workload (workloads/companion.py): the composed op
stream is a pure function of its seeds, the two workloads' keys never meet
(their values may: each generator's own), the share is what was asked, the
companion's keys get their final reads, and the tag survives every way a
history is stored and read back."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from checkers.checker import companion_key, is_companion_key
from checkers.history import Op, read_history
from harness.run.config import ConfigError, RunConfig, companion_line, validate
from harness.run.history import HistoryWriter
from workloads import companion, kv, list_append, log, register, rw_register
from workloads.ops import OpSpec


def composed(main, other, share: float, seed: int = 1, n: int = 5000) -> list[OpSpec]:
    mix = random.Random(seed)
    ops = companion.compose(main.generate(random.Random(seed), {}),
                            other.generate(random.Random(mix.getrandbits(63)), {}),
                            other.NAME, share, mix)
    return list(itertools.islice(ops, n))


def keys_of(op: OpSpec) -> list[Any]:
    if op.f == "txn":
        return [k for _, k, _ in op.value]
    return [op.key]


def values_of(op: OpSpec) -> list[Any]:
    if op.f == "txn":
        return [v for _, _, v in op.value if v is not None]
    if op.f == "cas":
        return list(op.value)
    return [] if op.value is None else [op.value]


def test_the_composed_stream_is_a_function_of_its_seed():
    assert composed(register, list_append, 0.1, seed=4) == composed(register, list_append,
                                                                    0.1, seed=4)
    assert composed(register, list_append, 0.1, seed=4) != composed(register, list_append,
                                                                    0.1, seed=5)


@pytest.mark.parametrize("main,other", [(register, list_append), (list_append, register),
                                        (kv, list_append), (rw_register, register),
                                        (list_append, rw_register)])
def test_namespaces_never_meet(main, other):
    ops = composed(main, other, 0.2)
    mine = [op for op in ops if op.workload is None]
    theirs = [op for op in ops if op.workload is not None]
    assert mine and theirs and {op.workload for op in theirs} == {other.NAME}
    main_keys = {k for op in mine for k in keys_of(op)}
    their_keys = {k for op in theirs for k in keys_of(op)}
    assert main_keys.isdisjoint(their_keys)
    assert all(is_companion_key(other.NAME, k) for k in their_keys)
    assert not any(is_companion_key(other.NAME, k) for k in main_keys)
    assert not any(is_companion_key(other.NAME, str(k)) for k in main_keys)
    # A txn workload's integer keys stay integers (a store may key its tables
    # by integer); a register's are strings.
    txns = {spec.f for spec in other.VALUES} == {"txn"}
    assert all(isinstance(k, int) == txns for k in their_keys)
    # Values are each generator's own (the checkers match on workload, key
    # and value): the companion's are what it would issue alone.
    their_values = {v for op in theirs for v in values_of(op)}
    assert their_values and all(isinstance(v, int) and v > 0 for v in their_values
                                if not isinstance(v, bool))


def test_the_main_workload_issues_what_it_would_alone_in_its_order():
    alone = list(itertools.islice(register.generate(random.Random(1), {}), 4000))
    mine = [op for op in composed(register, list_append, 0.2, n=4000) if op.workload is None]
    assert mine == alone[:len(mine)]


@pytest.mark.parametrize("share", [0.05, 0.1, 0.3])
def test_the_share_is_respected(share):
    ops = composed(register, list_append, share, n=20000)
    got = sum(op.workload is not None for op in ops) / len(ops)
    assert abs(got - share) < 0.02, got


def test_share_zero_is_the_main_workload_alone():
    ops = composed(register, list_append, 0.0, n=2000)
    assert all(op.workload is None for op in ops)


def test_the_companion_is_the_first_other_data_type_the_system_serves():
    every = ["kv", "list-append", "log", "register", "rw-register"]
    assert companion.choose(register, every) is list_append
    assert companion.choose(kv, every) is list_append
    assert companion.choose(list_append, every) is register
    assert companion.choose(rw_register, every) is register
    assert companion.choose(log, every) is register
    # A store of registers alone (Redis) has none; one of lists and register
    # txns (Galera) pairs them.
    assert companion.choose(register, ["kv", "register"]) is None
    assert companion.choose(list_append, ["list-append", "rw-register"]) is rw_register


def test_the_companions_keys_get_final_reads_tagged_as_its():
    ops = composed(register, list_append, 0.2, n=3000)
    reads = companion.final_reads(register, list_append, ops)
    mine = [r for r in reads if r.workload is None]
    theirs = [r for r in reads if r.workload == list_append.NAME]
    assert {r.key for r in mine} == {op.key for op in ops if op.workload is None}
    read_keys = {k for r in theirs for k in keys_of(r)}
    assert read_keys == {k for op in ops if op.workload for k in keys_of(op)}
    assert companion.final_reads(register, None, ops[:10]) == register.final_reads(
        [op for op in ops[:10] if op.workload is None])


def test_a_run_on_raft_gets_a_companion_and_says_so():
    c = validate(RunConfig(db="raft", workload="register"))
    assert c.companion == list_append.NAME and c.companion_ops == companion.COMPANION_OPS
    assert companion_line(c) == ("faultline: companion workload list-append at 10% of ops, "
                                 "on keys of its own, judged by its own checkers")
    off = validate(RunConfig(db="raft", workload="list-append", companion_ops=0))
    assert off.companion is None
    assert companion_line(off) == "faultline: no companion workload: --companion-ops is 0"
    with pytest.raises(ConfigError, match="companion-ops"):
        validate(RunConfig(db="raft", companion_ops=1.5))


def test_a_run_json_of_before_companions_replays_without_one():
    old = {"db": "raft", "workload": "register", "seed": 3}
    c = validate(RunConfig.from_json(old))
    assert c.companion_ops == 0 and c.companion is None
    again = validate(RunConfig.from_json(validate(RunConfig(db="raft")).to_json()))
    assert again.companion == list_append.NAME


def test_the_workload_tag_round_trips_through_every_reader(tmp_path):
    assert Op.from_map({"index": 0, "time": 0, "process": 0, "type": "invoke",
                        "f": "read"}).workload is None
    with pytest.raises(ValueError, match="workload"):
        Op.from_map({"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "read",
                     "workload": 3})
    ops = [Op(0, 1, 0, "invoke", "txn", [["append", "list-append:1", -1]],
              workload="list-append"),
           Op(0, 2, 1, "invoke", "write", 1, "r0"),
           Op(0, 3, 0, "ok", "txn", [["append", "list-append:1", -1]], workload="list-append"),
           Op(0, 4, 1, "ok", "write", 1, "r0")]
    # Txns first: read_history takes its whole-file reader (msgspec shapes).
    for path, shuffled in ((tmp_path / "txns.msgpack", ops),
                           (tmp_path / "mixed.msgpack", [ops[1], ops[0], ops[3], ops[2]])):
        writer = HistoryWriter(path)
        for op in shuffled:
            writer.append(op)
        writer.close()
        back = read_history(path).ops
        assert [(o.f, o.workload) for o in back] == [(o.f, o.workload) for o in shuffled]


def test_the_parquet_copy_keeps_the_tag(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from checkers.spark.ops_table import cached_parquet, ops_from_rows
    run = tmp_path / "run"
    run.mkdir()
    writer = HistoryWriter(run / "history.msgpack")
    writer.append(Op(0, 1, 0, "invoke", "read", None, companion_key("register", "r0"),
                     workload="register"))
    writer.append(Op(0, 2, 1, "invoke", "txn", [["r", 1, None]]))
    writer.close()
    back = ops_from_rows(pq.read_table(cached_parquet(run)).to_pandas())
    assert [o.workload for o in back] == ["register", None]
