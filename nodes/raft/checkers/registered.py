"""The raft store's checkers as the registry takes them (the entry point
`faultline.checkers: raft`)."""

from __future__ import annotations

from checkers.checker import EVENTS, Checker, Contributed, Options
from checkers.rundir import Run
from checkers.verdict import Verdict, verdict
from nodes.raft.checkers.sentences import SENTENCES
from nodes.raft.events import VOTE_LOSS


def _invariants(r: Run, options: Options) -> Verdict:
    from nodes.raft.checkers import invariants
    if not r.events:
        return verdict("unknown", stats={"reason": "no node event logs in the run"})
    return invariants.check(r.history.ops, r.events, r.run, r.dumps)


INVARIANTS = Checker("invariants", "run", _invariants, needs=lambda o: frozenset({EVENTS}),
                     needs_node_files=True)


def _durable_epochs(r: Run, options: Options) -> Verdict:
    from nodes.raft.checkers import epochs
    if not r.events:
        return verdict("unknown", stats={"reason": "no node event logs in the run"})
    return epochs.check(r.events)


DURABLE_EPOCHS = Checker("durable-epochs", "run", _durable_epochs,
                         needs=lambda o: frozenset({EVENTS}), needs_node_files=True)

# Every run gets them: a system without event lines has them skipped with the reason.
# Its voters' lost quorum state comes with the checker that reads those lines.
CHECKERS = (Contributed(INVARIANTS, every_run=True, sentences=SENTENCES),
            Contributed(DURABLE_EPOCHS, every_run=True, vote_loss=(VOTE_LOSS,)))
