"""Each pruning rule of the linearizability search on its own (issue 32): the
move it must cut, and the twin it must leave. The oracle and property tests
(test_linearizability_oracle.py, test_lin_property.py) hold that together they
keep every verdict."""

from __future__ import annotations

from checkers.lin_rules import (
    NONE,
    covered,
    first_return_hopeless,
    info_by_state,
    info_classes,
    read_first,
    sticky_states,
    strands_readers,
    undone_by_last_info,
)
from checkers.models import ANY_STATE, CAS_MAYBE, GET, MODELS, NO_STATE, READ, WRITE

REGISTER = MODELS["cas-register"]
KV = MODELS["kv"]


def linked(entries: list[int]) -> tuple[int, list[int]]:
    """A `nxt` list threading `entries` from a head sentinel, and the first entry."""
    nxt = [-1] * (max(entries) + 2)
    head = len(nxt) - 1
    last = head
    for e in entries:
        nxt[last] = e
        last = e
    nxt[last] = -1
    return nxt[head], nxt


def test_read_first_places_a_legal_read_and_only_before_the_first_return():
    calls = [(WRITE, 1), (READ, 0), (READ, 5)]
    mutates, needs, _ = REGISTER.facts(calls)
    legal_in = [NO_STATE if m else s for s, m in zip(needs, mutates, strict=True)]
    # Calls 0, 1, 2 open, then returns: the read of 0 is legal in state 0.
    entry, nxt = linked([0, 2, 4, 1, 3, 5])
    scan = read_first(nxt, mutates, legal_in, REGISTER.step, calls)
    assert scan(entry, 0) == (1, 0)
    # In state 5 the read of 5 goes first instead.
    assert scan(entry, 5) == (2, 5)
    # Twin: no read is legal in state 7, and a write is never placed by this rule.
    assert scan(entry, 7) is None
    # Twin: the read of 0 returns (entry 3) before the read of 5 is called.
    entry, nxt = linked([0, 2, 3, 4, 1, 5])
    assert read_first(nxt, mutates, legal_in, REGISTER.step, calls)(entry, 5) is None


def test_strands_readers_counts_the_unplaced_readers_other_than_the_mover():
    assert strands_readers({1: 1}, 1, NONE)          # a reader of 1 left behind
    assert not strands_readers({1: 1}, 1, 1)         # the mover is that reader (a cas from 1)
    assert strands_readers({1: 2}, 1, 1)             # one more besides it
    assert not strands_readers({1: 0}, 1, NONE)


def test_undone_by_last_info_cuts_a_move_the_info_op_made_pointless():
    # After an info write of 2 from state 1, a write of 3 gives (True, 3) either
    # way: the info write could be dropped, so the move is cut.
    assert undone_by_last_info(REGISTER.step, 1, (WRITE, 3), (True, 3))
    # Twin: a read of 2 needs the info write (from 1 it would fail).
    assert not undone_by_last_info(REGISTER.step, 1, (READ, 2), (True, 2))
    # Twin: no info op was placed last.
    assert not undone_by_last_info(REGISTER.step, NONE, (WRITE, 3), (True, 3))


def test_covered_by_a_subset_of_info_ops_only():
    assert covered([0b01], 0b11)                     # seen with fewer info ops
    assert covered([0b10, 0], 0b01)                  # the empty set covers all
    assert not covered([0b01], 0b10)                 # a different set
    assert not covered([0b111], 0b011)               # seen with more: not covering
    assert not covered([], 0)


def test_info_classes_group_identical_calls_in_order():
    calls = [(WRITE, 1), (WRITE, 2), (WRITE, 1), (CAS_MAYBE, 1, 3), (WRITE, 1)]
    members, cls = info_classes(calls)
    assert members == [[0, 2, 4], [1], [3]]
    assert cls == [0, 1, 0, 2, 0]
    assert info_classes([]) == ([], [])


def test_info_by_state_tries_a_cas_only_from_its_old_value():
    calls = [(WRITE, 1), (CAS_MAYBE, 1, 3), (CAS_MAYBE, 2, 4), (CAS_MAYBE, 1, 3)]
    members, _ = info_classes(calls)
    anywhere, by_state = info_by_state(REGISTER, calls, members)
    assert anywhere == [0]
    assert by_state == {1: [1], 2: [2]}


def test_first_return_hopeless_asks_the_model():
    # kv: appends only extend; a get of "ab" can never follow state "x" unless a put resets.
    assert first_return_hopeless(KV, "x", (GET, "ab"), False)
    assert not first_return_hopeless(KV, "x", (GET, "ab"), True)
    assert not first_return_hopeless(KV, "a", (GET, "ab"), False)
    # A model that cannot tell never calls it hopeless.
    assert not first_return_hopeless(REGISTER, 9, (READ, 1), False)


def test_sticky_states_are_produced_at_most_once():
    assert sticky_states(0, [1, 2, 2, NO_STATE]) == {0, 1}
    assert sticky_states(None, [None]) == set()              # the start made again
    assert sticky_states(0, [1, ANY_STATE]) == set()         # a product nobody can name
