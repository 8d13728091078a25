"""The Elle checker's verdicts: models, info/fail semantics, the search budget,
the realtime graph's size, the CLI, and a property: histories from a real
serial execution are strict-serializable."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from checkers import elle
from checkers.elle import consistency as elle_consistency
from checkers.elle import graph, rw_register
from checkers.elle.graph import dependency_graph, scc_labels, tarjan_labels
from checkers.elle.kinds import REALTIME
from checkers.elle.simulate import serial_history
from checkers.elle.txns import transactions
from checkers.elle.versions import index_writers, infer_orders
from checkers.history import Op, pack_op

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import (  # noqa: E402
    History,
    g0,
    g1c,
    g2_item,
    g_single,
    g_single_realtime,
)
from tests.checkers.test_elle_rw_register import History as RegisterHistory  # noqa: E402

# The five models these tests were written for; the rest of the lattice is
# tested in test_elle_lattice.py.
FIVE = ("read-committed", "repeatable-read", "snapshot-isolation", "serializable",
        "strict-serializable")


def models(h: History) -> dict:
    got = elle.check(h.ops)["stats"]["models"]
    return {m: got[m]["valid"] for m in FIVE}


def test_write_skew_rules_out_serializable_but_not_snapshot_isolation() -> None:
    assert models(g2_item(False)) == {
        "read-committed": True, "repeatable-read": False, "snapshot-isolation": True,
        "serializable": False, "strict-serializable": False}
    v = elle.check(g2_item(False).ops, model="snapshot-isolation")
    assert v["valid"] is True and [a["type"] for a in v["anomalies"]] == ["G2-item"]


def test_read_skew_rules_out_snapshot_isolation() -> None:
    m = models(g_single(False))
    assert m["snapshot-isolation"] is False and m["read-committed"] is True


def test_g1c_rules_out_read_committed() -> None:
    assert models(g1c(False))["read-committed"] is False


def test_stale_read_is_serializable_but_not_strict() -> None:
    h = g_single_realtime(False)
    assert elle.check(h.ops, model="serializable")["valid"] is True
    assert elle.check(h.ops)["valid"] is False


def test_unknown_model_is_refused() -> None:
    with pytest.raises(ValueError):
        elle.check([], model="linearizable-ish")


def test_history_without_transactions_is_unknown() -> None:
    assert elle.check([])["valid"] == "unknown"
    only_failed = History()
    only_failed.invoke(1, [["append", "x", 1]])
    only_failed.fail(1)
    assert elle.check(only_failed.ops)["valid"] == "unknown"
    # One txn, or txns none of which is ordered before another, is nothing
    # to judge either (Elle's empty transaction graph).
    one = History()
    one.txn(1, [["append", "x", 1]])
    v = elle.check(one.ops)
    assert v["valid"] == "unknown" and "nothing to judge" in v["stats"]["reason"]
    two = History()
    two.txn(1, [["append", "x", 1]])
    two.txn(2, [["append", "x", 2]])
    v = elle.check(two.ops)
    assert v["valid"] is True and "reason" not in v["stats"]


def test_info_append_may_be_read() -> None:
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.info(1)
    h.txn(2, [["r", "x", [1]]])
    h.txn(3, [["append", "x", 2]])
    h.txn(4, [["r", "x", [1, 2]]])
    v = elle.check(h.ops)
    assert v["valid"] is True and v["anomalies"] == []


def test_info_append_may_never_happen() -> None:
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.info(1)
    h.txn(2, [["r", "x", []]])
    h.txn(2, [["r", "x", []]])
    assert elle.check(h.ops)["valid"] is True


def test_info_txn_still_takes_part_in_cycles() -> None:
    # The info txn's append was read, so it happened; the reader of y missed it.
    h = History()
    h.invoke(1, [["append", "x", 1], ["append", "y", 1]])
    h.info(1)
    h.txn(2, [["r", "x", [1]], ["r", "y", []]])
    h.txn(3, [["r", "y", [1]]])
    assert {a["type"] for a in elle.check(h.ops)["anomalies"]} == {"G-single-item"}


def test_explanation_names_keys_values_and_edges() -> None:
    [a] = elle.check(g_single(False).ops)["anomalies"]
    text = a["explanation"]
    assert "missed 1" in text and "key 'x'" in text and "(rw)" in text and "(wr)" in text
    assert [s["kind"] for s in a["steps"]] in (["rw", "wr"], ["wr", "rw"])
    assert len(a["cycle"]) == 2


def test_search_budget_gives_unknown_not_a_hang() -> None:
    # Write skew: the search for G-single is cut short, and its two rw edges
    # prove no cycle snapshot isolation forbids, so that model stays unknown.
    v = elle.check(g2_item(False).ops, model="snapshot-isolation", cycle_search_budget_s=0.0)
    assert v["valid"] == "unknown"
    [timeout] = [a for a in v["anomalies"] if a["type"] == "cycle-search-timeout"]
    assert "G-single-item" in timeout["undecided"]


def test_out_of_budget_a_forbidden_component_proves_a_cycle() -> None:
    v = elle.check(g0(False).ops, cycle_search_budget_s=0.0)
    assert v["valid"] is False
    [proof] = [a for a in v["anomalies"] if a["type"] == "cycle-exists"]
    assert proof["component_size"] == 2 and "G0" in proof["families"]
    assert "read-committed" in proof["models"]
    assert v["stats"]["models"]["read-committed"]["valid"] is False
    # Write skew proves serializable broken, not snapshot isolation.
    v = elle.check(g2_item(False).ops, model="serializable", cycle_search_budget_s=0.0)
    assert v["valid"] is False
    assert v["stats"]["models"]["snapshot-isolation"]["valid"] == "unknown"
    [proof] = [a for a in v["anomalies"] if a["type"] == "cycle-exists"]
    assert "G2-item" in proof["families"] and "snapshot-isolation" not in proof["models"]
    # The fixed twins have no such component: nothing to prove, nothing undecided.
    assert elle.check(g0(True).ops, cycle_search_budget_s=0.0)["valid"] is True
    assert elle.check(g2_item(True).ops, cycle_search_budget_s=0.0)["valid"] is True


def test_timeout_does_not_hide_an_anomaly_found_outside_the_search() -> None:
    h = g0(False)
    h.txn(9, [["append", "z", 1], ["r", "z", []]])
    assert elle.check(h.ops, cycle_search_budget_s=0.0)["valid"] is False


def test_malformed_txn_is_reported_and_makes_verdict_unknown() -> None:
    ops = [Op(0, 0, 1, "invoke", "txn", [["append", "x"]]),
           Op(1, 1, 1, "ok", "txn", [["append", "x"]])]
    v = elle.check(ops)
    assert v["valid"] == "unknown"
    assert v["anomalies"][0]["type"] == "malformed-txn"


def test_realtime_edges_grow_linearly_not_quadratically() -> None:
    ops = serial_history(2000, concurrency=5, rng=random.Random(3))
    txns, _ = transactions(ops)
    versions = index_writers(txns)
    infer_orders(txns, versions)
    g = dependency_graph(txns, versions)
    realtime = sum(1 for _, _, k in g.edges(data="kinds") if k & REALTIME)
    assert realtime < 2000 * 10


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(0, 60), keys=st.integers(1, 4),
       concurrency=st.integers(1, 6), max_writes=st.integers(1, 8),
       p_fail=st.sampled_from([0.0, 0.2]), p_info=st.sampled_from([0.0, 0.2]))
def test_serial_executions_are_strict_serializable(seed: int, n: int, keys: int,
                                                   concurrency: int, max_writes: int,
                                                   p_fail: float, p_info: float) -> None:
    ops = serial_history(n, keys=keys, concurrency=concurrency,
                         max_writes_per_key=max_writes, p_fail=p_fail, p_info=p_info,
                         rng=random.Random(seed))
    v = elle.check(ops)
    assert v["anomalies"] == [], v["anomalies"][0]["explanation"]
    # valid unless nothing is ordered (then unknown, saying so)
    assert v["valid"] is ("unknown" if "reason" in v["stats"] else True)
    if sum(op.type == "ok" for op in ops) >= 2 and concurrency == 1:
        assert v["valid"] is True


def _write(path: Path, ops: list[Op]) -> str:
    path.write_bytes(b"".join(pack_op(op) for op in ops))
    return str(path)


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main
    assert main(["check-elle", _write(tmp_path / "ok.msgpack", g_single(True).ops)]) == 0
    bad = _write(tmp_path / "bad.msgpack", g_single(False).ops)
    capsys.readouterr()
    assert main(["check-elle", bad]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["anomalies"][0]["type"] == "G-single-item"
    assert main(["check-elle", bad, "--model", "read-committed"]) == 0
    assert main(["check-elle", _write(tmp_path / "g0.msgpack", g0(False).ops),
                 "--budget", "0"]) == 1
    assert main(["check-elle", _write(tmp_path / "skew.msgpack", g2_item(False).ops),
                 "--budget", "0", "--model", "snapshot-isolation"]) == 2
    assert main(["check-elle", _write(tmp_path / "empty.msgpack", [])]) == 2


def test_cli_judges_every_model_of_the_lattice(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from checkers.elle.consistency import MODEL_NAMES, canonical
    from harness.cli import main
    bad = _write(tmp_path / "bad.msgpack", g_single(False).ops)
    for name in MODEL_NAMES:
        # a G-single-item cycle rules out consistent view and repeatable read
        # and every model implying either, and no other
        want = 1 if canonical(name) in elle_consistency.ruled_out(["G-single-item"]) else 0
        assert main(["check-elle", bad, "--model", name]) == want, name
    capsys.readouterr()
    assert main(["check-elle", bad, "--model", "bogus"]) == 254
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_cli_refuses_a_history_its_workload_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["append", "x", 2], ["r", "x", [1, 2]]])
    path = _write(tmp_path / "append.msgpack", h.ops)
    capsys.readouterr()
    assert main(["check-elle", path, "--workload", "rw-register"]) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is --workload right?" in err[0]


def test_cli_warns_of_completions_without_invokes(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Elle's unit-test style: completions alone, each standing for its txn.
    from harness.cli import main
    path = tmp_path / "history.edn"
    path.write_text(
        "{:type :ok, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 0}\n"
        "{:type :ok, :f :txn, :value [[:append :x 2] [:append :y 2]], :process 0}\n"
        "{:type :ok, :f :txn, :value [[:r :x [1 2]] [:r :y [2 1]]], :process 0}\n")
    capsys.readouterr()
    assert main(["check-elle", str(path), "--model", "read-uncommitted"]) == 1
    captured = capsys.readouterr()
    assert "3 txn completions had no invoke" in captured.err
    out = json.loads(captured.out)
    assert out["anomalies"][0]["type"] == "G0"
    assert out["anomalies"][0]["cycle"][0]["invoke"] is None


def test_cli_reads_jepsen_edn(tmp_path: Path) -> None:
    from harness.cli import main
    path = tmp_path / "history.edn"
    path.write_text(
        "{:type :invoke, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 0}\n"
        "{:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil]], :process 1}\n"
        "{:type :ok, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 0}\n"
        "{:type :ok, :f :txn, :value [[:r :x []] [:r :y [1]]], :process 1}\n"
        "{:type :invoke, :f :txn, :value [[:r :x nil]], :process 0}\n"
        "{:type :ok, :f :txn, :value [[:r :x [1]]], :process 0}\n")
    assert main(["check-elle", str(path), "--model", "serializable"]) == 1
    assert main(["check-elle", str(path), "--format", "edn", "--model", "read-committed"]) == 0


def _elle_shaped(read_y: str) -> str:
    # Elle's own example shape: no :process, no :f, index gaps, comments.
    return ("; T1 appends to x and y\n"
            "{:index 0 :type :invoke :value [[:append :x 1] [:append :y 1]]}\n"
            "{:index 1 :type :ok     :value [[:append :x 1] [:append :y 1]]}\n"
            "; T2 reads x, then y\n"
            "{:index 10 :type :invoke :value [[:r :x nil] [:r :y nil]]}\n"
            f"{{:index 11 :type :ok     :value [[:r :x [1]] [:r :y {read_y}]]}}\n")


@pytest.mark.parametrize("read_y, code", [("[1]", 0), ("[]", 1)])
def test_cli_reads_elle_shaped_history(tmp_path: Path, read_y: str, code: int,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main
    path = tmp_path / "history.edn"
    path.write_text(_elle_shaped(read_y))
    assert main(["check-elle", str(path), "--model", "serializable"]) == code
    out = json.loads(capsys.readouterr().out)
    assert out["stats"]["txns"] == 2
    if code:  # T2 saw T1's append to x but not to y: read skew
        assert out["anomalies"][0]["type"] == "G-single-item"


def _partition(labels) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for node, label in enumerate(np.asarray(labels).tolist()):
        groups.setdefault(label, set()).add(node)
    return {frozenset(g) for g in groups.values()}


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_tarjan_components_are_scipys(n: int, data) -> None:
    # Small graphs' components are found in Python (no scipy import); they
    # must be exactly the ones scipy finds.
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    edges = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                               max_size=4 * n))
    src = np.array([u for u, _ in edges], dtype=np.int32)
    dst = np.array([v for _, v in edges], dtype=np.int32)
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    _, reference = connected_components(m, directed=True, connection="strong")
    assert _partition(tarjan_labels(n, src.tolist(), dst.tolist())) == _partition(reference)
    assert _partition(scc_labels(n, src, dst)) == _partition(reference)


@pytest.mark.parametrize("seed", [7, 8])
def test_pure_python_numpy_and_scipy_give_one_verdict(monkeypatch, seed: int) -> None:
    # A small history is judged in pure Python; the same history judged the
    # way a large one is (numpy's arrays, components by Tarjan and by scipy)
    # must get exactly the same verdict.
    ops = serial_history(600, keys=3, max_writes_per_key=20, p_stale=0.05, p_fail=0.05,
                         p_info=0.05, rng=random.Random(seed))
    monkeypatch.setattr(graph, "ARRAYS_LOADED_FROM_TXNS", 10**9)  # (numpy is loaded here)
    python = elle.check(ops)
    monkeypatch.setattr(graph, "ARRAYS_FROM_TXNS", 0)
    with_numpy = elle.check(ops)
    monkeypatch.setattr(graph, "SCIPY_FROM_EDGES", 0)
    with_scipy = elle.check(ops)
    assert "scipy.sparse.csgraph" in sys.modules
    assert python["valid"] is False
    for v in (python, with_numpy, with_scipy):
        del v["stats"]["graph_s"], v["stats"]["cycle_search_s"]
    assert python == with_numpy == with_scipy


MOP_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b"]),
                       st.booleans(), st.lists(st.integers(0, 3), max_size=4),
                       st.lists(st.lists(st.integers(0, 2), max_size=2), max_size=2))


# Read values share a few small lists, so that reads are often prefixes of
# one another (the parse checks elements through each key's longest read).
READ_LISTS = st.sampled_from([[], [0], [0, 1], [0, 1, 2], [1], [0, [1]], [[1]], [0, {"a": 1}],
                              [0, 1, [2]], ["a", 0], [0, 1, 2, 3]])
MOP = st.one_of(
    st.tuples(st.sampled_from(["append", "r", "w", "x"]), MOP_VALUES, MOP_VALUES).map(list),
    st.tuples(st.just("r"), st.sampled_from([0, 1]), READ_LISTS).map(list),
    st.tuples(st.just("append"), st.sampled_from([0, 1]), st.integers(0, 3)).map(list),
    st.lists(st.integers(0, 2), max_size=4))


@settings(max_examples=400, deadline=None)
@example(txns=[([["r", 0, [0, 1, 2]]], "ok"), ([["r", 0, [0, [1]]]], "ok")])
@example(txns=[([["r", 0, [0, [1]]]], "ok"), ([["r", 0, [0]]], "ok")])
@given(txns=st.lists(st.tuples(st.one_of(st.lists(MOP, max_size=5), MOP_VALUES),
                               st.sampled_from(["ok", "ok", "info", "fail"])), max_size=6))
def test_plain_micro_ops_parse_as_converted_ones(txns) -> None:
    # Micro-ops that need no conversion are taken as they are, their reads'
    # elements checked only through each key's longest read; the txns must be
    # what converting every micro-op gives.
    from checkers.elle.txns import _converted_mops, _transactions, _txn_pairs

    ops = []
    for p, (mops, status) in enumerate(txns):
        ops.append(Op(2 * p, 2 * p, p, "invoke", "txn", mops))
        ops.append(Op(2 * p + 1, 2 * p + 1, p, status, "txn", mops))

    def shape(parsed):
        ts, problems = parsed
        return ([(t.id, t.status, [tuple(x) for x in t.mops], [tuple(x) for x in t.append_mops],
                  [tuple(x) for x in t.read_mops], t.rereads) for t in ts], problems)

    reference = _transactions(_txn_pairs(ops), _converted_mops)
    assert shape(transactions(ops)) == shape(reference)


def test_a_small_sane_history_needs_neither_scipy_nor_networkx() -> None:
    # Each costs a command checking one history ~0.15-0.3 s to import.
    import subprocess

    code = ("import random, sys\nfrom checkers import elle\n"
            "from checkers.elle.simulate import serial_history\n"
            "v = elle.check(serial_history(300, rng=random.Random(1)))\n"
            "print(v['valid'], 'scipy' in sys.modules, 'networkx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "False", "False"]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 30), data=st.data())
def test_cycle_search_components_are_networkxs(n: int, data) -> None:
    # The cycle search finds components and their topological order with its
    # own Tarjan over adjacency lists; networkx is the reference.
    import networkx as nx

    from checkers.elle.cycles import _sccs

    edges = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                         st.sampled_from([1, 2, 4])), max_size=3 * n))
    kinds = data.draw(st.sampled_from([1, 3, 7]))
    adj: dict[int, list[tuple[int, int]]] = {u: [] for u in range(n)}
    for u, v, k in edges:
        adj[u].append((v, k))
    h = nx.DiGraph()
    h.add_nodes_from(range(n))
    h.add_edges_from((u, v) for u, v, k in edges if k & kinds)
    comps = _sccs(adj, kinds)
    assert {frozenset(c) for c in comps} == {frozenset(c) for c in
                                            nx.strongly_connected_components(h)}
    position = {x: i for i, c in enumerate(comps) for x in c}
    assert all(position[u] <= position[v] for u, v in h.edges)

# --- what the checks report, field by field (mutants that survived) -------------
# Anomalies named with their keys, elements and txns; the cycles proven when
# the search runs out of time, with the families and models they rule out;
# keys and elements that are not scalars. Through the public checks only.


def ref(process: int, invoke: int, completion: int | None, status: str = "ok") -> dict:
    return {"process": process, "invoke": invoke, "completion": completion, "status": status}


def cycle_proofs(v: dict) -> list[dict]:
    return [a for a in v["anomalies"] if a["type"] == "cycle-exists"]


WR_CYCLE_MODELS = ["read-committed", "monotonic-atomic-view", "read-atomic", "update-atomic",
                   "cursor-stability", "monotonic-view", "consistent-view",
                   "forward-consistent-view", "snapshot-isolation", "repeatable-read",
                   "serializable", "strong-session-read-committed",
                   "strong-session-snapshot-isolation", "strong-session-serializable",
                   "strong-read-committed", "strong-snapshot-isolation", "strict-serializable"]


def test_a_wr_cycle_of_six_proven_without_a_search_names_five_of_its_txns():
    h = History()
    keys = "abcdef"
    h.concurrent(*[(i, [["append", keys[i], 1], ["r", keys[(i + 1) % 6], [1]]])
                   for i in range(6)])
    v = elle.check(h.ops, cycle_search_budget_s=0)
    assert v["valid"] is False
    assert cycle_proofs(v) == [{
        "type": "cycle-exists",
        # every model forbidding all wr cycles, in FORBIDDEN_EDGES' order by edge kinds
        "models": ["read-committed", "monotonic-atomic-view", "read-atomic", "update-atomic",
                   "cursor-stability", "monotonic-view", "consistent-view",
                   "forward-consistent-view", "snapshot-isolation", "repeatable-read",
                   "serializable", "strong-session-read-committed",
                   "strong-session-snapshot-isolation", "strong-session-serializable",
                   "strong-read-committed", "strong-snapshot-isolation", "strict-serializable"],
        "component_size": 6, "families": ["G1c"],
        "txns": [ref(i, i, 6 + i) for i in range(5)],
        "explanation": (
            "The cycle search ran out of time, but 6 txns (among them those invoked at ops "
            "0, 1, 2, 3, 4) are strongly connected by ww/wr/rw/process/realtime edges, so a "
            "cycle of them exists (G1c), which " + ", ".join(WR_CYCLE_MODELS) + " prohibit.")}]
    # The same txns without the cycle: nothing to prove.
    h = History()
    h.concurrent(*[(i, [["append", keys[i], 1], ["r", keys[(i + 1) % 6], [1] if i < 5 else []]])
                   for i in range(6)])
    assert cycle_proofs(elle.check(h.ops, cycle_search_budget_s=0)) == []


def test_a_cycle_only_realtime_and_process_edges_close_is_proven_for_strict_serializable():
    # T3 reads x before T1's append and appends y after T2 read it empty; T1
    # then T2 run in order on process 1: T1 -process-> T2 -rw-> T3 -rw-> T1.
    h = History()
    h.invoke(3, [["r", "x", None], ["append", "y", 1]])   # op 0
    h.txn(1, [["append", "x", 1]])                         # ops 1, 2
    h.txn(1, [["r", "y", []]])                             # ops 3, 4
    h.ok(3)                                                # op 5
    v = elle.check(h.ops, cycle_search_budget_s=0)
    assert cycle_proofs(v) == [{
        "type": "cycle-exists",
        "models": ["strong-session-serializable", "strict-serializable"], "component_size": 3,
        "families": ["G-single-item", "G-nonadjacent-item", "G2-item",
                     "G-single-item-process", "G-nonadjacent-item-process", "G2-item-process",
                     "G-single-item-realtime", "G-nonadjacent-item-realtime",
                     "G2-item-realtime"],
        "txns": [ref(3, 0, 5), ref(1, 1, 2), ref(1, 3, 4)],
        "explanation": (
            "The cycle search ran out of time, but 3 txns (among them those invoked at ops "
            "0, 1, 3) are strongly connected by ww/wr/rw/process/realtime edges, so a cycle "
            "of them exists (G-single-item or G-nonadjacent-item or G2-item or "
            "G-single-item-process or G-nonadjacent-item-process or G2-item-process or "
            "G-single-item-realtime or G-nonadjacent-item-realtime or G2-item-realtime), "
            "which strong-session-serializable, strict-serializable prohibit.")}]
    # On two processes with T2 overlapping T1, no process or realtime edge closes it.
    h = History()
    h.invoke(3, [["r", "x", None], ["append", "y", 1]])
    h.invoke(1, [["append", "x", 1]])
    h.invoke(2, [["r", "y", []]])
    h.ok(1)
    h.ok(2)
    h.ok(3)
    assert cycle_proofs(elle.check(h.ops, cycle_search_budget_s=0)) == []


def test_a_read_skew_component_has_both_wr_and_rw_families():
    h = History()
    h.concurrent((1, [["append", "x", 1], ["append", "z", 1]]),
                 (2, [["r", "x", [1]], ["r", "z", []]]))
    [proof] = cycle_proofs(elle.check(h.ops, cycle_search_budget_s=0))
    assert proof["families"] == ["G1c", "G-single-item", "G-nonadjacent-item", "G2-item"]
    # Snapshot isolation forbids only cycles without adjacent rw edges, which a
    # component over rw edges does not prove (it may be a G2-item cycle): the
    # proof leaves SI out.
    assert proof["models"] == ["repeatable-read", "serializable", "strong-session-serializable",
                               "strict-serializable"]


def test_aborted_read_names_key_element_reader_and_failed_writer():
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.fail(1)
    h.txn(2, [["r", "x", [1]]])
    v = elle.check(h.ops)
    assert v["anomalies"] == [{
        "type": "G1a", "key": "x", "element": 1, "reader": ref(2, 2, 3),
        "writer": ref(1, 0, 1, "fail"),
        "explanation": (
            "The txn by process 2, invoked at op 2, ok at op 3: [r 'x' [1]] read key 'x' as "
            "[1], including 1, which was appended by the failed txn by process 1, invoked at "
            "op 0, fail at op 1: [append 'x' 1].")}]


def test_aborted_reads_each_failed_element_once_in_order():
    h = History()
    h.invoke(1, [["append", "x", 10], ["append", "x", 9]])
    h.fail(1)
    h.txn(2, [["r", "x", [10, 9]]])
    v = elle.check(h.ops)
    assert [(a["type"], a["element"]) for a in v["anomalies"]] == [("G1a", 10), ("G1a", 9)]


def test_list_append_internal_anomaly_in_full():
    h = History()
    h.txn(1, [["append", "x", 1], ["r", "x", [2]]])
    assert elle.check(h.ops)["anomalies"] == [{
        "type": "internal", "key": "x", "read": [2], "txn": ref(1, 0, 1),
        "explanation": (
            "The txn by process 1, invoked at op 0, ok at op 1: [append 'x' 1, r 'x' [2]] "
            "read key 'x' as [2], but given its own earlier reads and appends it should have "
            "read a list ending in [1].")}]


def test_register_internal_and_duplicate_write_in_full():
    h = RegisterHistory()
    h.txn(1, [["w", "x", 1], ["r", "x", 2]])
    assert rw_register.check(h.ops)["anomalies"] == [{
        "type": "internal", "key": "x", "read": 2, "expected": 1, "txn": ref(1, 0, 1),
        "explanation": (
            "The txn by process 1, invoked at op 0, ok at op 1: [w 'x' 1, r 'x' 2] read key "
            "'x' = 2, but its own earlier read or write left it 1.")}]
    h = RegisterHistory()
    h.txn(1, [["w", "x", 1]])
    h.txn(2, [["w", "x", 1]])
    v = rw_register.check(h.ops)
    assert v["valid"] == "unknown"
    assert v["anomalies"] == [{
        "type": "duplicate-write", "key": "x", "value": 1, "txns": [ref(1, 0, 1), ref(2, 2, 3)],
        "explanation": (
            "Key 'x' was set to 1 by the txn by process 1, invoked at op 0, ok at op 1: "
            "[w 'x' 1] and by the txn by process 2, invoked at op 2, ok at op 3: [w 'x' 1]; "
            "values must be unique per key to tell which write a read saw, so this history "
            "cannot be judged.")}]


def test_list_keys_and_elements_are_compared_by_content():
    h = History()
    h.txn(1, [["append", ["k", 1], [1, 2]]])
    h.txn(2, [["r", ["k", 1], [[1, 2]]]])
    h.txn(2, [["r", ["k", 1], ([1, 2],)]])
    assert elle.check(h.ops)["valid"] is True
    # A nested element appended by a failed txn and read: G1a, naming it.
    h = History()
    h.invoke(1, [["append", ["k", 1], [1, 2]]])
    h.fail(1)
    h.txn(2, [["r", ["k", 1], [[1, 2]]]])
    [a] = json.loads(json.dumps(elle.check(h.ops)["anomalies"]))  # as verdicts.json has it
    assert (a["type"], a["key"], a["element"]) == ("G1a", ["k", 1], [1, 2])


def test_elements_that_cannot_be_compared_leave_their_txn_out_by_name():
    h = History()
    h.txn(1, [["append", "x", {"a": 1}]])
    h.txn(2, [["append", "x", 1]])
    h.txn(3, [["r", "x", [{"a": 1}]]])
    v = elle.check(h.ops)
    assert v["valid"] == "unknown"
    assert v["anomalies"] == [
        {"type": "malformed-txn", "op": 0, "explanation": (
            "The txn invoked at op 0 was left out: appended element {'a': 1} cannot be "
            "compared.")},
        {"type": "malformed-txn", "op": 4, "explanation": (
            "The txn invoked at op 4 was left out: element read {'a': 1} cannot be "
            "compared.")}]


def test_cycle_search_timeout_names_what_it_left_undecided():
    h = History()
    h.concurrent((1, [["append", "x", 1], ["r", "y", [1]]]),
                 (2, [["append", "y", 1], ["r", "x", [1]]]))
    v = elle.check(h.ops, cycle_search_budget_s=0)
    undecided = ["G1c", "G-single-item", "G-nonadjacent-item", "G2-item", "G0-process",
                 "G1c-process", "G-single-item-process", "G-nonadjacent-item-process",
                 "G2-item-process", "G0-realtime", "G1c-realtime", "G-single-item-realtime",
                 "G-nonadjacent-item-realtime", "G2-item-realtime"]
    assert v["anomalies"][0] == {
        "type": "cycle-search-timeout", "undecided": undecided, "budget_s": 0,
        "explanation": (
            "The cycle search used up its 0 s budget (largest strongly connected component: "
            "2 txns) before it could rule out " + ", ".join(undecided) + "; models "
            "prohibiting those are unknown.")}
    # A wr cycle of two is proven for every model forbidding wr cycles; the
    # models that forbid only ww cycles are unknown (G0-process and G0-realtime
    # were not searched for) or valid (G0 was).
    got = v["stats"]["models"]
    assert {m: r["ruled_out_by"] for m, r in got.items() if r["ruled_out_by"]} == {
        m: ["cycle-exists"] for m in WR_CYCLE_MODELS}
    assert {m: r["valid"] for m, r in got.items() if not r["ruled_out_by"]} == {
        "read-uncommitted": True, "strong-session-read-uncommitted": "unknown",
        "strong-read-uncommitted": "unknown"}


def test_models_are_ruled_out_by_the_anomalies_they_prohibit_only():
    v = elle.check(g_single(False).ops)
    assert {m: v["stats"]["models"][m] for m in FIVE} == {
        "read-committed": {"valid": True, "ruled_out_by": []},
        "repeatable-read": {"valid": False, "ruled_out_by": ["G-single-item"]},
        "snapshot-isolation": {"valid": False, "ruled_out_by": ["G-single-item"]},
        "serializable": {"valid": False, "ruled_out_by": ["G-single-item"]},
        "strict-serializable": {"valid": False, "ruled_out_by": ["G-single-item"]}}


def test_a_malformed_txn_makes_the_verdict_unknown_but_rules_out_no_model():
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["bogus", "x", 1]])
    h.txn(3, [["r", "x", [1]]])
    v = elle.check(h.ops)
    assert v["valid"] == "unknown"
    assert v["stats"]["not"] == []
    assert all(r == {"valid": "unknown", "ruled_out_by": []}
               for r in v["stats"]["models"].values())


def test_dirty_update_in_full():
    h = History()
    h.invoke(1, [["append", "x", 1]])
    h.fail(1)
    h.txn(2, [["append", "x", 2]])
    h.txn(3, [["r", "x", [1, 2]]])
    dirty = [a for a in elle.check(h.ops)["anomalies"] if a["type"] == "dirty-update"]
    assert dirty == [{
        "type": "dirty-update", "key": "x", "element": 1, "next": 2,
        "aborted": ref(1, 0, 1, "fail"), "writer": ref(2, 2, 3),
        "explanation": (
            "Key 'x' holds 1, appended by the failed txn by process 1, invoked at op 0, fail "
            "at op 1: [append 'x' 1], followed by 2, appended by the txn by process 2, invoked "
            "at op 2, ok at op 3: [append 'x' 2]: a committed write on top of an aborted one.")}]


def test_a_cycle_through_a_never_completed_txn_explained_step_by_step():
    h = History()
    h.invoke(1, [["append", "x", 1], ["append", "y", 1]])    # never completes
    h.txn(2, [["append", "x", 2], ["append", "y", 2]])
    h.txn(3, [["r", "x", [1, 2]], ["r", "y", [2, 1]]])
    [g0] = [a for a in elle.check(h.ops)["anomalies"] if a["type"] == "G0"]
    assert g0["cycle"] == [ref(1, 0, None, "info"), ref(2, 1, 2)]
    assert g0["explanation"].startswith(
        "Let:\n"
        "  T1 = the txn by process 1, invoked at op 0, never completed: "
        "[append 'x' 1, append 'y' 1]\n"
        "  T2 = the txn by process 2, invoked at op 1, ok at op 2: [append 'x' 2, append 'y' 2]\n"
        "Then:\n"
        "  - T1 < T2, because T1 appended 1 to key 'x' and T2 appended 2 after it (ww).\n"
        "  - T2 < T1, because T2 appended 2 to key 'y' and T1 appended 1 after it (ww).\n"
        "A cycle: T1 < T2 < T1, so")


def test_internal_anomaly_of_two_reads_in_one_txn_in_full():
    h = History()
    h.txn(2, [["append", "x", 1]])
    h.txn(1, [["r", "x", [1]], ["r", "x", [1, 2]]])
    internal = [a for a in elle.check(h.ops)["anomalies"] if a["type"] == "internal"]
    assert internal == [{
        "type": "internal", "key": "x", "read": [1, 2], "txn": ref(1, 2, 3),
        "explanation": (
            "The txn by process 1, invoked at op 2, ok at op 3: [r 'x' [1], r 'x' [1 2]] read "
            "key 'x' as [1 2], but given its own earlier reads and appends it should have read "
            "[1].")}]


def test_a_history_without_cycles_has_no_cyclic_component():
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["r", "x", [1]]])
    v = elle.check(h.ops)
    assert v["valid"] is True
    assert (v["stats"]["cyclic_components"], v["stats"]["largest_component"]) == (0, 0)


def test_incompatible_orders_in_full():
    h = History()
    h.txn(1, [["append", "x", 1]])
    h.txn(2, [["append", "x", 2]])
    h.txn(3, [["r", "x", [1, 2]]])
    h.txn(4, [["r", "x", [2, 1]]])
    # (ordered by its longest read [1 2], as Elle does, x also shows that the
    # second read ran after the append of 2 it missed: a realtime cycle,
    # which test_elle_incompatible_orders holds)
    anomalies = elle.check(h.ops)["anomalies"]
    assert [a["type"] for a in anomalies] == ["incompatible-order", "G-single-item-realtime"]
    assert anomalies[:1] == [{
        "type": "incompatible-order", "key": "x", "reads": [[1, 2], [2, 1]],
        "txns": [ref(3, 4, 5), ref(4, 6, 7)],
        "explanation": (
            "Two reads of key 'x' disagree about the order of its appends: the txn by process "
            "3, invoked at op 4, ok at op 5: [r 'x' [1 2]] read [1 2], and the txn by process "
            "4, invoked at op 6, ok at op 7: [r 'x' [2 1]] read [2 1], which is not a prefix "
            "of it. A list only grows at its end, so one of them is wrong.")}]


def test_register_histories_with_nothing_to_judge_or_a_malformed_txn_are_unknown():
    h = RegisterHistory()
    h.invoke(1, [["w", "x", 1]])
    h.fail(1)
    v = rw_register.check(h.ops)
    assert (v["valid"], v["anomalies"]) == ("unknown", [])
    h = RegisterHistory()
    h.txn(1, [["w", "x", 1]])
    h.txn(2, [["q", "x", 1]])
    h.txn(3, [["r", "x", 1]])
    v = rw_register.check(h.ops)
    assert v["valid"] == "unknown"
    assert v["anomalies"] == [{"type": "malformed-txn", "op": 2, "explanation": (
        "The txn invoked at op 2 was left out: micro-op kind 'q' is neither w nor r.")}]


def test_register_keys_and_values_that_are_lists_compare_by_content():
    h = RegisterHistory()
    h.txn(1, [["w", ["k", 1], [1, 2]]])
    h.txn(2, [["r", ["k", 1], [1, 2]]])
    assert rw_register.check(h.ops)["valid"] is True
    h = RegisterHistory()
    h.invoke(1, [["w", ["k", 1], [1, 2]]])
    h.fail(1)
    h.txn(2, [["r", ["k", 1], [1, 2]]])
    [a] = json.loads(json.dumps(rw_register.check(h.ops)["anomalies"]))
    assert (a["type"], a["key"]) == ("G1a", ["k", 1])


def test_register_values_that_cannot_be_compared_leave_their_txn_out_by_name():
    h = RegisterHistory()
    h.txn(1, [["w", "x", {"a": 1}]])
    h.txn(2, [["r", {"k": 1}, 1]])
    h.txn(3, [["r", "y", {"b": 2}]])
    h.txn(4, [["w", "z", 1]])
    v = rw_register.check(h.ops)
    assert v["valid"] == "unknown"
    assert [a["explanation"] for a in v["anomalies"]] == [
        "The txn invoked at op 0 was left out: written value {'a': 1} cannot be compared.",
        "The txn invoked at op 2 was left out: key {'k': 1} cannot be compared.",
        "The txn invoked at op 4 was left out: value read {'b': 2} cannot be compared."]


def test_register_cycle_explanation_quotes_the_value_read_and_the_later_version():
    h = RegisterHistory()
    h.txn(1, [["w", "x", 1]])
    h.concurrent((2, [["w", "x", 2], ["w", "y", 2]]), (3, [["r", "x", 1], ["r", "y", 2]]))
    [a] = rw_register.check(h.ops, linearizable_keys=True)["anomalies"]
    assert a["type"] == "G-single-item"
    assert a["explanation"] == (
        "Let:\n"
        "  T1 = the txn by process 3, invoked at op 3, ok at op 5: [r 'x' 1, r 'y' 2]\n"
        "  T2 = the txn by process 2, invoked at op 2, ok at op 4: [w 'x' 2, w 'y' 2]\n"
        "Then:\n"
        "  - T1 < T2, because T1 read key 'x' = 1 and T2 set it to 2, which came later in its "
        "version order (by linearizable-keys) (rw).\n"
        "  - T2 < T1, because T1 read key 'y' = 2, which T2 wrote (wr).\n"
        "A cycle: T1 < T2 < T1, so no order of these transactions agrees with what they "
        "observed (G-single-item).")


def test_cycle_search_labels_made_afresh_give_the_same_anomalies(monkeypatch) -> None:
    # The label table is made once per process; made again here, so the
    # labels an edge may take (only kinds it has and the spec allows) are
    # what this check runs on, not a table left from an earlier one.
    from checkers.elle import cycles
    monkeypatch.setattr(cycles, "_LABELS", {})
    for history, kind in ((g0(False), "G0"), (g1c(False), "G1c")):
        v = elle.check(history.ops)
        assert [a["type"] for a in v["anomalies"]] == [kind] and v["valid"] is False
    assert elle.check(g1c(True).ops)["valid"] is True


def test_per_component_results_merge_with_the_largest_component() -> None:
    from checkers.elle.cycles import SearchResult, merge_searches
    merged = merge_searches([SearchResult(components=1, largest_component=3, seconds=0.5),
                             SearchResult(components=1, largest_component=5, seconds=0.25)])
    assert (merged.components, merged.largest_component, merged.seconds) == (2, 5, 0.75)
    assert merge_searches([]).largest_component == 0


def test_what_the_check_built_is_left_where_asked_and_the_verdict_is_the_same():
    """`leave` (check-elle hands the process's end what the check built, which
    it need not free object by object): the txns, version orders and edges
    end up there, and the verdict does not change."""
    from checkers.elle.graph import Edges
    from checkers.elle.simulate import serial_history
    from checkers.elle.versions import Versions

    for stale in (0.0, 0.2):
        ops = serial_history(300, p_fail=0.05, p_info=0.05, p_stale=stale,
                             rng=random.Random(7))
        left: list = []
        with_leave, plain = elle.check(ops, leave=left), elle.check(ops)
        for v in (with_leave, plain):
            for k in ("graph_s", "cycle_search_s"):
                v["stats"].pop(k)
        assert with_leave == plain
        assert plain["valid"] is (stale == 0.0)
        txns, versions, edges = left
        assert len(txns) == 300 and isinstance(versions, Versions) and isinstance(edges, Edges)
