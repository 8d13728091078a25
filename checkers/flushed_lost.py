"""`flushed-lost-on-restart`: a node recovered, at a restart, less of its log
than its own lines had said was on its disk, and no fault destroyed data on
that disk meanwhile. Judged from the nodes' event lines alone
(nodes.events), against the faults' records of what they did at rest
(`checkers.at_rest`).

A node's `flushed` line (`end`) says offsets below `end` are fsynced on its
disk; a `truncate` line (`to`, any reason) cuts that claim back to `to`; a
`start` line (`log_end`) says what a restart recovered. A durable claim
survives any crash that keeps what was fsynced: a kill, a pause, a power cut
that drops only un-fsynced writes (LazyFS rolls each file back to its last
fsync), a disk that refused or delayed writes. So a start below the claim,
with no fault that DESTROYS data at rest (bits flipped at rest, a file cut,
a data dir put aside or wiped) on that node from the first `flushed` line
that claimed more until the restart, and no fault that DISTURBS its disk in
force at the restart that failed or garbled a read there (its heal's
record says), is data the node declared durable
and lost: the write it counted was never on the disk (a refused write taken
as done, a missing fsync), or its recovery threw away good records.

The claim is then lowered to what the restart recovered (judged once).
A run whose nodes write no `flushed` lines is not judged (stats say why),
nor one whose faults cannot be placed on the nodes' clock.
"""

from __future__ import annotations

from typing import Any

from checkers.at_rest import AtRest
from checkers.fault_row import DESTROYS, DISTURBS
from nodes.events import FLUSHED, START, TRUNCATE

RULE = "flushed-lost-on-restart"


def _int(value: Any) -> bool:
    return type(value) is int


def check(events: dict[str, list[dict]], faults: list[AtRest] | None
          ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The anomalies (one per restart that lost a durable claim) and what was
    judged. `faults`: the run's injections that destroyed or disturbed data
    at rest (`checkers.at_rest.at_rest_faults`); None when they cannot be
    known (no nemesis record on the nodes' clock): not judged then."""
    if not any(ev.get("event") == FLUSHED.name for evs in events.values() for ev in evs):
        return [], {"judged": False, "reason": "no flushed lines: the nodes declare no "
                    "durable log end to hold their restarts to"}
    if faults is None:
        return [], {"judged": False, "reason": "the faults cannot be placed on the nodes' "
                    "clock (no history or no start_monotonic_ns): a restart's loss "
                    "cannot be told from a fault's"}
    anomalies: list[dict[str, Any]] = []
    excused: list[dict[str, Any]] = []
    starts = 0
    for node, evs in sorted(events.items()):
        starts += sum(1 for ev in evs if ev.get("event") == START.name)
        for finding in node_losses(node, evs, faults):
            excuses = finding.pop("excused_by")
            if excuses:
                excused.append({"node": node, "claimed_end": finding["claimed_end"],
                                "recovered_end": finding["recovered_end"], "t": finding["t"],
                                "excused_by": excuses})
            else:
                anomalies.append(finding)
    return anomalies, {"judged": True, "starts": starts,
                       "losses_excused_by_faults": excused[:50]}


def node_losses(node: str, evs: list[dict], faults: list[AtRest]) -> list[dict[str, Any]]:
    """Each start of `node` that recovered less than its lines claimed
    durable, with `excused_by` the faults that may have taken it (empty:
    an anomaly). `evs`: its lines in the order it wrote them."""
    # The durable ends claimed since the claim was last lowered, rising: each
    # with the flushed line that made it (a cut lowers the last ones to its
    # `to`, keeping when they were first claimed).
    claims: list[dict[str, Any]] = []
    cuts: list[dict] = []       # its truncate lines since then
    out: list[dict[str, Any]] = []
    for ev in evs:
        kind, t = ev.get("event"), ev.get("t")
        if not _int(t):
            continue
        if kind == FLUSHED.name and _int(ev.get("end")):
            if not claims or ev["end"] > claims[-1]["end"]:
                claims.append({"since": t, "end": ev["end"], "line": ev})
        elif kind == TRUNCATE.name and _int(ev.get("to")):
            claims = _lowered(claims, ev["to"])
            cuts.append(ev)
        elif kind == START.name and _int(ev.get("log_end")):
            recovered = ev["log_end"]
            if claims and claims[-1]["end"] > recovered:
                out.append(_loss(node, claims, ev, cuts, faults))
                claims = [c for c in claims if c["end"] <= recovered]
                cuts = []
    return out


def _lowered(claims: list[dict[str, Any]], to: int) -> list[dict[str, Any]]:
    kept = [c for c in claims if c["end"] <= to]
    above = [c for c in claims if c["end"] > to]
    return kept + ([{**above[0], "end": to}] if above and (not kept or kept[-1]["end"] < to)
                   else [])


def _loss(node: str, claims: list[dict[str, Any]], start: dict, cuts: list[dict],
          faults: list[AtRest]) -> dict[str, Any]:
    first = next(c for c in claims if c["end"] > start["log_end"])
    claim = claims[-1]
    since = first["since"]
    excused_by = [f.ref() for f in faults
                  if (f.what == DESTROYS and f.overlaps(node, since, start["t"]))
                  or (f.what == DISTURBS and f.overlaps(node, start["t"], start["t"]))]
    return {
        "type": RULE, "node": node, "claimed_end": claim["end"],
        "recovered_end": start["log_end"], "t": start["t"],
        "lines": {"first_flushed_above": first["line"], "flushed": claim["line"],
                  "start": start, "truncates_between": cuts[-10:]},
        "excused_by": excused_by,
        "explanation": (f"{node} wrote that its log was on its disk up to {claim['end']} "
                        f"(flushed at t={claim['line']['t']}"
                        + (", less its own cuts since" if cuts else "")
                        + f"), but its restart at t={start['t']} "
                        f"recovered {start['log_end']}: offsets {start['log_end']}.."
                        f"{claim['end'] - 1} it declared durable were gone, and no fault "
                        "destroyed data at rest on that node, or disturbed its disk at "
                        "the restart, in between"),
    }
