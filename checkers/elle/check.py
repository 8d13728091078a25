"""The Elle-style list-append checker: history in, verdict out."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection
from typing import Any

from checkers.acks import as_promised
from checkers.elle.budget import (
    DEFAULT_MEMORY_LIMIT_MB,
    estimate_bytes,
    history_size,
    over_budget,
)
from checkers.elle.consistency import (
    FORBIDDEN_EDGES,
    NOT_ANOMALIES,
    PROHIBITED,
    boundary,
    canonical,
    models_report,
)
from checkers.elle.cycles import (
    Cycle,
    CycleSearch,
    SearchResult,
    edge_evidence,
    families,
    find_cycles,
)
from checkers.elle.dirty import dirty_anomalies
from checkers.elle.explain import explain_cycle, txn_ref
from checkers.elle.graph import Edges, dependency_edges, record_graph
from checkers.elle.internal import internal_anomalies
from checkers.elle.kinds import ALL, KIND_NAMES
from checkers.elle.read_write import read_write_anomalies
from checkers.elle.txns import (
    APPEND,
    FAIL,
    OK,
    Txn,
    nothing_to_judge_in,
    transactions,
    without_invoke,
)
from checkers.elle.versions import index_writers, infer_orders
from checkers.history import Op, collector_paused
from checkers.verdict import Verdict, verdict

# Enough of each anomaly type to act on; the counts in stats say how many.
MAX_PER_TYPE = 20


def check(history: list[Op], run: dict | None = None, *, model: str = "strict-serializable",
          cycle_search_budget_s: float = 30.0,
          memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
          cycle_search: CycleSearch = find_cycles,
          prefix_keys: Collection[Any] | None = None,
          leave: list[Any] | None = None) -> Verdict:
    """Judge a list-append history against `model` (one of
    `checkers.elle.consistency.MODELS`). Anomalies carry a `type` and an
    `explanation`; `stats["models"]` says which models the history rules out.
    A history whose check would take more than `memory_limit_mb` (estimated
    from its size, `checkers.elle.budget`) is unknown, and nothing is built.
    `cycle_search` may search the components elsewhere (`checkers.spark`).
    `prefix_keys`: the `History.prefix_keys` of the reader that read
    `history` (these very ops), whose reads need no comparing again.
    `leave`: where the check leaves what it built (its txns, version orders
    and edges) instead of freeing it on return, for a caller about to end
    the process, which frees it at no cost (`harness.commands.process_end`)."""
    model = canonical(model)
    refused = memory_refusal(history, model, memory_limit_mb)
    if refused is not None:
        return refused
    with collector_paused():
        return _check(as_promised(history), model, cycle_search_budget_s, cycle_search,
                      prefix_keys or frozenset(), [] if leave is None else leave)


def memory_refusal(history: list[Op], model: str, memory_limit_mb: int | None
                   ) -> Verdict | None:
    """The unknown verdict for a history too big for `memory_limit_mb`, or None."""
    size = history_size(history)
    reason = over_budget(size, memory_limit_mb)
    if reason is None:
        return None
    return verdict("unknown", [], {"model": model, "txns": size.txns, "mops": size.mops,
                                   "memory_estimate_bytes": estimate_bytes(size),
                                   "memory_limit_mb": memory_limit_mb, "reason": reason})


def _check(history: list[Op], model: str, cycle_search_budget_s: float,
           cycle_search: CycleSearch, prefix_keys: Collection[Any],
           leave: list[Any]) -> Verdict:
    started = time.monotonic()
    txns, malformed = transactions(history, prefix_keys=prefix_keys)
    empty = nothing_to_judge_in(history, txns)
    if empty is not None:
        return verdict("unknown", list(malformed), {
            "model": model, "txns": len(txns), "reason": empty})
    versions = index_writers(txns)
    anomalies = list(malformed)
    anomalies += internal_anomalies(txns)
    anomalies += infer_orders(txns, versions)
    anomalies += dirty_anomalies(txns, versions)
    anomalies += read_write_anomalies(txns, APPEND, versions.longest)
    edges = dependency_edges(txns, versions)
    leave += (txns, versions, edges)
    return judge_graph(txns, edges, anomalies, bool(malformed), model, cycle_search_budget_s,
                       started, cycle_search)


def judge_graph(txns: list[Txn], edges: Edges, anomalies: list[dict[str, Any]],
                unparsed: bool, model: str, cycle_search_budget_s: float,
                started: float, cycle_search: CycleSearch = find_cycles) -> Verdict:
    """The part every Elle-style checker shares: given the txns, their
    dependency edges and the anomalies found so far, search for cycles and
    judge the history against `model`."""
    cyclic = edges.components(ALL)
    # Cycles live inside components: only their txns need the graph of record,
    # and a history without any needs none (nor networkx imported).
    g = record_graph(txns, edges, (int(i) for c in cyclic for i in c)) if cyclic else None
    built = time.monotonic()
    search = cycle_search(g, cycle_search_budget_s) if g is not None else SearchResult()
    anomalies += [_cycle_anomaly(c, g, txns) for c in search.cycles]
    if search.undecided:
        anomalies.append({
            "type": "cycle-search-timeout", "undecided": search.undecided,
            "budget_s": cycle_search_budget_s,
            "explanation": (f"The cycle search used up its {cycle_search_budget_s:g} s budget "
                            f"(largest strongly connected component: "
                            f"{search.largest_component} txns) before it could rule out "
                            f"{', '.join(search.undecided)}; models prohibiting those are "
                            f"unknown."),
        })
    proven: set[str] = set()
    if search.undecided:
        for a in _cycles_proven(edges, g, txns, search.undecided):
            proven.update(a["models"])
            anomalies.append(a)
    counts = Counter(a["type"] for a in anomalies)
    found = set(counts) - NOT_ANOMALIES
    models = models_report(found, set(search.undecided), unparsed, proven)
    edge_counts = edges.counts()
    # Nothing to judge (Elle's empty transaction graph): no txn is ordered
    # before another, so no model can be shown to hold; only the anomalies
    # found can rule some out.
    empty = _nothing_ordered(txns, edge_counts)
    if empty:
        for r in models.values():
            if r["valid"] is True:
                r["valid"] = "unknown"
    lattice = boundary(models)
    stats: dict[str, Any] = {
        "model": model,
        "txns": len(txns),
        "txn_status": dict(Counter(t.status for t in txns)),
        "edges": edge_counts,
        "cyclic_components": search.components,
        "largest_component": search.largest_component,
        "anomaly_counts": dict(counts),
        "models": models,
        # as Elle says it: the weakest models ruled out, the others ruled
        # out, and the strongest the history is valid under
        "not": lattice["not"],
        "also_not": lattice["also_not"],
        "possible": lattice["possible"],
        "graph_s": round(built - started, 3),
        "warnings": _warnings(txns),
        "cycle_search_s": round(search.seconds, 3),
    }
    if empty:
        stats["reason"] = ("no txn is ordered before another (no dependency, process or "
                           "realtime edge): nothing to judge")
    return verdict(models[model]["valid"], _capped(anomalies), stats)


def _cycles_proven(edges: Edges, g: Any, txns: list[Txn],
                   undecided: list[str]) -> list[dict[str, Any]]:
    """For the models whose forbidden cycles the search could not finish
    looking for: the strongly connected components over the edges each model
    forbids in a cycle. Each proves a cycle exists, found or not."""
    by_kinds: dict[int, list[str]] = {}
    for m, kinds in FORBIDDEN_EDGES.items():
        if PROHIBITED[m] & set(undecided):
            by_kinds.setdefault(kinds, []).append(m)
    # The same component often shows up over several models' edges: say it once.
    proofs: dict[frozenset[int], tuple[list[str], list[str], int]] = {}
    for kinds, models in sorted(by_kinds.items()):
        for members in edges.components(kinds):
            comp = set(members)
            key = frozenset(comp)
            had_models, had_fams, had_kinds = proofs.get(key, ([], [], 0))
            fams = had_fams + [f for f in families(g, comp, kinds) if f not in had_fams]
            proofs[key] = (had_models + models, fams, had_kinds | kinds)
    out = []
    for comp, (models, fams, kinds) in proofs.items():
        sample = sorted(comp)[:5]
        edges = "/".join(n for b, n in KIND_NAMES.items() if b & kinds)
        out.append({
            "type": "cycle-exists", "models": models, "component_size": len(comp),
            "families": fams, "txns": [txn_ref(txns[i]) for i in sample],
            "explanation": (
                f"The cycle search ran out of time, but {len(comp)} txns (among them "
                f"those invoked at ops {', '.join(str(txns[i].invoke.index) for i in sample)}"
                f") are strongly connected by {edges} edges, so a cycle of them exists "
                f"({' or '.join(fams)}), which {', '.join(models)} "
                f"{'prohibits' if len(models) == 1 else 'prohibit'}."),
        })
    return out


def _nothing_ordered(txns: list[Txn], edge_counts: dict[str, int]) -> bool:
    """Whether no txn is ordered before another: no data or process edge, and
    no txn completed before another that may have happened was invoked (the
    realtime count also holds the barriers that carry realtime order)."""
    if any(n for kind, n in edge_counts.items() if kind != "realtime"):
        return False
    live = [t for t in txns if t.status != FAIL]
    done = [t.completion.index for t in live if t.status == OK]  # type: ignore[union-attr]
    return not done or min(done) > max(t.invoke.index for t in live)


def _warnings(txns: list[Txn]) -> list[str]:
    lone = without_invoke(txns)
    if not lone:
        return []
    return [f"{lone} txn completion{'s' if lone > 1 else ''} had no invoke; each was taken "
            f"as its own invoke and completion (as Elle takes a history of completions "
            f"alone), ordered in realtime before what was invoked after it and after "
            f"nothing."]


def _capped(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: Counter = Counter()
    out = []
    for a in anomalies:
        seen[a["type"]] += 1
        if seen[a["type"]] <= MAX_PER_TYPE:
            out.append(a)
    return out


def _cycle_anomaly(cycle: Cycle, g: Any, txns: list[Txn]) -> dict[str, Any]:
    steps = [(txns[u], txns[v], kind, edge_evidence(g, u, v, kind))
             for u, v, kind in cycle.steps]
    return {
        "type": cycle.type,
        "cycle": [txn_ref(txns[u]) for u, _, _ in cycle.steps],
        "steps": [{"from": txns[u].invoke.index, "to": txns[v].invoke.index,
                   "kind": KIND_NAMES[kind], "evidence": ev}
                  for (u, v, kind), (_, _, _, ev) in zip(cycle.steps, steps, strict=True)],
        "explanation": explain_cycle(cycle.type, steps),
    }
