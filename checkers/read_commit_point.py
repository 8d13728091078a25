"""Was each linearizable read answered by a node that knew the commit point
already announced when the read began? Judged from the history's ok reads
and the nodes' `hw` lines (nodes.events.HW), for any system that writes them.

`read-behind-commit-point`: an ok linearizable read whose answering node had,
by the read's completion, announced no commit point (its highest `hw` line)
as high as the highest one any node had announced before the read's invoke.
A `hw` line H says offsets [0, H) are committed, and committed stays
committed: the highest H any node wrote before the invoke is a fact about
the cluster when the read began, so a read that must reflect every write
committed before it (a linearizable one) needs a node at H or past it. A
node that answered below H answered from a state that may lack committed
writes, even where none of them touched the key read (no value-based
checker can see that: every value read was one a correct store could
return). A node restarted with a lower commit point that answers before it
learns the cluster's is this very case, so "announced" is the highest line
ever written, never a node's latest.

What is certain, and so no slack is allowed:
- Clocks: a line's `t` is CLOCK_MONOTONIC (docs/contracts.md), and so is
  the history's time (ns since run.json `start_monotonic_ns`): nodes run in
  network and mount namespaces of the same host, never in a time namespace,
  and the clock fault (nemesis/clock.py) fakes the wall clock alone
  (`FAKETIME_DONT_FAKE_MONOTONIC=1`). No fault shifts either clock.
- The invoke is recorded before the request leaves the harness and the
  completion after the answer came back (harness/run/clients.py), so a line
  written before the invoke's time was written before the node could have
  seen the read.
- The answering node's line must be written before its answer leaves, and
  its process says so: its `start` line's `hw_before_answers` (true). The
  bundled store's node writes a batch's event lines (its `hw` among them)
  before the replies of that batch go out (its server's ready handling:
  lines, then appends and acks, then applies and answers; its tests pin
  that order), and answers a read when its own barrier entry commits,
  which raises its `hw`. Before commit cbf6e05
  (2026-11-27) it wrote them after the answers: one correct run of then
  shows reads answered 0.1-2.7 ms before the `hw` line they rested on. So a
  read whose answering process does not say so is not judged (stats), and
  a run where none does is `unknown`; `assume_hw_before_answers` judges a
  saved run whose code is known to (bench/read_commit_point_hunt.py).
- Which process of the node answered: the one alive at some moment between
  invoke and completion (each `start` line begins one). Of those, the
  highest line it wrote by the completion counts: a node restarted in the
  read's window may have answered before it died. A restart before the
  invoke leaves only the new process, whose commit point starts over.
- `hw` lines of a process whose `start` line names another cluster (a node
  whose data dir was formatted for a foreign one) announce nothing about
  this one.

Which reads: those the run's workload judges as linearizable, by its data
type (`data`, companions by theirs): a register `read`, and a list-append
or rw-register transaction of exactly one read (`is_single_key_read`, the
store's get); never a multi-op transaction, nor a log workload's range read
(it promises order, not recency). Only under a consistency model that
binds real-time order (strict serializability, linearizability); under a
weaker one no read is judged. The answering node is the ok completion's
`node`; a read without one is not judged (counted in the stats). No built-in
system has a read option that its own linearizability verdict excuses:
the bundled store's get always takes its barrier (its `consistency` option
sets blind writes' acks only), and etcd's serializable reads are judged by
linearizability as any other (and etcd writes no `hw` lines).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checkers.datatypes import LISTS, REGISTER_TXNS, REGISTERS, is_single_key_read
from checkers.history import NEMESIS, Op, pair_ops
from checkers.verdict import Verdict, verdict
from nodes.events import HW, START

READ_BEHIND = "read-behind-commit-point"
MAX_ANOMALIES = 100
NO_HW_LINES = "no node wrote a commit-point (hw) line"
UNDECLARED = ("no node's start line says it writes its hw lines before its answers "
              "(hw_before_answers): a run recorded before nodes said so")


def linearizable_read(op: Op, data: str | None) -> bool:
    """Whether `op` (of a workload with data type `data`) is a read the
    workload judges as linearizable."""
    if data == REGISTERS:
        return op.f == "read"
    if data in (LISTS, REGISTER_TXNS):
        return op.f == "txn" and is_single_key_read(op.value)
    return False


def seconds(ns: int) -> float:
    """History time in seconds, to the microsecond (the anomaly is read by people)."""
    return round(ns / 1e9, 6)


def read_key(op: Op) -> Any:
    return op.value[0][1] if op.f == "txn" else op.key


@dataclass
class Process:
    """One run of a node's process: from its start line to the next one."""

    start: float                       # -inf: lines before any start line
    cluster: Any = None
    declared: bool = False             # its hw lines precede its answers
    times: list[int] = field(default_factory=list)
    highest: list[int] = field(default_factory=list)   # running max of its hw lines

    def known_by(self, t: int) -> int:
        i = bisect.bisect_right(self.times, t)
        return self.highest[i - 1] if i else 0


def processes(lines: list[dict[str, Any]], start_ns: int) -> list[Process]:
    """A node's processes, their `hw` lines on the history's clock."""
    out = [Process(float("-inf"))]
    for ev in sorted((e for e in lines if type(e.get("t")) is int), key=lambda e: e["t"]):
        t = ev["t"] - start_ns
        if ev.get("event") == START.name:
            out.append(Process(t, ev.get("cluster_id"), ev.get("hw_before_answers") is True))
        elif ev.get("event") == HW.name and type(ev.get("hw")) is int:
            p = out[-1]
            p.times.append(t)
            p.highest.append(max(ev["hw"], p.highest[-1] if p.highest else 0))
    return out


def run_cluster(by_node: Mapping[str, list[Process]]) -> Any:
    """The cluster id most nodes' first process names (None: no start line names one)."""
    firsts = Counter(ps[1].cluster for ps in by_node.values()
                     if len(ps) > 1 and ps[1].cluster is not None)
    return firsts.most_common(1)[0][0] if firsts else None


class Announced:
    """The highest commit point any node of the cluster had announced, by time."""

    def __init__(self, by_node: Mapping[str, list[Process]]) -> None:
        cluster = run_cluster(by_node)
        lines = sorted((t, hw, node) for node, ps in by_node.items() for p in ps
                       if cluster is None or p.cluster in (None, cluster)
                       for t, hw in zip(p.times, p.highest, strict=True))
        self.times = [t for t, _, _ in lines]
        self.top: list[tuple[int, str, int]] = []   # (hw, who first wrote it, when)
        best = (0, "", 0)
        for t, hw, node in lines:
            if hw > best[0]:
                best = (hw, node, t)
            self.top.append(best)

    def before(self, t: int) -> tuple[int, str, int]:
        i = bisect.bisect_left(self.times, t)
        return self.top[i - 1] if i else (0, "", 0)


def alive(procs: list[Process], invoke: int, end: int) -> list[Process]:
    """The node's processes alive at some moment between `invoke` and `end`:
    any of them may have answered."""
    starts = [p.start for p in procs] + [float("inf")]
    return [p for i, p in enumerate(procs) if p.start <= end and starts[i + 1] >= invoke]


def check(ops: list[Op], events: Mapping[str, list[dict[str, Any]]], start_ns: Any,
          data: str | None, companions: Mapping[str, str] | None = None, main: str = "",
          realtime: bool = True, assume_hw_before_answers: bool = False) -> Verdict:
    """`data`: the main workload's data type; `companions`: a companion
    workload's by its name (its ops carry it in `workload`).
    `assume_hw_before_answers`: judge processes whose start lines do not say
    so, as if they did (a saved run whose code is known to)."""
    if type(start_ns) is not int:
        return verdict("unknown", stats={"reason": "run.json has no start_monotonic_ns"})
    by_node = {node: processes(lines, start_ns) for node, lines in events.items()}
    nodes_with_hw = sorted(n for n, ps in by_node.items() if any(p.times for p in ps))
    if not nodes_with_hw:
        return verdict("unknown", stats={"reason": NO_HW_LINES})
    if assume_hw_before_answers:
        for ps in by_node.values():
            for p in ps:
                p.declared = True
    if not any(p.declared for ps in by_node.values() for p in ps):
        return verdict("unknown", stats={"reason": UNDECLARED})
    announced = Announced(by_node)
    wrote = {node for node, lines in events.items() if lines}
    types = dict(companions or {})
    anomalies: list[dict[str, Any]] = []
    not_judged: Counter[str] = Counter()
    judged = 0
    for invoke, done in pair_ops(op for op in ops if op.process != NEMESIS):
        # A companion's op by its own data type (none told: not judged).
        own = data if invoke.workload in (None, main) else types.get(invoke.workload)
        if done is None or done.type != "ok" or not linearizable_read(invoke, own):
            continue
        if not realtime:
            not_judged["model binds no real-time order"] += 1
            continue
        if done.node is None:
            not_judged["answering node unknown"] += 1
            continue
        if done.node not in wrote:
            not_judged["answering node wrote no event line"] += 1
            continue
        answering = alive(by_node[done.node], invoke.time, done.time)
        if not answering:
            not_judged["no process of the answering node alive during the read"] += 1
            continue
        if not all(p.declared for p in answering):
            not_judged["answering process does not say its hw lines precede its answers"] += 1
            continue
        judged += 1
        top, by, at = announced.before(invoke.time)
        mine = max((p.known_by(done.time) for p in answering), default=0)
        if mine < top:
            anomalies.append({
                "type": READ_BEHIND, "process": invoke.process, "key": read_key(invoke),
                "f": invoke.f, "index": invoke.index, "invoke_s": seconds(invoke.time),
                "complete_s": seconds(done.time), "node": done.node, "node_hw": mine,
                "announced_hw": top, "announced_by": by, "announced_s": seconds(at),
                **({"workload": invoke.workload} if invoke.workload else {})})
    stats: dict[str, Any] = {"reads_judged": judged, "reads_behind": len(anomalies),
                             "nodes_with_hw_lines": nodes_with_hw}
    if not_judged:
        stats["reads_not_judged"] = dict(not_judged)
    return verdict(not anomalies, cap(anomalies), stats)


def cap(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first MAX_ANOMALIES, then one line counting the rest (as divergence's)."""
    if len(anomalies) <= MAX_ANOMALIES:
        return anomalies
    return [*anomalies[:MAX_ANOMALIES],
            {"type": "truncated-list", "rule": READ_BEHIND,
             "omitted": len(anomalies) - MAX_ANOMALIES}]
