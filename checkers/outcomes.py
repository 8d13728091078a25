"""What a client op's completion says, in the words a reader of a run needs:
ok, refused, error or info.

A `fail` is certain not to have taken effect, for two different reasons:
the system judged the op and said a definite no on its merits ("refused": a
cas whose compare was false, an append to a key of another type), or it
could not serve it at all ("error": not the leader, never sent). On a
healthy register run most fails are refusals, and drawing them as errors
made a VALID run look mostly red. Pure.
"""

from __future__ import annotations

from typing import Any

OK, REFUSED, ERROR, INFO = "ok", "refused", "error", "info"
OUTCOMES = (OK, REFUSED, ERROR, INFO)
# Errors a system gives when the op reached the data and its condition was
# false: the spellings of the bundled store's node, etcd's client and Jepsen
# histories.
REFUSAL_ERRORS = frozenset({"cas_mismatch", "cas-mismatch", "mismatch", "type_mismatch"})
# A cas that failed with no error at all: Jepsen's way of saying the compare was false.
SILENT_REFUSALS = frozenset({"cas"})


def outcome(op_type: str, f: Any, error: Any) -> str:
    """ok / refused / error / info for a completion; any other type as is."""
    if op_type != "fail":
        return op_type
    if error in REFUSAL_ERRORS or (error is None and f in SILENT_REFUSALS):
        return REFUSED
    return ERROR
