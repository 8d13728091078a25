"""The final state of every node: each node's applied state, read from that
node alone after the run (`nodes.db.NodeState`), compared with the other
nodes' and with the history.

Rules:
- `divergent-state`: two nodes at the same applied position (log index,
  store revision) hold different states. Replicas that applied the same
  committed prefix hold the same state; nodes at different positions are
  not compared this way (one may simply be behind).
- `divergent-list`: for lists and logs, which only grow, two nodes' values
  for one key where neither is a prefix of the other, at any positions.
- Against the history, only once every node answered at one position
  while a leader was known (the harness waits for that, bounded): each
  node has then applied everything the cluster committed. (Or, with some
  node silent, a majority did so.) Each workload's keys (those its ops
  name) against its own ops, by its data type (`companions`).
  - registers (and register txns): `stale-value` - the node holds a value
    that an acknowledged write, invoked after that value's write had been
    acknowledged, must have overwritten; `unwritten-value` - a value no
    write (ok or indeterminate) wrote. A write may be final if it is ok or
    indeterminate (an indeterminate write may take effect at any time, so it
    is never excluded) and no ok write began after it was acknowledged; the
    absent value may be final only if no write was acknowledged. With a
    consistency model weaker than strict serializability the real-time part
    is left out (only `unwritten-value` is judged).
  - lists: `lost-append` - an acknowledged append missing from the key's
    list; `unwritten-element` - an element no append wrote;
    `failed-append-applied` - the element of an append that failed
    (definitely not applied); `duplicate-element`.
  - logs: `lost-append` - an acknowledged append not at the offset it was
    acknowledged at.
  Acks below quorum count as indeterminate (`checkers.acks`).

A node that did not answer (silent to the end) leaves its part unknown:
the others are still compared with each other and, if a majority answered
at one position with a leader known, judged against the history; without an
anomaly the verdict is then `unknown`, its reason naming the silent nodes
(each: running, or its process gone) and those judged valid. Never an
anomaly: a live node that does not answer a local read disagrees with no
one, and its liveness is availability's and convergence's to judge. Unless a
fault left the node down (`left_down`: not running at the end, and a fault
that makes nodes leave still in force for it, or its exit excused by one, as
node-exits reads them): nothing was expected of it, so it is left out and
named in `stats.left_down_by_fault`, the verdict that of the others. Says
`unknown` too when fewer than two nodes answered and no node could be judged
against the history, or when nodes a fault left down leave fewer than a
majority answering. A companion whose data type has no rules here is left
out, named in `stats.workloads_not_judged`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from checkers.acks import relaxed
from checkers.datatypes import LISTS, LOGS, REGISTER_TXNS, REGISTERS
from checkers.durability import freeze
from checkers.history import Op, client_ops, pair_ops
from checkers.verdict import Verdict, verdict
from checkers.writes import Write, norm_key, owners, writes_of

# Anomalies kept per kind (the rest are counted): one kind, a divergence
# repeated on every key, must not hide the others.
MAX_PER_KIND = 50
JUDGED = (REGISTERS, REGISTER_TXNS, LISTS, LOGS)
ABSENT = object()


def log_acks(ops: Iterable[Op]) -> list[tuple[str, int, Any, int]]:
    """(log, offset, value, invoke index) of every quorum-acked log append."""
    out = []
    for inv, done in pair_ops(client_ops(ops)):
        if inv.f != "append" or done is None or done.type != "ok" or relaxed(done):
            continue
        v = done.value
        if isinstance(v, list | tuple) and len(v) == 3 and type(v[2]) is int:
            out.append((str(v[0]), v[2], v[1], inv.index))
    return out


def _as_map(pairs: Any) -> dict[str | None, Any]:
    out: dict[str | None, Any] = {}
    for pair in pairs or []:
        if isinstance(pair, list | tuple) and len(pair) == 2:
            out[norm_key(pair[0])] = pair[1]
    return out


def check(states: Mapping[str, Mapping[str, Any] | None], ops: list[Op], data: str | None,
          realtime: bool = True, leader_known: bool = True,
          companions: Mapping[str, str] | None = None, main: str = "",
          down: Collection[str] | None = None,
          left_down: Mapping[str, str] | None = None) -> Verdict:
    """Judge the nodes' final applied states (node -> state, None: it did not
    answer). `leader_known`: a leader was known when they were read (without
    one, nodes that all restarted may not yet have applied what was committed).
    `companions`: the run's other workloads (name -> data type), whose keys
    (those their ops name) are judged by their data type's rules against their
    own ops; every other key and untagged op is the main workload's (`main`).
    `down`: the silent nodes whose process was not running (None: not
    recorded); `left_down`: those of them a fault left so, with why."""
    if data not in JUDGED:
        return verdict("unknown", stats={"reason": f"no node-state rules for data {data!r}"})
    # A companion of a data type without rules here is left out (its keys with it).
    unjudged = {w: f"no node-state rules for data {d!r}" for w, d in (companions or {}).items()
                if w != main and d not in JUDGED}
    companions = {w: d for w, d in (companions or {}).items() if w != main and d in JUDGED}
    data_of = {main: data, **companions}
    # Every workload's ops name their keys: a companion's keys not judged
    # here (not read from the nodes) are left out, not taken for the main's.
    owner = owners(ops, main)
    answered = {n: s for n, s in states.items() if s is not None}
    silent = sorted(n for n, s in states.items() if s is None)
    # workload -> node -> its keys (a log workload: its logs).
    maps = {w: {n: _owned(s, w, d, owner, main) for n, s in answered.items()}
            for w, d in data_of.items()}
    positions = {n: s.get("position") for n, s in answered.items()}
    stats: dict[str, Any] = {"nodes": len(states), "answered": sorted(answered),
                             "silent": silent, "positions": positions}
    if unjudged:
        stats["workloads_not_judged"] = unjudged
    excused = {n: why for n, why in (left_down or {}).items() if n in silent}
    if excused:
        stats["left_down_by_fault"] = excused
    anomalies: list[dict[str, Any]] = []
    anomalies += _same_position(answered, maps, positions)
    for w, d in data_of.items():
        if d in (LISTS, LOGS):
            anomalies += _tagged(_prefixes(maps[w]), w, companions)
    # With a node silent, the others are judged if a majority answered at one
    # position with a leader known: what was committed is on a majority and,
    # the harness having waited its full time for the silent one, applied.
    majority = 2 * len(answered) > len(states)
    agreed = (len(answered) >= 1 and len(set(positions.values())) == 1 and leader_known
              and (not silent or majority))
    if agreed:
        acknowledged = {}
        for w, d in data_of.items():
            theirs = [op for op in ops if (op.workload or main) == w]
            found, acknowledged[w] = _against_history(maps[w], theirs, d, realtime)
            anomalies += _tagged(found, w, companions)
        stats["acknowledged_writes"] = acknowledged[main]
        if companions:
            stats["acknowledged_writes_by_workload"] = acknowledged
        stats["judged_against_history"] = True
    else:
        stats["judged_against_history"] = False
        stats["not_judged_because"] = (
            "no node answered" if not answered else
            "fewer than a majority of the nodes answered" if silent and not majority else
            "no leader was known when the nodes were read" if not leader_known else
            "the nodes ended at different positions")
    stats["anomaly_count"] = len(anomalies)
    if anomalies:
        kept: dict[str, int] = defaultdict(int)
        shown = []
        for a in anomalies:
            kept[a["type"]] += 1
            if kept[a["type"]] <= MAX_PER_KIND:
                shown.append(a)
        stats["anomalies_by_kind"] = dict(kept)
        return verdict(False, shown, stats)
    unexplained = [n for n in silent if n not in excused]
    if unexplained:
        return _silent_unknown(stats, unexplained, sorted(answered) if agreed else [], down)
    if silent and not agreed:
        return verdict("unknown", stats={**stats, "reason": (
            f"no node judged against the history ({stats['not_judged_because']}); "
            f"{', '.join(silent)} left down by a fault")})
    if not agreed and len(answered) < 2:
        return verdict("unknown", stats={**stats, "reason": (
            f"{len(answered)} of {len(states)} node(s) answered: nothing to compare")})
    return verdict(True, [], stats)


def _silent_unknown(stats: dict[str, Any], silent: list[str], judged: list[str],
                    down: Collection[str] | None) -> Verdict:
    """The one rule for a part with nothing to judge (as linearizability's
    keys, availability's limits): each silent node's part is unknown, so the
    verdict is, saying which nodes were judged and found valid."""
    stats["unknown_nodes"] = {n: _why_silent(n, down) for n in silent}
    stats["judged_valid"] = judged
    them = ", ".join(silent)
    rest = (f"{', '.join(judged)} judged against the history: valid" if judged else
            f"no node judged against the history ({stats['not_judged_because']})")
    return verdict("unknown", stats={**stats, "reason": (
        f"{len(silent)} of {stats['nodes']} node(s) did not answer ({them}): "
        f"{'its' if len(silent) == 1 else 'their'} state unknown; {rest}")})


def _why_silent(node: str, down: Collection[str] | None) -> str:
    if down is None:
        return "did not answer: no applied state read"
    if node in down:
        return ("did not answer: its process was not running at the end, and no fault "
                "accounts for that (node-exits judges its exit)")
    return "did not answer though its process was running: no applied state read"


def _owned(state: Mapping[str, Any], workload: str, data: str, owner: Mapping[str | None, str],
           main: str) -> dict[str | None, Any]:
    """A node's keys of `workload` (all its logs for a log workload)."""
    if data == LOGS:
        return _as_map(state.get("logs"))
    return {k: v for k, v in _as_map(state.get("keys")).items()
            if owner.get(k, main) == workload}


def _tagged(anomalies: list[dict[str, Any]], workload: str,
            companions: Mapping[str, str]) -> list[dict[str, Any]]:
    """A companion's anomalies name their workload (the main workload's need not)."""
    if workload not in companions:
        return anomalies
    return [{**a, "workload": workload} for a in anomalies]


def _against_history(maps: Mapping[str, dict[str | None, Any]], ops: list[Op], data: str,
                     realtime: bool) -> tuple[list[dict[str, Any]], int]:
    """One workload's keys on every node against its ops: the anomalies, and
    how many of its writes were acknowledged."""
    if data == LOGS:
        acks = log_acks(ops)
        return _logs_against(maps, acks), len(acks)
    writes = writes_of(pair_ops(client_ops(ops)), data)
    acknowledged = sum(w.status == "ok" for w in writes)
    if data == LISTS:
        return _lists_against(maps, writes), acknowledged
    return _registers_against(maps, writes, realtime), acknowledged


def _same_position(answered: Mapping[str, Mapping[str, Any]],
                   maps: Mapping[str, Mapping[str, dict[str | None, Any]]],
                   positions: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Nodes at one position that differ, key by key in every workload's keys
    (workload -> node -> keys), else by their digests."""
    by_position: dict[Any, list[str]] = defaultdict(list)
    for n in sorted(answered):
        by_position[positions[n]].append(n)
    out = []
    for position, nodes in by_position.items():
        first = nodes[0]
        for other in nodes[1:]:
            found = 0
            for by_node in maps.values():
                a, b = by_node[first], by_node[other]
                differing = [k for k in sorted(set(a) | set(b), key=repr)
                             if freeze(a.get(k, ABSENT)) != freeze(b.get(k, ABSENT))]
                found += len(differing)
                for k in differing:
                    out.append({"type": "divergent-state", "position": position, "key": k,
                                "nodes": [first, other],
                                "values": {first: a.get(k), other: b.get(k)}})
            if not found and answered[first].get("digest") != answered[other].get("digest"):
                out.append({"type": "divergent-state", "position": position, "key": None,
                            "nodes": [first, other], "detail": "same keys, different digests "
                            "(the difference is outside the workloads' keys)"})
    return out


def _prefixes(maps: Mapping[str, dict[str | None, Any]]) -> list[dict[str, Any]]:
    out = []
    nodes = sorted(maps)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            for k in sorted(set(maps[a]) & set(maps[b]), key=repr):
                la, lb = maps[a][k], maps[b][k]
                if not (isinstance(la, list) and isinstance(lb, list)):
                    continue
                short, long_ = (la, lb) if len(la) <= len(lb) else (lb, la)
                if freeze(long_[:len(short)]) != freeze(short):
                    cut = next(i for i, (x, y) in enumerate(zip(la, lb, strict=False))
                               if freeze(x) != freeze(y))
                    out.append({"type": "divergent-list", "key": k, "nodes": [a, b],
                                "index": cut, "values": {a: la[cut], b: lb[cut]}})
    return out


def _registers_against(maps: Mapping[str, dict[str | None, Any]], writes: list[Write],
                       realtime: bool) -> list[dict[str, Any]]:
    by_key: dict[str | None, list[Write]] = defaultdict(list)
    for w in writes:
        by_key[norm_key(w.key)].append(w)
    out = []
    for key, ws in by_key.items():
        effective = [w for w in ws if w.status in ("ok", "info")]
        latest_invoke_of_ok = max((w.invoked for w in ws if w.status == "ok"), default=None)
        finals = {freeze(w.value) for w in effective
                  if not realtime or w.acked is None or latest_invoke_of_ok is None
                  or latest_invoke_of_ok <= w.acked}
        if latest_invoke_of_ok is None:
            finals.add(freeze(None))
        # Which write a value came from: one that may have taken effect, if any did.
        written: dict[Any, Write] = {}
        for w in ws:
            if written.get(freeze(w.value)) is None or written[freeze(w.value)].status == "fail":
                written[freeze(w.value)] = w
        for node in sorted(maps):
            value = maps[node].get(key)
            if freeze(value) in finals:
                continue
            source = written.get(freeze(value))
            later = None if source is None or source.acked is None else min(
                (w for w in ws if w.status == "ok" and w.invoked > source.acked),
                key=lambda w: w.invoked, default=None)
            if source is None and value is None:
                # Absent, though a write was acknowledged.
                first = min((w for w in ws if w.status == "ok"), key=lambda w: w.invoked)
                out.append({"type": "stale-value", "node": node, "key": key, "value": None,
                            "written_by": None, "overwritten_by": first.index,
                            "overwritten_with": first.value})
            elif source is not None and later is not None:
                out.append({"type": "stale-value", "node": node, "key": key, "value": value,
                            "written_by": source.index, "overwritten_by": later.index,
                            "overwritten_with": later.value})
            else:
                out.append({"type": "unwritten-value", "node": node, "key": key,
                            "value": value,
                            **({"failed_write": source.index} if source is not None else {})})
    return out


def _lists_against(maps: Mapping[str, dict[str | None, Any]],
                   writes: list[Write]) -> list[dict[str, Any]]:
    by_key: dict[str | None, list[Write]] = defaultdict(list)
    for w in writes:
        by_key[norm_key(w.key)].append(w)
    out = []
    for node in sorted(maps):
        for key in sorted(set(by_key) | set(maps[node]), key=repr):
            held = maps[node].get(key) or []
            if not isinstance(held, list):
                out.append({"type": "unwritten-value", "node": node, "key": key, "value": held})
                continue
            present = [freeze(x) for x in held]
            ws = {freeze(w.value): w for w in by_key.get(key, [])}
            seen: set[Any] = set()
            for i, x in enumerate(present):
                if x in seen:
                    out.append({"type": "duplicate-element", "node": node, "key": key,
                                "index": i, "value": held[i]})
                seen.add(x)
                writer = ws.get(x)
                if writer is None:
                    out.append({"type": "unwritten-element", "node": node, "key": key,
                                "index": i, "value": held[i]})
                elif writer.status == "fail":
                    out.append({"type": "failed-append-applied", "node": node, "key": key,
                                "index": i, "value": held[i], "append": writer.index})
            for w in by_key.get(key, []):
                if w.status == "ok" and freeze(w.value) not in seen:
                    out.append({"type": "lost-append", "node": node, "key": key,
                                "value": w.value, "append": w.index})
    return out


def _logs_against(maps: Mapping[str, dict[str | None, Any]],
                  acks: list[tuple[str, int, Any, int]]) -> list[dict[str, Any]]:
    out = []
    for node in sorted(maps):
        for log, offset, value, index in acks:
            entries = maps[node].get(log)
            held = entries[offset] if isinstance(entries, list) and offset < len(entries) \
                else ABSENT
            if held is ABSENT or freeze(held) != freeze(value):
                out.append({"type": "lost-append", "node": node, "key": log, "offset": offset,
                            "value": value, "held": None if held is ABSENT else held,
                            "append": index})
    return out
