"""The lattice of consistency models and anomalies, as data, after Elle's
(elle/consistency_model.clj, itself after Adya; Adya, Liskov, O'Neil; Bailis
et al.; Cerone, Bernardi, Gotsman; Daudjee, Salem): which anomalies imply
which, which models imply which, and the anomalies each model proscribes
directly. A model prohibits every anomaly it or a model it implies
proscribes, and every anomaly implying one of those; an anomaly found rules
out every model prohibiting it. The verdict names, as Elle's does, the
weakest models ruled out (`not`), the rest ruled out (`also_not`), and the
strongest models still possible."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

from checkers.elle.kinds import DATA, PROCESS, REALTIME, WR, WW
from checkers.verdict import Validity

# anomaly -> the anomalies it is a case of (Elle's implied-anomalies, for the
# anomalies faultline finds and the families they belong to)
IMPLIES: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1a": ("G1",),
    "G1b": ("G1",),
    "G1c": ("G1", "G1c-process"),
    "G1c-process": ("G1c-realtime", "G1-process"),
    "G1c-realtime": ("G1-realtime",),
    "G1": ("G1-process",),
    "G1-process": ("G1-realtime",),
    # A cycle with one rw edge is a cycle whose rw edges are not adjacent.
    "G-single-item": ("G-single", "G-single-item-process", "G-nonadjacent-item"),
    "G-single-item-process": ("G-single-process", "G-single-item-realtime",
                              "G-nonadjacent-item-process"),
    "G-single-item-realtime": ("G-single-realtime", "G-nonadjacent-item-realtime"),
    "G-single": ("G-nonadjacent", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent-item": ("G-nonadjacent", "G2-item", "G-nonadjacent-item-process"),
    "G-nonadjacent-item-process": ("G-nonadjacent-process", "G2-item-process",
                                   "G-nonadjacent-item-realtime"),
    "G-nonadjacent-item-realtime": ("G2-item-realtime", "G-nonadjacent-realtime"),
    "G-nonadjacent": ("G2", "G-nonadjacent-process"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime"),
    "G-nonadjacent-realtime": ("G2-realtime",),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-process": ("G2-realtime",),
    # Two committed reads no one order of the key's versions fits: one saw
    # an element the key's true order does not hold.
    "incompatible-order": ("G1a",),
    # A read of the txn's own later write: a trivial wr cycle.
    "future-read": ("G1c",),
    # A committed write on top of an aborted one, as bad as reading it.
    "dirty-update": ("G1a",),
    # Two txns read one version of a key and both wrote it (Bailis: a kind
    # of write skew; on one item, so G2-item).
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
}

# model -> the models it implies (Elle's `models`, for the models named in
# MODELS; the models between them Elle has and faultline does not name are
# folded into their edges, e.g. snapshot isolation -> update atomic through
# parallel snapshot isolation).
MODEL_IMPLIES: dict[str, tuple[str, ...]] = {
    "read-uncommitted": (),
    "read-committed": ("read-uncommitted",),
    "monotonic-atomic-view": ("read-committed",),
    "read-atomic": ("monotonic-atomic-view",),
    "update-atomic": ("read-atomic",),
    "cursor-stability": ("read-committed",),
    "monotonic-view": ("read-committed",),
    "consistent-view": ("cursor-stability", "monotonic-view"),
    "forward-consistent-view": ("consistent-view",),
    "repeatable-read": ("cursor-stability", "monotonic-atomic-view"),
    "snapshot-isolation": ("forward-consistent-view", "monotonic-atomic-view",
                           "update-atomic"),
    "serializable": ("repeatable-read", "snapshot-isolation"),
    "strong-session-read-uncommitted": ("read-uncommitted",),
    "strong-session-read-committed": ("read-committed", "strong-session-read-uncommitted"),
    "strong-read-uncommitted": ("strong-session-read-uncommitted",),
    "strong-read-committed": ("strong-session-read-committed", "strong-read-uncommitted"),
    "strong-session-snapshot-isolation": ("snapshot-isolation",
                                          "strong-session-read-committed"),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation",
                                  "strong-read-committed"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "strict-serializable": ("serializable", "strong-snapshot-isolation",
                            "strong-session-serializable"),
}

# model -> the anomalies it proscribes beyond those of the models it implies
# (Elle's direct-proscribed-anomalies; G-cursor, G-monotonic and G-SIb are
# named for completeness: faultline does not search for them).
PROSCRIBES: dict[str, tuple[str, ...]] = {
    "read-uncommitted": ("G0", "duplicate-elements", "cyclic-versions"),
    "read-committed": ("G1",),
    "monotonic-atomic-view": (),
    "read-atomic": ("internal", "G1a", "future-read"),
    "update-atomic": ("lost-update",),
    "cursor-stability": ("G1", "G-cursor", "lost-update"),
    "monotonic-view": ("G1", "G-monotonic"),
    "consistent-view": ("G1", "G-single"),
    "forward-consistent-view": ("G1", "G-SIb"),
    "repeatable-read": ("G1", "G2-item", "lost-update"),
    "snapshot-isolation": ("internal", "G1", "G-nonadjacent"),
    "serializable": ("internal", "G1", "G2"),
    "strong-session-read-uncommitted": ("G0-process",),
    "strong-session-read-committed": ("G1c-process",),
    "strong-read-uncommitted": ("G0-realtime",),
    "strong-read-committed": ("G1c-realtime",),
    "strong-session-snapshot-isolation": ("internal", "G1-process", "G-nonadjacent-process"),
    "strong-snapshot-isolation": ("internal", "G1-realtime", "G-nonadjacent-realtime"),
    "strong-session-serializable": ("G1-process", "G2-process"),
    "strict-serializable": ("G1", "G1c-realtime", "G2-realtime"),
}

# Other names of the same models (Adya's PL levels; Elle's friendly names).
ALIASES: dict[str, str] = {
    "PL-1": "read-uncommitted",
    "PL-2": "read-committed",
    "PL-CS": "cursor-stability",
    "PL-2L": "monotonic-view",
    "PL-2+": "consistent-view",
    "PL-FCV": "forward-consistent-view",
    "PL-2.99": "repeatable-read",
    "PL-SI": "snapshot-isolation",
    "PL-3": "serializable",
    "conflict-serializable": "serializable",
    "PL-SS": "strict-serializable",
    "strong-serializable": "strict-serializable",
}

MODELS = tuple(MODEL_IMPLIES)
# What --model accepts: every model, by any of its names.
MODEL_NAMES = tuple(sorted((*MODELS, *ALIASES)))

# Anomalies any history may show without being judged by them: not a model's
# business (a search that ran out of time, a txn left out, a proof of a
# cycle that already names its models).
NOT_ANOMALIES = frozenset({"cycle-search-timeout", "malformed-txn", "cycle-exists"})

# For each model, the edge kinds every one of whose cycles it prohibits: a
# strongly connected component of more than one txn over these edges proves a
# forbidden cycle exists even when the search for it ran out of time. Models
# whose forbidden cycles are not all the cycles of some edge kinds (snapshot
# isolation allows G2-item; cursor stability and the like are judged by their
# anomalies alone) have no entry.
FORBIDDEN_EDGES: dict[str, int] = {
    "read-uncommitted": WW,
    "read-committed": WW | WR,
    "monotonic-atomic-view": WW | WR,
    "read-atomic": WW | WR,
    "update-atomic": WW | WR,
    "cursor-stability": WW | WR,
    "monotonic-view": WW | WR,
    "consistent-view": WW | WR,
    "forward-consistent-view": WW | WR,
    "snapshot-isolation": WW | WR,
    "repeatable-read": DATA,
    "serializable": DATA,
    "strong-session-read-uncommitted": WW | PROCESS,
    "strong-session-read-committed": WW | WR | PROCESS,
    "strong-read-uncommitted": WW | PROCESS | REALTIME,
    "strong-read-committed": WW | WR | PROCESS | REALTIME,
    "strong-session-snapshot-isolation": WW | WR | PROCESS,
    "strong-snapshot-isolation": WW | WR | PROCESS | REALTIME,
    "strong-session-serializable": DATA | PROCESS,
    "strict-serializable": DATA | PROCESS | REALTIME,
}


def canonical(model: str) -> str:
    """A model's name as MODELS holds it; ValueError naming the choices if it
    is none of them."""
    name = ALIASES.get(model, model)
    if name not in MODEL_IMPLIES:
        raise ValueError(f"unknown consistency model {model!r}; one of "
                         f"{', '.join(MODEL_NAMES)}")
    return name


def _closure(start: Iterable[str], step: Mapping[str, Iterable[str]]) -> set[str]:
    seen = set(start)
    todo = list(seen)
    while todo:
        for nxt in step.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _inverse(graph: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    inv: dict[str, list[str]] = {}
    for a, bs in graph.items():
        for b in bs:
            inv.setdefault(b, []).append(a)
    return inv


_IMPLIED_BY = _inverse(IMPLIES)
_IMPLIED_BY_MODEL = _inverse(MODEL_IMPLIES)


def implied_models(model: str) -> set[str]:
    """The model and every model it implies."""
    return _closure([canonical(model)], MODEL_IMPLIES)


def implied_anomalies(anomalies: Iterable[str]) -> set[str]:
    """The anomalies and every anomaly they are cases of."""
    return _closure(anomalies, IMPLIES)


@cache
def prohibited(model: str) -> frozenset[str]:
    """Every anomaly a history of `model` cannot show."""
    direct = {a for m in implied_models(model) for a in PROSCRIBES[m]}
    return frozenset(_closure(direct, _IMPLIED_BY))


PROHIBITED: dict[str, frozenset[str]] = {m: prohibited(m) for m in MODELS}


def ruled_out(anomalies: Iterable[str]) -> set[str]:
    """The models the anomalies rule out."""
    return {m for m in MODELS if PROHIBITED[m] & set(anomalies)}


def weakest(models: Iterable[str]) -> list[str]:
    """Those of `models` that imply no other of them (Elle's weakest-models)."""
    ms = set(models)
    return sorted(m for m in ms
                  if not any(o != m and o in implied_models(m) for o in ms))


def strongest(models: Iterable[str]) -> list[str]:
    """Those of `models` no other of them implies."""
    ms = set(models)
    return sorted(m for m in ms
                  if not any(o != m and m in implied_models(o) for o in ms))


def judge(model: str, found: Iterable[str], undecided: Iterable[str],
          unparsed: bool = False, proven: Iterable[str] = ()) -> Validity:
    """False if an anomaly found rules the model out, or a forbidden cycle is
    `proven` to exist for it; "unknown" if one it prohibits could not be
    searched for (or part of the history was unreadable); else True."""
    model = canonical(model)
    banned = PROHIBITED[model]
    if model in proven or any(t in banned for t in found):
        return False
    if unparsed or any(t in banned for t in undecided):
        return "unknown"
    return True


def models_report(found: set[str], undecided: set[str],
                  unparsed: bool = False, proven: set[str] | frozenset[str] = frozenset()
                  ) -> dict[str, dict]:
    return {m: {"valid": judge(m, found, undecided, unparsed, proven),
                "ruled_out_by": sorted(found & PROHIBITED[m])
                + (["cycle-exists"] if m in proven else [])} for m in MODELS}


def boundary(models: Mapping[str, Mapping]) -> dict[str, list[str]]:
    """From `models_report`: the weakest models ruled out (`not`), the others
    ruled out (`also_not`), and the strongest models the history is valid
    under (`possible`)."""
    out = {m for m, r in models.items() if r["valid"] is False}
    valid = [m for m, r in models.items() if r["valid"] is True]
    is_not = weakest(out)
    return {"not": is_not, "also_not": sorted(out - set(is_not)),
            "possible": strongest(valid)}
