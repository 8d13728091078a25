"""Node logs and node exits: what a node says when it trips over itself.

Two rules, each its own checker:
- `node-logs`: a line of a node's stdout or stderr that matches one of the
  failure patterns its system declares (`nodes.db.NodeLogPatterns`, or the
  generic Python and Go ones), and none of the benign ones, is an anomaly
  quoting the line (node, file, line number).
- `node-exits`: a node process that exited though no kill of the harness hit
  it (the nemesis' kills, power cuts and restarts, and the teardown, all go
  through the harness and are never recorded) is an anomaly with its time and
  exit status. Faults whose point is to make a node leave (a voter removed, a
  node formatted for another cluster: a member may shut itself down) excuse
  the exits of the nodes they name while they are in force and for a grace
  period after; for a node their heal failed to bring back, until a later
  heal does or the run ends. So do faults that take a node's durable state
  (`FaultOp.loses_state`: a truncated log), after which a correct node may
  refuse to go on.

Pure: the lines, exit records and history come from the run dir's loader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checkers.faults import DEGRADED, FAULT_OPS, OTHER_CLUSTER, VOTERS, FaultOp
from checkers.history import NEMESIS, Op
from checkers.impairment import named_nodes
from checkers.verdict import Verdict, verdict

# Matches are quoted up to this many; the rest are counted.
MAX_QUOTED = 50
MAX_QUOTE_CHARS = 500
# A member that leaves may take this long after its fault's heal to be gone.
LEAVE_GRACE_NS = 5_000_000_000
LEAVING_EFFECTS = (VOTERS, OTHER_CLUSTER, DEGRADED)


def leaves(row: FaultOp) -> bool:
    """A fault after which a correct node may stop: it makes nodes leave, or
    takes state a node's votes and acknowledgements rest on (a node that finds
    its log shorter than what it acknowledged must not go on: etcd panics,
    asking whether its log was "corrupted, truncated, or lost")."""
    return row.effect in LEAVING_EFFECTS or row.loses_state


def compile_patterns(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """One regex matching any of `patterns` (None for none); ValueError for a bad one."""
    if not patterns:
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error as e:
        raise ValueError(f"a node log pattern does not compile: {e}") from None


def check_logs(lines: Iterable[tuple[str, str, int, str]], failure: Sequence[str],
               benign: Sequence[str] = ()) -> Verdict:
    """Judge (node, file, line number, text) lines against the patterns."""
    failing = compile_patterns(failure)
    if failing is None:
        return verdict("unknown", stats={"reason": "the system declares no failure patterns"})
    excused = compile_patterns(benign)
    anomalies: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    scanned = benign_count = 0
    for node, file, number, text in lines:
        scanned += 1
        if not failing.search(text):
            continue
        if excused is not None and excused.search(text):
            benign_count += 1
            continue
        counts[node] = counts.get(node, 0) + 1
        if len(anomalies) < MAX_QUOTED:
            anomalies.append({"type": "node-log-failure", "node": node, "file": file,
                              "line": number, "text": text[:MAX_QUOTE_CHARS]})
    stats: dict[str, Any] = {"lines": scanned, "matches_by_node": counts,
                             "benign_matches": benign_count}
    if not scanned:
        return verdict("unknown", stats={**stats, "reason": "no node log lines in the run"})
    return verdict(not counts, anomalies, stats)


def leaving_windows(ops: Iterable[Op]) -> list[tuple[int, int | None, frozenset[str] | None]]:
    """(start, end, nodes) of each fault that makes nodes leave: history times
    (end None: never healed) and the nodes it names (None: it names none, so
    any node may leave)."""
    heals: dict[str, str] = {}
    for f in FAULT_OPS.values():
        if leaves(f):
            heals[f.name] = f.heal_f
    windows: list[tuple[int, int | None, frozenset[str] | None]] = []
    open_since: dict[str, tuple[int, set[str]]] = {}
    stranded: dict[str, set[str]] = {}
    for op in ops:
        if op.process != NEMESIS:
            continue
        if op.f in heals:
            start, nodes = open_since.setdefault(op.f, (op.time, set()))
            nodes.update(_named(op.value))
        for fault, heal in heals.items():
            if op.f == heal and op.type != "invoke" and fault in open_since:
                start, nodes = open_since.pop(fault)
                windows.append((start, op.time + LEAVE_GRACE_NS, frozenset(nodes) or None))
                # A node a heal failed to bring back (a member etcd refused to
                # add again) is still removed, and leaves at each start: its
                # fault stays in force for it until a heal names it back.
                healed = set(_named(op.value))
                still_out = {n for n in nodes if n in _failed(op.value)
                             or (n in stranded.get(fault, ()) and n not in healed)}
                if still_out:
                    open_since[fault] = (start, still_out)
                    stranded[fault] = still_out
                else:
                    stranded.pop(fault, None)
    windows.extend((start, None, frozenset(nodes) or None)
                   for start, nodes in open_since.values())
    return windows


def _failed(value: Any) -> list[str]:
    """The nodes a heal says it failed for (`{"failed": {node: error}}`)."""
    failed = value.get("failed") if isinstance(value, dict) else None
    return [n for n in failed if isinstance(n, str)] if isinstance(failed, dict) else []


def _named(value: Any) -> list[str]:
    return named_nodes(value) or []


def _excused(at: int, node: Any, windows: Sequence[tuple[int, int | None, frozenset[str] | None]]
             ) -> bool:
    return any(start <= at and (end is None or at <= end) and (nodes is None or node in nodes)
               for start, end, nodes in windows)


def left_down(down: Iterable[str], exits: Sequence[Mapping[str, Any]], ops: Iterable[Op],
              start_monotonic_ns: int | None) -> dict[str, str]:
    """Of the nodes `down` at the end (not running when the harness read their
    state), those a fault left so, with why: a fault that makes nodes leave
    still in force for the node at the end (a member every heal failed to add
    back), or the node's last exit one such a fault excused (it stopped after
    its state was taken, and stayed stopped). A node down for no fault is
    left out: its part stays unknown, and node-exits judges its exit."""
    windows = leaving_windows(ops)
    out: dict[str, str] = {}
    for node in down:
        if any(end is None and (nodes is None or node in nodes) for _, end, nodes in windows):
            out[node] = ("a fault that makes nodes leave was still in force for it at the end "
                         "(never brought back)")
            continue
        mine = [e for e in exits if e.get("node") == node]
        if not mine or start_monotonic_ns is None:
            continue
        last = max(mine, key=lambda e: int(e.get("monotonic_ns", 0)))
        at = int(last.get("monotonic_ns", 0)) - start_monotonic_ns
        if _excused(at, node, windows):
            out[node] = (f"its process exited at {at / 1e9:.3f}s, during a fault that makes "
                         f"nodes leave or takes their state, and was not running at the end")
    return out


def check_exits(exits: Sequence[Mapping[str, Any]], ops: Iterable[Op],
                start_monotonic_ns: int | None) -> Verdict:
    """Judge the recorded exits of node processes no kill of the harness hit."""
    if start_monotonic_ns is None:
        return verdict("unknown", stats={"reason": "run.json has no start_monotonic_ns"})
    windows = leaving_windows(ops)
    anomalies, excused = [], []
    for record in exits:
        at = int(record.get("monotonic_ns", 0)) - start_monotonic_ns
        found = {"node": record.get("node"), "time": at, "status": record.get("status"),
                 "signal": record.get("signal")}
        if _excused(at, found["node"], windows):
            excused.append(found)
            continue
        anomalies.append({"type": "unexpected-exit", **found})
    return verdict(not anomalies, anomalies,
                   {"exits": len(exits), "excused_while_leaving": excused})
