"""Elle's cycle search one strongly connected component at a time (as the
Spark job runs it, each component a task) must give exactly the verdict of
the whole search: same validity, same anomalies in the same order, same
explanations, on histories that pass and on histories with anomalies in
many components."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from checkers import elle
from checkers.elle import rw_register
from checkers.elle.cycles import (
    SearchResult,
    component_adjacency,
    cyclic_components,
    find_cycles_by_component,
    merge_searches,
    search_component,
)
from checkers.elle.simulate import serial_history

TIMINGS = ("graph_s", "cycle_search_s")


def without_timings(v: dict[str, Any]) -> str:
    stats = {k: x for k, x in v["stats"].items() if k not in TIMINGS}
    return json.dumps({**v, "stats": stats}, sort_keys=True, default=str)


def reversed_order(adjacencies: list, budget_s: float) -> list[SearchResult]:
    """Search the components last to first, as tasks may finish in any order,
    and hand the results back in the components' order."""
    out = [search_component(adj, budget_s) for adj in reversed(adjacencies)]
    return out[::-1]


def split(g: Any, budget_s: float) -> SearchResult:
    return find_cycles_by_component(g, budget_s, reversed_order)


@pytest.mark.parametrize("registers", [False, True])
@pytest.mark.parametrize("model", ["strict-serializable", "snapshot-isolation"])
@pytest.mark.parametrize("txns,p_stale,seed", [(1000, 0.0, 1), (3000, 0.004, 3)])
def test_searching_component_by_component_gives_the_same_verdict(
        registers: bool, model: str, txns: int, p_stale: float, seed: int) -> None:
    ops = serial_history(txns, max_writes_per_key=32, p_stale=p_stale, registers=registers,
                         rng=random.Random(seed))
    check = rw_register.check if registers else elle.check
    whole = check(ops, model=model)
    apart = check(ops, model=model, cycle_search=split)
    assert without_timings(apart) == without_timings(whole)
    if p_stale == 0.0:
        assert whole["valid"] is True
    elif not registers:
        # Stale reads made cycles in many components.
        assert whole["valid"] is False
        assert whole["stats"]["cyclic_components"] >= 10


def test_a_history_valid_under_its_model_with_cycles_in_several_components() -> None:
    """Stale reads of acknowledged appends: G-single-realtime cycles, one per
    component, which serializability allows and strict serializability does not."""
    ops = serial_history(3000, max_writes_per_key=32, p_stale=0.003, rng=random.Random(5))
    strict = elle.check(ops, cycle_search=split)
    assert strict["valid"] is False
    assert strict["stats"]["cyclic_components"] > 1
    # Only the stale reads' realtime cycles: with them allowed, it passes.
    relaxed = elle.check(ops, model="serializable", cycle_search=split)
    whole = elle.check(ops, model="serializable")
    assert without_timings(relaxed) == without_timings(whole)


def test_the_merge_takes_each_types_first_cycles_in_component_order() -> None:
    ops = serial_history(3000, max_writes_per_key=32, p_stale=0.004, rng=random.Random(3))
    from checkers.elle.cycles import SPECS, find_cycles
    from checkers.elle.graph import dependency_edges, record_graph
    from checkers.elle.kinds import ALL
    from checkers.elle.txns import transactions
    from checkers.elle.versions import index_writers, infer_orders

    txns, _ = transactions(ops)
    versions = index_writers(txns)
    infer_orders(txns, versions)
    edges = dependency_edges(txns, versions)
    g = record_graph(txns, edges, (int(i) for c in edges.components(ALL) for i in c))
    comps = cyclic_components(g)
    cap = 3  # cycles per type, across components
    parts = [search_component(component_adjacency(g, c), 30.0, SPECS, cap) for c in comps]
    merged = merge_searches(parts, SPECS, cap)
    # More components hold a type's cycles than the cap lets through: the
    # merge must cut, in the components' order, not just concatenate.
    assert sum(len(p.cycles) for p in parts) > len(merged.cycles)
    whole = find_cycles(g, 30.0, SPECS, cap)
    assert [(c.type, c.steps) for c in merged.cycles] == [(c.type, c.steps)
                                                           for c in whole.cycles]
    assert (merged.components, merged.largest_component, merged.undecided) == (
        whole.components, whole.largest_component, whole.undecided)


def test_a_component_out_of_budget_leaves_its_specs_undecided() -> None:
    ops = serial_history(3000, max_writes_per_key=32, p_stale=0.004, rng=random.Random(3))
    v = elle.check(ops, cycle_search=lambda g, _: find_cycles_by_component(g, 0.0))
    assert v["valid"] is not True
    assert "cycle-search-timeout" in v["stats"]["anomaly_counts"]


def test_skipping_subsets_of_acyclic_edge_sets_finds_the_same_cycles(monkeypatch) -> None:
    # The search skips the edge kinds a spec may use when a larger set of
    # kinds already has no component; without that it must find the same.
    from checkers.elle import cycles
    from tests.elle_mutants import mutant

    histories = [mutant(seed) for seed in range(0, 120, 4)]
    histories += [serial_history(600, keys=3, p_stale=0.03, p_info=0.05,
                                 rng=random.Random(seed)) for seed in range(6)]
    pruned = [elle.check(ops) for ops in histories]
    monkeypatch.setattr(cycles, "_prime", lambda adj, subs, specs: None)
    unpruned = [elle.check(ops) for ops in histories]
    assert sum(v["valid"] is False for v in pruned) >= 10
    for a, b in zip(pruned, unpruned, strict=True):
        assert without_timings(a) == without_timings(b)
