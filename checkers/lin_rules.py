"""The linearizability search's pruning rules, one function each.

The search (`checkers.linearizability._Search`) is Wing & Gong's with Lowe's
memoization; every rule below only cuts moves that cannot lead to a solution
the search would not find another way, so each keeps every verdict. A
brute-force oracle (tests/checkers/test_lin_oracle.py) and property tests
(tests/checkers/test_lin_property.py) hold that, and tests/checkers/test_lin_rules.py holds each
rule to its own statement. The rules read the search's arrays as they are
(no copies): they are called from its hot loop.

The entries: det op i's call is 2i and its return 2i+1 in a doubly linked
list (`nxt`) in history order; a config is (low, win, state) plus the set of
info ops placed (`iset`, a bitset).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence

from checkers.models import ANY_STATE, NO_STATE, Call, Model

Step = Callable[[Hashable, Call], tuple[bool, Hashable]]


class _Unset:
    def __repr__(self) -> str:
        return "<none>"


# No state: no info op was placed last (for the chain rule), or a call needs
# no particular state (for the sticky-state rule).
NONE = _Unset()


def read_first(nxt: list[int], mutates: list[bool], legal_in: list[Hashable], step: Step,
               calls: list[Call]) -> Callable[[int, Hashable], tuple[int, Hashable] | None]:
    """Rule 1, reads first: a det call that can never change the state (a
    read, a failed cas) and is legal now may be linearized at once, as the
    only move from here: any solution can be reordered to start with it.

    Returns the rule for one search (over its entry list `nxt` and its calls,
    which it reads as they change): given the first entry and the state, (the
    index of such a call before the first return, the state after it), or
    None. A closure, as the search asks it at every new configuration."""
    def scan(entry: int, state: Hashable) -> tuple[int, Hashable] | None:
        e = entry
        while e & 1 == 0:
            j = e >> 1
            if not mutates[j]:
                want = legal_in[j]
                if want is NO_STATE:
                    ok, ns = step(state, calls[j])
                else:
                    ok, ns = want == state, state
                if ok:
                    return j, ns
            e = nxt[e]
        return None

    return scan


def strands_readers(pending: dict[Hashable, int], state: Hashable, own_need: Hashable) -> bool:
    """Rule 2, once-produced states: a state at most one call produces never
    comes back once left, so leaving `state` while a det call that needs it
    (other than the one leaving it, `own_need`) is unplaced is a dead end.
    `pending` counts the unplaced det calls that need each such state."""
    return pending[state] > (1 if own_need == state else 0)


def undone_by_last_info(step: Step, before_info: Hashable, call: Call,
                        result: tuple[bool, Hashable]) -> bool:
    """Rule 3, the chain rule: right after an info op X moved the state from
    `before_info`, a call that would give the same `result` without X makes X
    pointless here (dropping X, which an info op may always be, dominates), so
    the move is cut."""
    return before_info is not NONE and step(before_info, call) == result


def covered(seen: list[int], iset: int) -> bool:
    """Rule 4, dominance: a config already reached with a subset of these info
    ops placed can do everything this one can (an info op may never happen),
    so this one need not be explored."""
    for s in seen:
        if s & ~iset == 0:
            return True
    return False


def info_classes(info_calls: Sequence[Call]) -> tuple[list[list[int]], list[int]]:
    """Rule 5, interchangeable info ops: identical info calls can stand in for
    each other and a later one is available whenever an earlier one is, so
    only the earliest unused one of each class is tried (the used ones are
    always a prefix of the class). Returns the classes' members, in order,
    and each info op's class."""
    members: list[list[int]] = []
    class_of: dict[Call, int] = {}
    cls = [0] * len(info_calls)
    for j, c in enumerate(info_calls):
        k = class_of.setdefault(c, len(members))
        if k == len(members):
            members.append([])
        members[k].append(j)
        cls[j] = k
    return members, cls


def info_by_state(model: Model, info_calls: Sequence[Call], members: list[list[int]]
                  ) -> tuple[list[int], dict[Hashable, list[int]]]:
    """Rule 6, info ops where they can act: a class of info calls that can
    change only one state (a cas, from its old value) is tried only in that
    state. Returns the classes tried anywhere and those tried per state."""
    anywhere: list[int] = []
    by_state: dict[Hashable, list[int]] = {}
    for k, mem in enumerate(members):
        s = model.changes_from(info_calls[mem[0]])
        if s is NO_STATE:
            anywhere.append(k)
        else:
            by_state.setdefault(s, []).append(k)
    return anywhere, by_state


def first_return_hopeless(model: Model, state: Hashable, first_return_call: Call,
                          resets_before: bool) -> bool:
    """Rule 7, dead ends: the op whose return comes first must be linearized
    before anything invoked after that return; if the model says it can never
    become legal from `state` (`resets_before`: whether some op that could
    still go first can reset the state), nothing from here succeeds."""
    return model.dead_end(state, first_return_call, resets_before)


def sticky_states(init: Hashable, produces: list[Hashable]) -> set[Hashable]:
    """The states rule 2 applies to: at most one call (or the start) produces
    each, so once left it never comes back. Empty when some call's product
    cannot be named in advance."""
    if ANY_STATE in produces:
        return set()
    made = Counter(produces)
    made[init] += 1
    return {s for s, n in made.items() if n == 1 and s is not NO_STATE}
