"""Availability: when could clients not get anything done, and why, and how
often did leadership move?

The figures are always reported in stats: windows with no successful op longer
than `gap_s`, matched against the nemesis faults active at the time; elections
and leader changes, split into those during a fault, those within `settle_s`
after a heal (with no fault active: KIP-996's disruptive server), and quiet ones.
The verdict is invalid when a limit is exceeded. Configured limits:

    max_unavailable_s            longest allowed window with no successful op
    max_leader_changes_per_heal  leader changes in one heal's settle window
    max_quiet_leader_changes     leader changes with no fault and no recent heal

and one derived from the run itself, always in force: an *unexplained* window
(no fault in force at any point of it) may last at most op timeout + a full
election (2 x election timeout + fetch timeout, from the nodes' start lines)
+ a grace for a loaded machine. Only time in which some client op was
outstanding, or between tries less than `gap_s` apart, counts: the recovery
pause before the final reads issues nothing by design and is never
"unavailable".

A "leader change" is any election after the first: a node re-elected in a new
epoch still interrupted service.
"""

from __future__ import annotations

from typing import Any

from checkers.elections import leader_elections
from checkers.faults import CUT, DOWN, OTHER_CLUSTER, VOTERS, healed_by
from checkers.history import NEMESIS, Op, client_ops, collector_paused, noop_reason, pair_ops
from checkers.verdict import Verdict, verdict

DEFAULTS = {"gap_s": 2.0, "settle_s": 5.0}
DERIVED_GRACE_S = 2.0
LEADER_LIMITS = ("max_leader_changes_per_heal", "max_quiet_leader_changes")
# Every threshold a run may set (`--threshold K=V`).
THRESHOLDS = (*DEFAULTS, "max_unavailable_s", *LEADER_LIMITS)
# Faults that stay in force until a later op undoes them; all others last as
# long as their own invoke..completion.
HEALED_BY = healed_by(DOWN, CUT, VOTERS, OTHER_CLUSTER)
LASTING = frozenset(f for faults in HEALED_BY.values() for f in faults)
MAX_LISTED = 50
NS = 1_000_000_000


@collector_paused()   # millions of small acyclic objects: its passes free nothing
def check(history: list[Op], events: dict[str, list[dict]] | None, run: dict,
          thresholds: dict | None = None) -> Verdict:
    configured = (run.get("config") or {}).get("thresholds") or {}
    limits = {**DEFAULTS, **configured, **(thresholds or {})}
    end = max((op.time for op in history), default=0)
    faults, heals = fault_windows(history, end)
    gaps = unavailable_windows(history, int(limits["gap_s"] * NS), faults)
    derived = derived_limit_s(events, run)

    stats: dict[str, Any] = {"thresholds": limits, "faults": len(faults), "heals": len(heals),
                             "max_unexplained_unavailable_s": derived}
    stats.update(_gap_stats(gaps))
    anomalies = _gap_anomalies(gaps, limits) + _unexplained_anomalies(gaps, derived)

    unknown = False
    if events is None or type(run.get("start_monotonic_ns")) is not int:
        stats["leadership"] = None
        stats["why_no_leadership"] = ("no node events" if events is None else
                                      "run.json has no start_monotonic_ns")
        unknown = any(k in limits for k in LEADER_LIMITS)
        if unknown:
            stats["reason"] = f"leader-change limits set, but {stats['why_no_leadership']}"
    else:
        elections = [e for e in leader_elections(events) if type(e["t"]) is int]
        changes = leader_changes(elections, run["start_monotonic_ns"], faults, heals,
                                 int(limits["settle_s"] * NS))
        stats["elections"] = len(elections)
        stats.update(_leadership_stats(changes, heals))
        anomalies += _leadership_anomalies(changes, heals, limits)

    if anomalies:
        return verdict(False, anomalies, stats)
    return verdict("unknown" if unknown else True, [], stats)


def _s(ns: int | None) -> float | None:
    return None if ns is None else round(ns / NS, 3)


# --- faults ----------------------------------------------------------------------


def _nodes(value: Any) -> set[str] | None:
    """The nodes a nemesis op names, or None when it names none (= all of them)."""
    nodes = value.get("nodes") if isinstance(value, dict) else None
    if isinstance(nodes, list) and nodes:
        return {n for n in nodes if isinstance(n, str)}
    return None


def fault_windows(history: list[Op], run_end: int) -> tuple[list[dict], list[dict]]:
    """Each fault with the time it was in force, and each heal (when it completed)."""
    faults: list[dict] = []
    heals: list[dict] = []
    open_faults: list[dict] = []
    for inv, done in pair_ops(op for op in history if op.process == NEMESIS):
        if done is not None and noop_reason(done.value):
            continue  # it changed nothing: neither a fault nor a heal
        finished = done.time if done is not None else run_end
        if inv.f in HEALED_BY:
            healed = _nodes(inv.value)
            heals.append({"f": inv.f, "value": inv.value, "time": finished})
            for fault in [f for f in open_faults if f["f"] in HEALED_BY[inv.f]]:
                if healed is None or fault["nodes"] is None or fault["nodes"] & healed:
                    fault["end"] = finished
                    open_faults.remove(fault)
            continue
        fault = {"f": inv.f, "value": inv.value, "start": inv.time,
                 "end": finished, "nodes": _nodes(inv.value)}
        faults.append(fault)
        if inv.f in LASTING:
            fault["end"] = None
            open_faults.append(fault)
    for fault in open_faults:
        fault["end"] = run_end
    return faults, heals


def _fault_ref(fault: dict) -> dict:
    return {"f": fault["f"], "value": fault["value"], "start_s": _s(fault["start"]),
            "end_s": _s(fault["end"])}


def active_at(faults: list[dict], t: int) -> list[dict]:
    return [f for f in faults if f["start"] <= t <= f["end"]]


# --- windows with no successful op -----------------------------------------------


def derived_limit_s(events: dict[str, list[dict]] | None, run: dict) -> float | None:
    """The longest unexplained window a correct cluster can cause, from the run's
    own timers; None when the nodes did not report them."""
    election = fetch = None
    for evs in (events or {}).values():
        for ev in evs:
            if ev.get("event") == "start" and type(ev.get("election_timeout_ms")) is int \
                    and type(ev.get("fetch_timeout_ms")) is int:
                election = max(election or 0, ev["election_timeout_ms"])
                fetch = max(fetch or 0, ev["fetch_timeout_ms"])
    if election is None or fetch is None:
        return None
    op_timeout = float((run.get("config") or {}).get("op_timeout") or 1.0)
    return round(op_timeout + (2 * election + fetch) / 1000 + DERIVED_GRACE_S, 3)


def demand_spans(ops: list[Op], idle_ns: int) -> list[tuple[int, int]]:
    """When clients were asking: [invoke, completion] spans of client ops, merged
    across pauses of at most `idle_ns`. A client retrying ops that fail at once
    is still asking between its tries; only a longer silence (the recovery
    pause before the final reads) is time nobody asked."""
    spans = sorted((inv.time, done.time if done is not None else inv.time)
                   for inv, done in pair_ops(ops))
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + idle_ns:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def unavailable_windows(history: list[Op], gap_ns: int, faults: list[dict]) -> list[dict]:
    ops = client_ops(history)
    if not ops:
        return []
    oks = sorted(op.time for op in ops if op.type == "ok")
    marks = [min(op.time for op in ops)] + oks + [max(op.time for op in ops)]
    demand = demand_spans(ops, gap_ns)
    pieces = []
    for a, b in zip(marks, marks[1:], strict=False):
        if b - a <= gap_ns:
            continue
        # Only the parts of the gap in which some client op was outstanding.
        pieces += [(max(a, x), min(b, y)) for x, y in demand if x < b and y > a]
    gaps = []
    for a, b in pieces:
        if b - a > gap_ns:
            during = [f for f in faults if f["start"] <= b and f["end"] >= a]
            gaps.append({"start_s": _s(a), "end_s": _s(b), "duration_s": _s(b - a),
                         "faults": [_fault_ref(f) for f in during],
                         "explained": bool(during)})
    return gaps


def _gap_stats(gaps: list[dict]) -> dict[str, Any]:
    return {
        "gap_count": len(gaps),
        "longest_gap_s": max((g["duration_s"] for g in gaps), default=0.0),
        "unavailable_s": round(sum(g["duration_s"] for g in gaps), 3),
        "unexplained_gaps": sum(1 for g in gaps if not g["explained"]),
        "gaps": gaps[:MAX_LISTED],
    }


def _unexplained_anomalies(gaps: list[dict], limit: float | None) -> list[dict]:
    if limit is None:
        return []
    return [dict(g, type="unexplained-unavailable", limit_s=limit) for g in gaps
            if not g["explained"] and g["duration_s"] > limit]


def _gap_anomalies(gaps: list[dict], limits: dict) -> list[dict]:
    limit = limits.get("max_unavailable_s")
    if limit is None:
        return []
    return [dict(g, type="unavailable", limit_s=limit) for g in gaps
            if g["duration_s"] > limit]


# --- leadership ------------------------------------------------------------------


def leader_changes(elections: list[dict], start_ns: int, faults: list[dict],
                   heals: list[dict], settle_ns: int) -> list[dict]:
    """Every election after the first, in history time, with what was going on.

    `elections` as from `checkers.elections.leader_elections` (event time `t`).
    """
    changes = []
    for prev, e in zip(elections, elections[1:], strict=False):
        t = e["t"] - start_ns
        during = active_at(faults, t)
        recent = [i for i, h in enumerate(heals) if h["time"] <= t <= h["time"] + settle_ns]
        when = "during-fault" if during else "after-heal" if recent else "quiet"
        changes.append({"time_s": _s(t), "time": t, "node": e["node"], "epoch": e["epoch"],
                        "previous": {"node": prev["node"], "epoch": prev["epoch"]},
                        "when": when, "faults": [_fault_ref(f) for f in during],
                        "heal": recent[-1] if recent and not during else None})
    return changes


def _per_heal(changes: list[dict], heals: list[dict]) -> list[tuple[dict, list[dict]]]:
    return [(h, [c for c in changes if c["when"] == "after-heal" and c["heal"] == i])
            for i, h in enumerate(heals)]


def _leadership_stats(changes: list[dict], heals: list[dict]) -> dict[str, Any]:
    per_heal = [len(cs) for _, cs in _per_heal(changes, heals)]
    return {
        "leader_changes": len(changes),
        "leader_node_changes": sum(1 for c in changes if c["node"] != c["previous"]["node"]),
        "leader_changes_during_fault": sum(1 for c in changes if c["when"] == "during-fault"),
        "leader_changes_after_heal": sum(1 for c in changes if c["when"] == "after-heal"),
        "quiet_leader_changes": sum(1 for c in changes if c["when"] == "quiet"),
        "max_leader_changes_per_heal": max(per_heal, default=0),
        "leader_change_list": [
            dict(_brief(c), when=c["when"], faults=c["faults"],
                 heal_s=_s(heals[c["heal"]]["time"]) if c["heal"] is not None else None)
            for c in changes[:MAX_LISTED]],
    }


def _leadership_anomalies(changes: list[dict], heals: list[dict],
                          limits: dict) -> list[dict]:
    anomalies = []
    per_heal_limit = limits.get("max_leader_changes_per_heal")
    if per_heal_limit is not None:
        for heal, cs in _per_heal(changes, heals):
            if len(cs) > per_heal_limit:
                anomalies.append({"type": "leader-changes-after-heal",
                                  "heal": {"f": heal["f"], "value": heal["value"],
                                           "time_s": _s(heal["time"])},
                                  "count": len(cs), "limit": per_heal_limit,
                                  "changes": [_brief(c) for c in cs]})
    quiet_limit = limits.get("max_quiet_leader_changes")
    quiet = [c for c in changes if c["when"] == "quiet"]
    if quiet_limit is not None and len(quiet) > quiet_limit:
        anomalies.append({"type": "quiet-leader-changes", "count": len(quiet),
                          "limit": quiet_limit, "changes": [_brief(c) for c in quiet]})
    return anomalies


def _brief(change: dict) -> dict:
    return {"time_s": change["time_s"], "node": change["node"], "epoch": change["epoch"],
            "previous": change["previous"]}
