"""Which consistency models each anomaly rules out (after Adya, and Elle's
model map), and the judgement of a set of anomalies against each model."""

from __future__ import annotations

from collections.abc import Iterable

from checkers.verdict import Validity

# Anomalies no model allows: the history itself contradicts how lists work.
_ALWAYS = {"internal", "duplicate-elements", "incompatible-order"}
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


def judge(model: str, found: Iterable[str], undecided: Iterable[str],
          unparsed: bool = False) -> Validity:
    """False if an anomaly found rules the model out; "unknown" if one it
    prohibits could not be searched for (or part of the history was unreadable);
    else True."""
    prohibited = PROHIBITED[model]
    if any(t in prohibited for t in found):
        return False
    if unparsed or any(t in prohibited for t in undecided):
        return "unknown"
    return True


def models_report(found: set[str], undecided: set[str],
                  unparsed: bool = False) -> dict[str, dict]:
    return {m: {"valid": judge(m, found, undecided, unparsed),
                "ruled_out_by": sorted(found & PROHIBITED[m])} for m in MODELS}
