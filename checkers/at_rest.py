"""When the run's faults touched the data its nodes hold at rest, read off
the history's nemesis ops by what each fault's row declares
(`checkers.faults.FaultOp.at_rest`, judged on the op's recorded value):

- a fault that DESTROYS it (bits flipped at rest, a file cut, a data dir put
  aside) counts from its inject's invoke until its inject completed, or, if
  it lasts, until its heal completed;
- one that DISTURBS it (a disk that refuses, fills, slows or garbles I/O)
  counts from its inject's invoke until its heal's invoke: the heal lifts
  the disk's rules before it starts any node (nemesis.diskfault), so a node
  its heal restarts reads the disk as it is; and only on the nodes where its
  heal's record says it failed or garbled a read (`FaultOp.spoiled_reads`:
  a disk that refused only writes, or slowed, made no recovery read less);
- a fault with no row (a plug-in's) may do anything: DESTROYS, for its own
  op; so may an inject that failed part-way, if its row says it may
  destroy, for its own op too.

Times are put on the nodes' clock (CLOCK_MONOTONIC ns, run.json
`start_monotonic_ns` + the op's history time), so the rules that read
them compare them with event lines as they are.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from checkers.fault_row import DESTROYS, DISTURBS, KEEPS
from checkers.faults import FAULT_OPS
from checkers.history import NEMESIS, Op, noop_reason, pair_ops
from checkers.impairment import named_nodes
from nodes.events import START


@dataclass(frozen=True)
class AtRest:
    """One injection that destroyed or disturbed its nodes' data at rest."""

    f: str
    what: str                       # DESTROYS or DISTURBS
    nodes: frozenset[str] | None    # None: the op named none (every node)
    start: int                      # monotonic ns
    end: int                        # monotonic ns

    def hits(self, node: str) -> bool:
        return self.nodes is None or node in self.nodes

    def overlaps(self, node: str, start: int, end: int) -> bool:
        return self.hits(node) and self.start <= end and self.end >= start

    def ref(self) -> dict[str, Any]:
        return {"f": self.f, "what": self.what,
                "nodes": None if self.nodes is None else sorted(self.nodes),
                "start": self.start, "end": self.end}


def _nodes(value: Any) -> frozenset[str] | None:
    named = named_nodes(value)
    return frozenset(named) if named else None


def at_rest_faults(history: Iterable[Op], start_ns: int) -> list[AtRest]:
    """Pure: the injections of `history` that destroyed or disturbed data at
    rest, in invoke order, on the nodes' clock (`start_ns`: run.json
    `start_monotonic_ns`)."""
    ops = [op for op in history if op.process == NEMESIS]
    run_end = max((op.time for op in ops), default=0)
    heals = {row.heal_f for row in FAULT_OPS.values()}
    out: list[dict[str, Any]] = []
    open_: list[dict[str, Any]] = []
    for inv, done in pair_ops(ops):
        recorded = done.value if done is not None else inv.value
        if noop_reason(recorded):
            continue
        finished = done.time if done is not None else run_end
        row = FAULT_OPS.get(inv.f)
        if row is None and inv.f in heals:
            healed = _nodes(recorded) if isinstance(recorded, dict) and "nodes" in recorded \
                else _nodes(inv.value)
            for fault in [f for f in open_ if FAULT_OPS[f["f"]].heal_f == inv.f]:
                if healed is None or fault["nodes"] is None or fault["nodes"] & healed:
                    open_.remove(fault)
                    fault["end"] = finished
                    if fault["what"] == DISTURBS:
                        fault["end"] = inv.time
                        fault["nodes"] = _spoiled(fault, recorded)
            continue
        what = DESTROYS if row is None else row.at_rest(recorded)
        if what == KEEPS:
            continue
        fault = {"f": inv.f, "what": what, "nodes": _nodes(recorded) or _nodes(inv.value),
                 "start": inv.time, "end": finished}
        out.append(fault)
        # One that failed counts for its own op: whatever it did, it did then.
        if row is not None and row.lasting and done is not None and done.error is None:
            open_.append(fault)
    for fault in open_:
        fault["end"] = run_end
    return [AtRest(f["f"], f["what"], f["nodes"], f["start"] + start_ns, f["end"] + start_ns)
            for f in out if f["nodes"] is None or f["nodes"]]


def _spoiled(fault: dict[str, Any], heal_value: Any) -> frozenset[str] | None:
    """The fault's nodes on which its heal's record says it spoiled a read;
    None (every node) when it names none."""
    if fault["nodes"] is None:
        return None
    spoiled = FAULT_OPS[fault["f"]].spoiled_reads
    return frozenset(n for n in fault["nodes"] if spoiled(heal_value, n))


def destroyed_not_restarted(faults: list[AtRest] | None, events: dict[str, list[dict]],
                            nodes: Iterable[str], live: Collection[str] | None = None
                            ) -> dict[str, dict[str, Any]]:
    """Pure: each of `nodes` that a fault destroying data at rest named and
    that wrote no `start` line after that fault began (it never came back, as
    a node that refuses a corrupt record does), with the last such fault. A
    fault that names no nodes says nothing of which one it hit; a node the
    run found live at its end (run.json `convergence.live`) came back."""
    out: dict[str, dict[str, Any]] = {}
    for fault in faults or ():
        if fault.what != DESTROYS or fault.nodes is None:
            continue
        for node in nodes:
            if node not in fault.nodes:
                continue
            if (live is not None and node in live) or any(
                    ev.get("event") == START.name and type(ev.get("t")) is int
                    and ev["t"] >= fault.start for ev in events.get(node, ())):
                out.pop(node, None)
            else:
                out[node] = fault.ref()
    return out
