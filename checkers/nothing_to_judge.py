"""The one rule for a history with nothing to judge, shared by check-lin,
check-elle and a run's checkers.

A history is judged only if some client operation may have happened: it
completed `ok` or `info`, or never completed. Nemesis ops constrain nothing,
and an op that failed certainly did not happen, so a history of those only
is consistent with every model. Knossos and Elle call such a history valid;
faultline calls it unknown, because "valid" would let a gate pass a run in
which the system under test was never exercised."""

from __future__ import annotations

from collections.abc import Iterable

from checkers.history import Op, client_ops, pair_ops

NO_CLIENT_OPS = "no client operations"


def nothing_to_judge(ops: Iterable[Op]) -> str | None:
    """Why `ops` leave nothing to judge, or None when some client op may have
    happened."""
    clients = client_ops(ops)
    if not clients:
        return f"{NO_CLIENT_OPS}: nothing to judge"
    # A completion recorded without its invoke (Elle's unit-test style) counts too.
    if any(op.type in ("ok", "info") for op in clients):
        return None
    pairs = pair_ops(clients)
    if any(completion is None for _, completion in pairs):
        return None
    return (f"every one of the {len(pairs)} client operations failed (none may have "
            "happened): nothing to judge")
