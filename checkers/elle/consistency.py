"""Which consistency models each anomaly rules out (after Adya, and Elle's
model map), and the judgement of a set of anomalies against each model."""

from __future__ import annotations

from collections.abc import Iterable

from checkers.elle.kinds import DATA, PROCESS, REALTIME, WR, WW
from checkers.verdict import Validity

# Anomalies no model allows: the history itself contradicts how lists work.
_ALWAYS = {"internal", "duplicate-elements", "incompatible-order", "cyclic-versions"}
_READ_COMMITTED = _ALWAYS | {"G0", "G1a", "G1b", "G1c", "dirty-update"}
_SERIALIZABLE = _READ_COMMITTED | {"G-single", "G2-item"}
_ORDERED = {f"{base}-{order}" for base in ("G0", "G1c", "G-single", "G2-item")
            for order in ("process", "realtime")}

PROHIBITED: dict[str, frozenset[str]] = {
    "read-committed": frozenset(_READ_COMMITTED),
    "repeatable-read": frozenset(_SERIALIZABLE),
    # Snapshot isolation allows write skew (G2-item) but not G-single.
    "snapshot-isolation": frozenset(_READ_COMMITTED | {"G-single"}),
    "serializable": frozenset(_SERIALIZABLE),
    "strict-serializable": frozenset(_SERIALIZABLE | _ORDERED),
}
MODELS = tuple(PROHIBITED)

# For each model, the edge kinds every one of whose cycles it prohibits: a
# strongly connected component of more than one txn over these edges proves a
# forbidden cycle exists even when the search for it ran out of time. (Snapshot
# isolation allows G2-item, so only ww/wr cycles, G0 and G1c, prove it broken.)
FORBIDDEN_EDGES: dict[str, int] = {
    "read-committed": WW | WR,
    "repeatable-read": DATA,
    "snapshot-isolation": WW | WR,
    "serializable": DATA,
    "strict-serializable": DATA | PROCESS | REALTIME,
}


def judge(model: str, found: Iterable[str], undecided: Iterable[str],
          unparsed: bool = False, proven: Iterable[str] = ()) -> Validity:
    """False if an anomaly found rules the model out, or a forbidden cycle is
    `proven` to exist for it; "unknown" if one it prohibits could not be
    searched for (or part of the history was unreadable); else True."""
    prohibited = PROHIBITED[model]
    if model in proven or any(t in prohibited for t in found):
        return False
    if unparsed or any(t in prohibited for t in undecided):
        return "unknown"
    return True


def models_report(found: set[str], undecided: set[str],
                  unparsed: bool = False, proven: set[str] | frozenset[str] = frozenset()
                  ) -> dict[str, dict]:
    return {m: {"valid": judge(m, found, undecided, unparsed, proven),
                "ruled_out_by": sorted(found & PROHIBITED[m])
                + (["cycle-exists"] if m in proven else [])} for m in MODELS}
