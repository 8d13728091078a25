"""Each system, workload, fault and checker name is written once, where it is
defined; everything else derives it from that registry entry.

The scan reads every string literal of the product code (the core packages
and contrib's plugin; tests, docs and bench scripts are users of the names)
that equals a registered name, outside the module that defines that name.
Field names of documents (a dict key, `x["name"]`, `x.get("name")`) are
another vocabulary and do not count. `ALLOWED` lists the few literals that
are another thing spelled the same, each with why."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("faultline", "harness", "nemesis", "workloads", "checkers", "nodes",
           "contrib/redis/faultline_redis")
ALLOWED: dict[tuple[str, str], str] = {
    ("checkers/models.py", "register"): "a linearizability model (Knossos's), not the workload",
    ("checkers/models.py", "kv"): "a linearizability model, not the workload",
    ("checkers/models.py", "etcd"): "a register model's flavour: etcd's cas semantics",
    ("checkers/divergence.py", "divergence"): "the anomaly type the checker reports",
    ("nodes/events.py", "truncate"): "the `truncate` event line, defined there",
    ("nodes/raft/requests.py", "log"): "the client protocol's `log` field",
    ("nodes/raft/storage.py", "log"): "the node's log directory",
    ("nemesis/cgroups.py", "cpu"): "the kernel's cpu cgroup controller",
    ("nemesis/cgroups.py", "memory"): "the kernel's memory cgroup controller",
    ("nemesis/pressure.py", "cpu"): "stress-ng's cpu stressor (stress:cpu=N)",
    # nodes/ imports nothing above it, so the calibration rows (the fault and
    # the checkers that expose each switch) name them as run configuration
    # does; test_calibration_names_only_registered_faults_and_checkers holds
    # them to the registries.
    **{("nodes/raft/bugs.py", name): "calibration rows: run configuration"
       for name in ("power-cut-after-vote", "lose-state", "fast-failover", "invariants",
                    "divergence", "linearizability", "durability", "reformat",
                    "availability", "read-commit-point")},
}
FIELD_METHODS = {"get", "pop", "setdefault"}


def _path(module_file: str | None) -> str:
    return str(Path(module_file or "").resolve().relative_to(REPO))


def contrib_systems() -> list:
    sys.path.insert(0, str(REPO / "contrib" / "redis"))
    try:
        pytest.importorskip("redis")
        from faultline_redis import REDIS
        return [REDIS]
    finally:
        sys.path.pop(0)


def definitions() -> dict[str, set[str]]:
    """Each registered name -> the module that defines it (repo-relative path):
    of the modules that may, the one that writes it (the rw-register workload
    takes its name from its checker, so it is the checker registry's)."""
    import checkers.faults
    import checkers.registry
    from checkers.registry import CHECKS
    from faultline.builtin import SYSTEMS
    from nemesis.base import FAULTS
    from workloads.registry import WORKLOADS

    candidates: dict[str, set[str]] = defaultdict(set)
    for system in (*SYSTEMS, *contrib_systems()):
        # A system's name is its DB adapter's `kind`; the System reads it there.
        candidates[system.name].add(_path(inspect.getsourcefile(system.db)))
    for name, module in WORKLOADS.items():
        candidates[name].add(_path(module.__file__))
    # A fault's row is the core's (checkers.faults) or a system's, added through
    # the fault-rows entry points (the raft store's: nodes.raft.fault_rows).
    from checkers.plugins import entry_points
    row_modules = [checkers.faults.__file__] + [
        importlib.import_module(ep.module).__file__
        for ep in entry_points(checkers.faults.ROWS_GROUP)]
    for name in FAULTS:
        candidates[name].update(_path(m) for m in row_modules)
    for name, checker in CHECKS.items():
        # The registry's own, or where a system or plug-in defines the ones it adds.
        candidates[name].add(_path(inspect.getsourcefile(checker.fn)))
    return {name: {m for m in modules if literals_of((REPO / m).read_text(), {name})}
            for name, modules in candidates.items()}


def field_names(tree: ast.AST) -> set[int]:
    """ids of the literals that are field names of a document."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            out.add(id(node.slice))
        elif isinstance(node, ast.Dict):
            out.update(id(k) for k in node.keys if k is not None)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in FIELD_METHODS and node.args):
            out.add(id(node.args[0]))
    return out


def literals_of(source: str, names: set[str]) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    skip = field_names(tree)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in names and id(node) not in skip | docstrings)


def repeated_names(defined: dict[str, set[str]]) -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            for line, name in literals_of(path.read_text(), set(defined)):
                if rel not in defined[name] and (rel, name) not in ALLOWED:
                    found.append(f"{rel}:{line}: {name!r} (defined in "
                                 f"{', '.join(sorted(defined[name]))})")
    return found


def test_each_registered_name_is_written_only_where_it_is_defined():
    assert repeated_names(definitions()) == []


def test_every_allowance_is_still_needed():
    """An allowance nothing needs any more is removed, so the list stays short."""
    defined = definitions()
    used = set()
    for rel, name in ALLOWED:
        source = (REPO / rel).read_text()
        if any(n == name for _, n in literals_of(source, {name})):
            used.add((rel, name))
    assert set(ALLOWED) - used == set()
    assert {name for _, name in ALLOWED} <= set(defined)


def test_the_scan_sees_a_repeated_name_and_not_a_field_name():
    names = {"register", "kill"}
    source = ('KEY = {"register": "r/"}\n'          # a dict key: a field name
              'x = doc["kill"] or doc.get("kill")\n'
              'DEFAULT = "register"\n'              # a repeated workload name
              'if op.f == "kill": pass\n')          # a repeated fault name
    assert literals_of(source, names) == [(3, "register"), (4, "kill")]


def test_each_name_has_one_definition():
    """A workload, fault or checker sharing a name with another kind of thing
    would need two definitions; rw-register's workload takes its checker's."""
    from checkers.registry import RW_REGISTER
    from workloads import rw_register
    from workloads.registry import WORKLOADS
    assert {name: len(modules) for name, modules in definitions().items()
            if len(modules) != 1} == {}
    assert WORKLOADS[RW_REGISTER.name] is rw_register


def test_every_fault_and_only_those_have_a_row_the_checkers_read():
    from checkers.faults import FAULT_OPS
    from nemesis.base import FAULTS, HEAL_F
    assert set(FAULT_OPS) == set(FAULTS)
    assert HEAL_F == {name: op.heal_f for name, op in FAULT_OPS.items()}


def test_calibration_names_only_registered_faults_and_checkers():
    from checkers.registry import CHECKS
    from nemesis.base import FAULTS, split_spec
    from nodes.raft.bugs import CALIBRATION
    for switch, row in CALIBRATION.items():
        assert {split_spec(s)[0] for s in row["nemesis"]} <= set(FAULTS), switch
        assert set(row["caught_by"]) <= set(CHECKS), switch


def test_each_workload_names_a_data_type_and_its_checkers_and_clients_follow_it():
    from checkers.datatypes import ALL
    from checkers.registry import DURABILITY
    from faultline.builtin import SYSTEMS
    from workloads.judging import plan_for
    from workloads.registry import WORKLOADS
    for name, workload in WORKLOADS.items():
        assert workload.DATA in ALL, name
        plan = plan_for({"config": {"workload": name}})
        if DURABILITY.name in plan:
            assert plan[DURABILITY.name]["data"] == workload.DATA
    for system in SYSTEMS:
        [client] = set(system.clients.values())
        assert set(system.clients) == {name for name, workload in WORKLOADS.items()
                                       if workload.DATA in client.DATA}, system.name


def test_clients_act_on_the_workloads_data_type_and_key_by_its_name():
    """No client names a workload: etcd's keys live under the workload's name
    and its txns follow the data type; a type it does not serve is refused."""
    from checkers.datatypes import LISTS, LOGS, REGISTER_TXNS
    from checkers.history import Op
    from workloads import list_append, log, register, rw_register
    from workloads.clients.etcd import EtcdClient
    from workloads.clients.raft import RaftClient

    keyless = EtcdClient(register.NAME, {}, {})
    assert keyless.key_of(None) == register.NAME and keyless.key_of("r1") == "register/r1"
    lists = EtcdClient(list_append.NAME, {}, {})
    assert lists.data == LISTS and lists.key_of(3) == "list-append/3"
    assert EtcdClient(rw_register.NAME, {}, {}).data == REGISTER_TXNS
    with pytest.raises(ValueError, match="no 'log' workload"):
        EtcdClient(log.NAME, {}, {})

    txn = Op(0, 0, 0, "invoke", "txn", [["r", 1, None], ["r", 2, None]])
    reads = {w.NAME: RaftClient(w.NAME, {}, {}).request(txn)["ops"][0][0]
             for w in (list_append, rw_register)}
    assert reads == {list_append.NAME: "r", rw_register.NAME: "get"}
    # One read of one key alone goes through the node's single-key read path.
    single = Op(0, 0, 0, "invoke", "txn", [["r", 1, None]])
    assert RaftClient(list_append.NAME, {}, {}).request(single) == {"op": "get", "key": "1"}
    assert RaftClient(log.NAME, {}, {}).data == LOGS
    assert RaftClient(register.NAME, {}, {}).request(Op(0, 0, 0, "invoke", "read", None))[
        "key"] == register.NAME
