"""Durability: lost, phantom and aborted writes, across the history and the logs.

Values written are unique per workload in a run, so every value read or
committed names the one op of its workload that wrote it: a committed entry
is matched to a write on (workload, key, value), the workload of the entry's
key being the one whose ops name it (`checkers.writes.owners`); a run's
workloads may write the same values. In a run composing workloads the main
workload's ops are judged (`companions`). The rules:

- `lost-write`: an acknowledged write/cas/append/txn-append that is not in the
  final committed state: the committed entries of the log dumps, and (for
  lists and logs, whose reads show every value) the last read that covers it.
- `phantom-read`: a value read that no op ever tried to write (to that key).
- `aborted-read`: a value read whose write failed definitively.
- `failed-write-committed`: a definitively failed write found committed. A
  failed cas is not judged: its command is logged even when its compare fails.
- `duplicate-append`: one appended value committed, or read, more than once.
- log only: `offset-changed` (a value seen at two offsets), `offset-conflict`
  (two values at one offset), `read-out-of-order` (offsets not increasing within
  a read), `read-went-backwards` (a process reads less of a log than it saw).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from checkers.datatypes import LISTS, LOGS, REGISTERS
from checkers.history import Op, client_ops, collector_paused, pair_ops
from checkers.verdict import Verdict, verdict
from checkers.writes import Write, norm_key, owners, writes_of

# The data types (checkers.datatypes) these rules read; the run's workload
# says which its history is (the checker's `data` option).
DATA = (REGISTERS, LISTS, LOGS)
# Types whose reads do not show every value written: only the nodes'
# committed logs show whether an acknowledged write survived.
JUDGED_BY_LOG = (REGISTERS,)
MAX_ANOMALIES = 200
# How many offsets one log read can vouch for; bounds work on hostile counts.
MAX_READ_COVER = 100_000
_ATOMS = frozenset({int, str, float, bool, bytes, type(None)})


@dataclass(slots=True)
class Observation:
    value: Any
    key: Any
    op: Op                # the ok completion that showed it


@dataclass(frozen=True, slots=True)
class Committed:
    """One committed sighting of a value in the dumps."""

    key: str | None       # `norm_key` of the entry's key (None: it names none)
    offset: int | None
    kind: str | None      # the command that carried it: put, cas, append, txn


# (workload, frozen value) -> where it was committed.
CommittedIndex = dict[tuple[str, Any], list[Committed]]


@collector_paused()   # millions of small acyclic objects: its passes free nothing
def check(history: list[Op], dumps: dict[str, dict] | None, data: str | None,
          companions: Mapping[str, str] | None = None, main: str = "") -> Verdict:
    """`data`: what the main workload's ops act on (checkers.datatypes).
    `companions`: the run's other workloads (name -> data type); their ops
    tell which committed entries are theirs, and only the main workload's
    (`main`; an untagged op is its) are judged."""
    if data not in DATA:
        return verdict("unknown", [], {"error": f"no durability rules for data type "
                                                f"{data!r}; known: {list(DATA)}"})
    owner = owners(history, main) if companions else {}
    if companions:
        history = [op for op in history if (op.workload or main) == main]
    committed = committed_values(dumps, owner, main) if dumps else None
    pairs = pair_ops(client_ops(history))
    writes = writes_of(pairs, data)
    by_value = {freeze(w.value): w for w in writes}
    observations = list(_observations(pairs, data))

    anomalies = _bad_reads(observations, by_value)
    stats: dict[str, Any] = {
        "writes": {s: sum(1 for w in writes if w.status == s) for s in ("ok", "fail", "info")},
        "values_read": len(observations),
    }
    evidence = []
    if committed is not None:
        evidence.append("dumps")
        anomalies += _against_dumps(writes, committed, main, data, stats)
    if data == LISTS:
        evidence.append("final-reads")
        anomalies += _list_final_reads(pairs, writes)
    if data == LOGS:
        evidence.append("final-reads")
        anomalies += _log_rules(pairs, writes)
    stats["lost_write_evidence"] = evidence
    relaxed_acks = _relaxed_acks(writes, committed, main)
    if relaxed_acks:
        stats["relaxed_acks"] = relaxed_acks
        # One figure for the report's summary line: the losses those levels
        # allowed (counted, never an anomaly); None when nothing tells.
        lost = [row["lost"] for row in relaxed_acks.values()]
        stats["relaxed_acks_lost"] = None if None in lost else sum(lost)

    if len(anomalies) > MAX_ANOMALIES:
        stats["anomalies_omitted"] = len(anomalies) - MAX_ANOMALIES
        anomalies = anomalies[:MAX_ANOMALIES]
    if anomalies:
        return verdict(False, anomalies, stats)
    # A register's reads show only its latest value: without dumps an
    # acknowledged write that vanished leaves no trace here.
    unjudged = not evidence and stats["writes"]["ok"] > 0
    if unjudged:
        stats["reason"] = ("no node log dumps: reads alone cannot show an acknowledged "
                           "write that vanished")
        return verdict("unknown", [], stats)
    return verdict(True, [], stats)


def _relaxed_acks(writes: list[Write], committed: CommittedIndex | None,
                  main: str) -> dict[str, dict]:
    """Per level below quorum: writes acked, and how many of them the committed
    logs lack (the losses that level allows; None without dumps to tell)."""
    out: dict[str, dict] = {}
    for w in writes:
        if w.level is None:
            continue
        row = out.setdefault(w.level, {"acked": 0, "lost": 0 if committed is not None else None})
        row["acked"] += 1
        if committed is not None and not _sightings(w, committed, main):
            row["lost"] += 1
    return out


def freeze(v: Any) -> Any:
    """A hashable stand-in for a msgpack value (lists and maps are not hashable)."""
    if type(v) in _ATOMS:  # the common case, by far: unique integers
        return v
    if isinstance(v, list | tuple):
        return tuple(freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted(((freeze(k), freeze(x)) for k, x in v.items()), key=repr))
    return v


def _op_ref(op: Op | None) -> dict[str, Any] | None:
    if op is None:
        return None
    return {"index": op.index, "process": op.process, "type": op.type, "f": op.f,
            "value": op.value, "time": op.time}


# --- what was written and what was read --------------------------------------


def _observations(pairs: list[tuple[Op, Op | None]], data: str) -> Iterator[Observation]:
    for inv, done in pairs:
        if done is None or done.type != "ok":
            continue
        v = done.value
        if data == REGISTERS:
            if inv.f == "read" and v is not None:
                yield Observation(v, inv.key, done)
            elif inv.f == "cas" and _pair(v) and v[0] is not None:
                yield Observation(v[0], inv.key, done)
        elif data == LISTS and inv.f == "txn" and isinstance(v, list):
            for mop in v:
                if _triple(mop) and mop[0] == "r" and isinstance(mop[2], list):
                    for x in mop[2]:
                        yield Observation(x, mop[1], done)
        elif data == LOGS and inv.f == "read":
            for _, x in _log_entries(v):
                yield Observation(x, v[0], done)


def _pair(v: Any) -> bool:
    return isinstance(v, list | tuple) and len(v) >= 2


def _triple(v: Any) -> bool:
    return isinstance(v, list | tuple) and len(v) == 3


def _log_entries(v: Any) -> list[tuple[int, Any]]:
    """The [offset, value] pairs of a log read's result, malformed ones skipped."""
    if not (isinstance(v, list | tuple) and len(v) == 3 and isinstance(v[2], list | tuple)):
        return []
    return [(e[0], e[1]) for e in v[2]
            if isinstance(e, list | tuple) and len(e) == 2 and type(e[0]) is int]


# --- reads of values that were never (successfully) written ------------------


def _bad_reads(observations: list[Observation], by_value: dict[Any, Write]
               ) -> list[dict[str, Any]]:
    anomalies = []
    reported: set[Any] = set()
    for ob in observations:
        fv = freeze(ob.value)
        if fv in reported:
            continue
        w = by_value.get(fv)
        # Values are unique per run: one read under another key than its
        # write's was never written there.
        wrong_key = w is not None and freeze(w.key) != freeze(ob.key)
        if w is None or wrong_key:
            reported.add(fv)
            anomalies.append({
                "type": "phantom-read", "value": ob.value, "key": ob.key,
                "why": "written-to-other-key" if wrong_key else "never-written",
                "read": _op_ref(ob.op), "writer": _op_ref(w.invoke) if w else None})
        elif w.status == "fail":
            reported.add(fv)
            anomalies.append({
                "type": "aborted-read", "value": ob.value, "key": ob.key,
                "read": _op_ref(ob.op), "write": _op_ref(w.invoke),
                "write_completion": _op_ref(w.completion)})
    return anomalies


# --- the committed entries of the dumps --------------------------------------


def committed_values(dumps: dict[str, dict], owner: Mapping[str | None, str] | None = None,
                     main: str = "") -> CommittedIndex:
    """Each value in a committed command, by (workload, value): where it was
    committed. An entry's workload is the one whose ops name its key
    (`owner`); a key no op names (the keyless register's name in the store)
    is the main workload's."""
    owner = owner or {}
    out: CommittedIndex = defaultdict(list)
    for dump in dumps.values():
        for e in dump.get("entries") or []:
            if not (isinstance(e, dict) and e.get("committed") is True):
                continue
            payload = e.get("payload")
            if not isinstance(payload, dict):
                continue
            for key, value in _payload_values(payload):
                k = norm_key(key)
                out[(owner.get(k, main), freeze(value))].append(
                    Committed(k, e.get("offset"), payload.get("op")))
    return out


def _payload_values(payload: dict) -> Iterator[tuple[Any, Any]]:
    """(key, value) of each value a committed command writes."""
    op = payload.get("op")
    if op in ("put", "cas", "append") and "value" in payload:
        yield (payload.get("log") if op == "append" else payload.get("key")), payload["value"]
    elif op == "txn" and isinstance(payload.get("ops"), list):
        for mop in payload["ops"]:
            if _triple(mop) and mop[0] == "append":
                yield mop[1], mop[2]


def _sightings(w: Write, committed: CommittedIndex, main: str) -> list[Committed]:
    """Where `w`'s value was committed under its key, in its workload (a
    keyless write, or an entry naming no key, matches on the value)."""
    key = norm_key(w.key)
    return [c for c in committed.get((main, freeze(w.value)), ())
            if key is None or c.key is None or c.key == key]


def _offsets(sightings: list[Committed]) -> list[int | None]:
    return sorted({c.offset for c in sightings}, key=lambda o: (o is None, o or 0))


def _against_dumps(writes: list[Write], committed: CommittedIndex, main: str, data: str,
                   stats: dict[str, Any]) -> list[dict[str, Any]]:
    anomalies = []
    found = {id(w): _sightings(w, committed, main) for w in writes}
    for w in writes:
        seen = found[id(w)]
        if w.status == "ok" and not seen:
            anomalies.append({"type": "lost-write", "value": w.value, "key": w.key,
                              "evidence": "dumps", "write": _op_ref(w.invoke),
                              "ack": _op_ref(w.completion)})
        elif w.status == "fail" and seen and any(c.kind != "cas" for c in seen):
            anomalies.append({"type": "failed-write-committed", "value": w.value,
                              "key": w.key, "offsets": _offsets(seen),
                              "write": _op_ref(w.invoke), "fail": _op_ref(w.completion)})
    ours = {fv: cs for (workload, fv), cs in committed.items() if workload == main}
    if data in (LISTS, LOGS):
        for fv, cs in ours.items():
            if len({c.offset for c in cs}) > 1 and cs[-1].kind in ("append", "txn"):
                anomalies.append({"type": "duplicate-append", "value": fv,
                                  "evidence": "dumps", "offsets": _offsets(cs)})
    info = [w for w in writes if w.status == "info"]
    stats["dumps"] = {
        "committed_values": len(ours),
        "ok_writes_committed": sum(1 for w in writes if w.status == "ok" and found[id(w)]),
        "info_writes_committed": sum(1 for w in info if found[id(w)]),
        "info_writes_absent": sum(1 for w in info if not found[id(w)]),
    }
    return anomalies


# --- list-append: the last read of each key ----------------------------------


def _list_final_reads(pairs: list[tuple[Op, Op | None]],
                      writes: list[Write]) -> list[dict[str, Any]]:
    last_read: dict[Any, tuple[Op, Op, list]] = {}
    anomalies = []
    for inv, done in pairs:
        if done is None or done.type != "ok" or not isinstance(done.value, list):
            continue
        for mop in done.value:
            if _triple(mop) and mop[0] == "r" and isinstance(mop[2], list):
                last_read[freeze(mop[1])] = (inv, done, mop[2])
                dupes = _repeated(mop[2])
                if dupes:
                    anomalies.append({"type": "duplicate-append", "key": mop[1],
                                      "values": dupes, "evidence": "read",
                                      "read": _op_ref(done)})
    for w in writes:
        final = last_read.get(freeze(w.key))
        if w.status != "ok" or final is None or w.completion is None:
            continue
        inv, done, seen = final
        # Only a read invoked after the ack must show it.
        if w.completion.index < inv.index and freeze(w.value) not in {freeze(x) for x in seen}:
            anomalies.append({"type": "lost-write", "value": w.value, "key": w.key,
                              "evidence": "final-read", "write": _op_ref(w.invoke),
                              "ack": _op_ref(w.completion), "final_read": _op_ref(done)})
    return anomalies


def _repeated(values: list) -> list:
    seen, dupes = set(), []
    for x in values:
        fx = freeze(x)
        if fx in seen and x not in dupes:
            dupes.append(x)
        seen.add(fx)
    return dupes


# --- log: offsets, monotonic reads, the last read covering each offset -------


@dataclass(slots=True)
class _LogRead:
    inv: Op
    done: Op
    log: Any
    start: int
    count: int
    entries: list[tuple[int, Any]]

    def covered_end(self, known_end: int) -> int:
        """Last offset this read vouches for: a short read reached the log's end.

        Capped at `known_end`: a hostile `count` must not make us walk billions.
        """
        top = max((o for o, _ in self.entries), default=self.start - 1)
        if len(self.entries) < self.count:
            return min(self.start + self.count - 1, max(known_end, top))
        return top


def _log_rules(pairs: list[tuple[Op, Op | None]], writes: list[Write]) -> list[dict[str, Any]]:
    reads: list[_LogRead] = []
    acked: list[tuple[Write, int]] = []
    for inv, done in pairs:
        if done is None or done.type != "ok":
            continue
        v = done.value
        if inv.f == "read" and isinstance(v, list | tuple) and len(v) == 3 \
                and type(v[1]) is int and _pair(inv.value) and len(inv.value) == 3 \
                and type(inv.value[2]) is int:
            reads.append(_LogRead(inv, done, freeze(v[0]), v[1], inv.value[2], _log_entries(v)))
    for w in writes:
        v = w.completion.value if w.completion is not None else None
        if w.status == "ok" and isinstance(v, list | tuple) and len(v) == 3 \
                and type(v[2]) is int:
            acked.append((w, v[2]))
    return (_offset_consistency(reads, acked) + _reads_in_order(reads)
            + _monotonic_reads(reads, acked) + _lost_by_final_read(reads, acked))


def _offset_consistency(reads: list[_LogRead],
                        acked: list[tuple[Write, int]]) -> list[dict[str, Any]]:
    # Appends first: the ack is where a value's offset was promised.
    sightings = [(freeze(w.key), freeze(w.value), w.value, o, w.completion) for w, o in acked]
    sightings += [(r.log, freeze(x), x, o, r.done) for r in reads for o, x in r.entries]
    offset_of: dict[tuple, tuple[int, Op | None]] = {}
    value_at: dict[tuple, tuple[Any, Op | None]] = {}
    reported: set[tuple] = set()
    anomalies = []
    for log, fv, value, offset, op in sightings:
        first = offset_of.setdefault((log, fv), (offset, op))
        if first[0] != offset and ("changed", log, fv) not in reported:
            reported.add(("changed", log, fv))
            anomalies.append({"type": "offset-changed", "log": log, "value": value,
                              "offsets": [first[0], offset],
                              "first_seen": _op_ref(first[1]), "then": _op_ref(op)})
        holder = value_at.setdefault((log, offset), (fv, op))
        if holder[0] != fv and ("conflict", log, offset) not in reported:
            reported.add(("conflict", log, offset))
            anomalies.append({"type": "offset-conflict", "log": log, "offset": offset,
                              "values": [holder[0], value],
                              "first_seen": _op_ref(holder[1]), "then": _op_ref(op)})
    return anomalies


def _reads_in_order(reads: list[_LogRead]) -> list[dict[str, Any]]:
    anomalies = []
    for r in reads:
        offsets = [o for o, _ in r.entries]
        if any(b <= a for a, b in zip(offsets, offsets[1:], strict=False)):
            anomalies.append({"type": "read-out-of-order", "log": r.log, "offsets": offsets,
                              "read": _op_ref(r.done)})
    return anomalies


def _monotonic_reads(reads: list[_LogRead],
                     acked: list[tuple[Write, int]]) -> list[dict[str, Any]]:
    """A process never sees less of a log than it has already seen (or appended)."""
    events: list[tuple[int, str, Any, Any, int, Any]] = []
    for w, o in acked:
        if w.completion is None:
            continue
        events.append((w.completion.index, "append", w.completion.process, freeze(w.key), o,
                       w.completion))
    for r in reads:
        events.append((r.done.index, "read", r.done.process, r.log, 0, r))
    events.sort(key=lambda e: e[0])
    seen: dict[tuple[Any, Any], tuple[int, Op]] = {}
    anomalies = []
    for _, kind, process, log, offset, item in events:
        if kind == "append":
            if (process, log) not in seen or offset > seen[(process, log)][0]:
                seen[(process, log)] = (offset, item)
            continue
        r = item   # a read's event carries its _LogRead
        top = max((o for o, _ in r.entries), default=r.start - 1)
        prior = seen.get((process, log))
        # Only a short read claims to reach the end of the log.
        if prior and len(r.entries) < r.count and r.start <= prior[0] \
                and prior[0] < r.start + r.count and top < prior[0]:
            anomalies.append({"type": "read-went-backwards", "process": process, "log": log,
                              "seen_offset": prior[0], "seen_by": _op_ref(prior[1]),
                              "read_up_to": top, "read": _op_ref(r.done)})
        if r.entries and (prior is None or top > prior[0]):
            seen[(process, log)] = (top, r.done)
    return anomalies


def _lost_by_final_read(reads: list[_LogRead],
                        acked: list[tuple[Write, int]]) -> list[dict[str, Any]]:
    known_end: dict[Any, int] = defaultdict(lambda: -1)
    for w, o in acked:
        known_end[freeze(w.key)] = max(known_end[freeze(w.key)], o)
    for r in reads:
        for o, _ in r.entries:
            known_end[r.log] = max(known_end[r.log], o)
    last_covering: dict[tuple[Any, int], _LogRead] = {}
    for read in sorted(reads, key=lambda read: read.inv.index):
        first = max(read.start, 0)
        last = min(read.covered_end(known_end[read.log]), first + MAX_READ_COVER - 1)
        for o in range(first, last + 1):
            last_covering[(read.log, o)] = read
    anomalies = []
    shown: dict[int, set[tuple[int, Any]]] = {}
    for w, o in acked:
        covering = last_covering.get((freeze(w.key), o))
        if covering is None or w.completion is None or covering.inv.index < w.completion.index:
            continue
        if covering.done.index not in shown:
            shown[covering.done.index] = {(ro, freeze(x)) for ro, x in covering.entries}
        if (o, freeze(w.value)) not in shown[covering.done.index]:
            anomalies.append({"type": "lost-write", "value": w.value, "log": w.key,
                              "offset": o, "evidence": "final-read",
                              "write": _op_ref(w.invoke), "ack": _op_ref(w.completion),
                              "final_read": _op_ref(covering.done)})
    return anomalies
