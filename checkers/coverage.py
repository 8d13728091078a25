"""Fault coverage: what each fault of a run touched, so a verdict can say what
it does not speak for (a VALID run whose faults never reached the leader).

Read off the nemesis ops by what each fault declares it takes
(`checkers.faults.FaultOp.takes`) and who led when: per fault, the nodes it
took (for a partition: the nodes it cut off from a quorum, judged by
`checkers.impairment`), whether the leader of the moment was among them,
whether it took a majority (nodes) or left no voter able to reach a majority
(links), and the faults that were no-ops.

Who led when comes from the nodes' election events or, for a system that
prints none, from the harness polling the adapter's `leader()` (run.json
`leaders`); with neither, leader hits are unknown, never "none".
"""

from __future__ import annotations

import bisect
from typing import Any

from checkers.faults import (
    ANYTHING,
    DEGRADED,
    FAULT_OPS,
    LINKS,
    NODES,
    NODES_DURING_OP,
    NOTHING,
    STARVED,
)
from checkers.history import NEMESIS, Op, noop_reason, pair_ops

# The op value readers are impairment's: one reading of what a fault names.
from checkers.impairment import HEALS, Impairment, Segment
from checkers.impairment import _cut as op_cut
from checkers.impairment import named_nodes as op_nodes
from nodes.events import ROLE

NS = 1_000_000_000

# Where who-led-when came from.
EVENTS, OBSERVED = "events", "observed"


def leader_at(leaders: list[tuple[int, str | None]], t: int) -> str | None:
    """The leader last seen at or before history time t (None: none known)."""
    i = bisect.bisect_right([x[0] for x in leaders], t) - 1
    return leaders[i][1] if i >= 0 else None


def coverage(history: list[Op], nodes: list[str], leaders: list[tuple[int, str | None]],
             leader_source: str | None) -> dict[str, Any]:
    """Each injecting nemesis op's reach, and totals. `leaders`: (history time,
    leader or None) in time order; `leader_source`: EVENTS, OBSERVED or None
    (nothing says who led: leader hits are unknown)."""
    majority = len(nodes) // 2 + 1
    known = leader_source is not None
    faults: list[dict[str, Any]] = []
    for inv, done in pair_ops(op for op in history if op.process == NEMESIS):
        if inv.f in HEALS and inv.f not in FAULT_OPS:
            continue
        row = FAULT_OPS.get(inv.f)
        if row is not None and row.takes == NOTHING and row.effect != DEGRADED:
            continue  # a trigger or a composition: what it set off is its own op
        value = done.value if done is not None and done.value is not None else inv.value
        entry: dict[str, Any] = {"f": inv.f, "time_s": round(inv.time / NS, 3)}
        reason = noop_reason(done.value) if done is not None else None
        if reason:
            entry["noop"] = reason
            faults.append(entry)
            continue
        takes = row.takes if row is not None else ANYTHING
        leader = leader_at(leaders, inv.time) if known else None
        if takes == LINKS:
            # A partition takes the nodes it cuts off from a quorum: the leader
            # losing its link to one follower still leads.
            seg = Segment(0, 1, frozenset(), frozenset(op_cut(value) or []), False)
            imp = Impairment(sorted(nodes), sorted(nodes), [seg])
            touched = [n for n in sorted(nodes) if not imp.leader_ok(n, seg)]
            entry["majority"] = not imp.quorum_ok(seg)
        elif takes in (NODES, NODES_DURING_OP, STARVED):
            touched = sorted(set(op_nodes(value) or op_nodes(inv.value) or []))
            entry["majority"] = len(touched) >= majority
        elif row is not None and row.effect == DEGRADED:
            # A lossy or slow link takes nothing away; it reaches the nodes at its ends.
            touched = sorted({str(n) for pair in (value or {}).get("links") or []
                              for n in pair} & set(nodes))
            entry["majority"] = False
        else:
            touched = list(nodes)   # a plug-in fault may take anything
            entry["majority"] = True
        entry["nodes"] = touched
        entry["leader"] = leader
        entry["hit_leader"] = (leader in touched) if known and leader is not None else None
        faults.append(entry)
    acted = [f for f in faults if "noop" not in f]
    per_node = {n: sum(1 for f in acted if n in f["nodes"]) for n in sorted(nodes)}
    hits = [f for f in acted if f["hit_leader"]]
    return {
        "leader_source": leader_source,
        "faults": faults,
        "acted": len(acted),
        "noops": [f["f"] for f in faults if "noop" in f],
        "hit_leader": len(hits) if known else None,
        "hit_majority": sum(1 for f in acted if f["majority"]),
        "per_node": per_node,
        # Said only when the leader was known at every fault: none of them took it.
        "leader_never_hit": known and bool(acted) and all(f["hit_leader"] is False
                                                          for f in acted),
    }


def summary_line(cov: dict[str, Any]) -> str:
    """One line for the terminal, the report header and gate."""
    acted, noops = cov.get("acted", 0), cov.get("noops") or []
    bits = [f"{acted} fault{'s' if acted != 1 else ''} acted"]
    if cov.get("hit_leader") is None:
        bits.append("leader hits unknown (no leader observed)")
    else:
        bits.append(f"{cov['hit_leader']} hit the leader")
    bits.append(f"{cov.get('hit_majority', 0)} a majority")
    if noops:
        bits.append(f"{len(noops)} no-op ({', '.join(sorted(set(noops)))})")
    per = cov.get("per_node") or {}
    if per:
        bits.append("per node " + " ".join(f"{n}:{k}" for n, k in per.items()))
    line = "coverage: " + ", ".join(bits)
    if cov.get("leader_never_hit"):
        line += " — the faults never touched the leader"
    return line


def who_led(events: dict[str, list[dict[str, Any]]], run: dict[str, Any]
            ) -> tuple[list[tuple[int, str | None]], str | None]:
    """(history time, leader) changes and where they came from: the nodes'
    election events, else run.json `leaders` (the harness's poll of the
    adapter), else nothing ([], None)."""
    from checkers.elections import leader_elections
    start = run.get("start_monotonic_ns")
    if type(start) is int:
        elections = [e for e in leader_elections(events) if type(e["t"]) is int]
        if elections:
            return [(e["t"] - start, str(e["node"])) for e in elections], EVENTS
    return observed_leaders(run), (OBSERVED if _has_observations(run) else None)


def _has_observations(run: dict[str, Any]) -> bool:
    leaders = run.get("leaders")
    return isinstance(leaders, dict) and isinstance(leaders.get("changes"), list) \
        and bool(leaders.get("polls"))


def observed_leaders(run: dict[str, Any]) -> list[tuple[int, str | None]]:
    """run.json `leaders.changes` as (history time, leader or None), in time order."""
    leaders = run.get("leaders")
    changes = leaders.get("changes") if isinstance(leaders, dict) else None
    out = [(c[0], c[1] if isinstance(c[1], str) else None) for c in changes or []
           if isinstance(c, list) and len(c) == 2 and type(c[0]) is int]
    return sorted(out, key=lambda c: c[0])


def run_nodes(run: dict[str, Any]) -> list[str]:
    """The run's node names: run.json `nodes`, else n1..nK from the config."""
    nodes = run.get("nodes")
    if isinstance(nodes, dict) and nodes:
        return sorted(map(str, nodes))
    config = run.get("config")
    count = config.get("nodes") if isinstance(config, dict) else None
    return [f"n{i}" for i in range(1, count + 1)] if type(count) is int and count > 0 else []


def run_coverage(history: list[Op], events: dict[str, list[dict[str, Any]]],
                 run: dict[str, Any]) -> dict[str, Any]:
    """verdicts.json `coverage`: `coverage` of a loaded run, with `line` for
    the terminal, the report and gate."""
    leaders, source = who_led(events, run)
    cov = coverage(history, run_nodes(run), leaders, source)
    cov["line"] = summary_line(cov)
    return cov


def coverage_of_run_dir(run_dir: Any, run: dict[str, Any]) -> dict[str, Any]:
    """`run_coverage` read straight off a run dir, keeping only the nemesis ops
    and the leader events (the Spark check, which never loads whole runs)."""
    from pathlib import Path

    from checkers.history import iter_history
    from checkers.rundir import HISTORY, NODES_DIR, STDOUT_LOG, iter_events, node_names
    nemesis = [op for op in iter_history(Path(run_dir) / HISTORY) if op.process == NEMESIS]
    events: dict[str, list[dict[str, Any]]] = {}
    for name in node_names(run_dir):
        path = Path(run_dir) / NODES_DIR / name / STDOUT_LOG
        if path.exists():
            events[name] = [ev for ev in iter_events(path) if ev.get("event") == ROLE.name]
    return run_coverage(nemesis, events, run)
