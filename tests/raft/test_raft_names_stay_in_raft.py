"""The generic core (checkers/, nemesis/, harness/) names nothing that only the
raft store has: not the store itself, not its modules, not the faults and
checkers it brings (nodes/raft/faults, nodes/raft/checkers, registered through
entry points as a plug-in's are), not its own event kinds. The names are read
off the raft package's registries, so a fault or checker it adds later is
held too.

What is left is listed per file with why (ALLOWED): each allowance is a count
of lines, so a new line fails this test, and one no longer needed fails
test_every_allowance_is_still_needed, which keeps the list shrinking."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORE = ("checkers", "nemesis", "harness")

# file -> (lines naming raft-only things, why they still do); none left: the
# compositions' power-cut ending comes from the adapter (nodes.abilities.PowerCutOnAck).
ALLOWED: dict[str, tuple[int, str]] = {}


def raft_only_names() -> list[str]:
    """Regular expressions, one per name only the raft store has."""
    from nodes.raft.checkers.registered import CHECKERS
    from nodes.raft.events import EVENT_KINDS
    from nodes.raft.faults.registered import FAULTS

    words = [k.name for k in FAULTS] + [c.checker.name for c in CHECKERS]
    # Event kinds no generic word shares (`start`, `role`, `truncate` are also
    # heal ops, columns and faults of the core's own).
    words += [k.name for k in EVENT_KINDS if "_" in k.name]
    words += ["quorum-state"]
    patterns = [rf"(?<![\w-]){re.escape(w)}(?![\w-])" for w in words]
    patterns += [rf"\b{re.escape(w.upper().replace('-', '_'))}\b" for w in words]
    # The store, its package, and the core modules it used to have there.
    patterns += [r"(?i)\bk?raft\b", r"\bnodes\.raft\b",
                 r"\b(nemesis[./](triggers|reformat)|checkers[./](invariants|membership))\b"]
    return patterns


def naming_lines() -> Counter[str]:
    found = [re.compile(p) for p in raft_only_names()]
    counts: Counter[str] = Counter()
    for top in CORE:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            for line in path.read_text().splitlines():
                if any(p.search(line) for p in found):
                    counts[rel] += 1
    return counts


def test_the_core_names_nothing_raft_only_beyond_what_is_listed():
    over = {f: n for f, n in naming_lines().items() if n > ALLOWED.get(f, (0, ""))[0]}
    assert over == {}, ("lines naming raft-only things in the generic core; "
                        "move them to nodes/raft: " + repr(over))


def test_every_allowance_is_still_needed():
    counts = naming_lines()
    assert {f: n for f, (n, _) in ALLOWED.items() if counts.get(f, 0) < n} == {}


def test_the_check_sees_a_raft_name():
    found = [re.compile(p) for p in raft_only_names()]
    for line in ("from nodes.raft.events import VOTE", "spec = 'lose-state'",
                 "if ev['event'] == 'data_loss':", "# the KRaft store", "FAST_FAILOVER.name",
                 "checker = 'invariants'", "see nemesis/triggers.py"):
        assert any(p.search(line) for p in found), line
    assert not any(p.search("kill the leader; restart after truncate") for p in found)
