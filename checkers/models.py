"""Sequential specifications for the linearizability search.

A model turns each client operation into a compact call (a tuple the search
can step cheaply and hash), says whether the call is determinate ("det": it
certainly happened, or its failure is evidence) or indeterminate ("info": it
may take effect at any point after its invoke, or never), and steps a state.
States are hashable values, so the search can memoize (linearized set, state).

Calls are tuples whose first element is an opcode; `step` returns
(legal, new_state) and never raises for a well-formed call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from checkers.history import Op

DET = "det"
INFO = "info"

# Register opcodes.
READ, WRITE, CAS, CAS_FAILED, CAS_MAYBE, READ_ANY = range(6)
_PRODUCING = frozenset({WRITE, CAS, CAS_MAYBE})
_SEEING = frozenset({READ, CAS})
_CAS_PRODUCING = frozenset({CAS, CAS_MAYBE})
_OBSERVING = frozenset({READ, CAS, CAS_FAILED, CAS_MAYBE})   # calls that compare the value
# kv opcodes.
GET, PUT, APPEND = range(3)
# mutex opcodes.
ACQUIRE, RELEASE = range(2)

# Failed cas completions whose error says the comparison itself failed. Any
# other error (not_leader, bad_request, ...) means the request never reached
# the register, so it says nothing about the value.
CAS_MISMATCH_ERRORS = frozenset({None, "cas_mismatch", "cas-mismatch", "mismatch"})

Call = tuple
Interpretation = tuple[Call, str] | None


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# `Model.needs` of a call legal in more than one state, `changes_from` of one
# that can change more than one, `produces` of one that never changes it.
NO_STATE: Any = _Marker("<no state>")
# `Model.produces` of a call whose new state the model cannot name in advance.
ANY_STATE: Any = _Marker("<any state>")


class ModelError(ValueError):
    """An op the model has no meaning for (wrong f for the model, malformed value)."""


_SCALARS = frozenset({int, str, type(None), float, bool, bytes})


def _freeze(v: Any) -> Hashable:
    # Values come from msgpack/EDN and may be lists; states must be hashable.
    if v.__class__ in _SCALARS:
        return v
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def _pair(value: Any, op: Op) -> tuple[Hashable, Hashable]:
    if value.__class__ is list and len(value) == 2:
        old, new = value
        if old.__class__ in _SCALARS and new.__class__ in _SCALARS:
            return old, new
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ModelError(f"op {op.index}: cas value must be [old, new], not {value!r:.60}")
    return _freeze(value[0]), _freeze(value[1])


@dataclass(frozen=True)
class Model:
    """Base: subclasses define interpret/step; `by_key` makes the model
    P-compositional (each key is checked on its own)."""

    name: str
    by_key: bool = False

    # Options a user may set on this model (`get_model(name, {option: value})`).
    OPTIONS: ClassVar[tuple[str, ...]] = ()

    def init(self) -> Hashable:
        return None

    def operations(self) -> frozenset[str]:
        """The op `f`s this model gives a meaning to; a history with others does
        not fit it."""
        raise NotImplementedError

    def interpret(self, invoke: Op, completion: Op | None) -> Interpretation:
        raise NotImplementedError

    def step(self, state: Hashable, call: Call) -> tuple[bool, Hashable]:
        raise NotImplementedError

    def partition_key(self, op: Op) -> Hashable:
        if not self.by_key:
            return None
        k = op.key
        return k if k.__class__ in _SCALARS else _freeze(k)

    def relevant_infos(self, det: list[Call], info: list[Call]) -> list[bool]:
        """Which info calls could ever matter; the rest are dropped before the search.
        The default keeps all of them."""
        return [True] * len(info)

    def witnessed(self, det: list[Call], info: list[Call]
                  ) -> list[tuple[Call, list[int]] | None]:
        """For each info call that certainly took effect, the determinate call
        it amounts to and the det calls that saw its effect (so it took effect
        before each of them returned); None where that is not known. The
        search then treats it as determinate with that deadline, instead of
        an op that may land anywhere in the rest of the history. Default:
        nothing is known."""
        return [None] * len(info)

    def canonical(self, det: list[Call], info: list[Call]) -> tuple[list[Call], list[Call]]:
        """The calls with states that no op can tell apart merged into one, so the
        search's cache and its symmetry rule see them as the same. Default: as is."""
        return det, info

    def resets(self, call: Call) -> bool:
        """Whether `call` can set the state regardless of what it was."""
        return True

    def mutates(self, call: Call) -> bool:
        """Whether `call` can ever change the state. A call that cannot, and is
        legal now, may be linearized at once without losing any solution, so
        the search never branches over it. Default: every call may."""
        return True

    def needs(self, call: Call) -> Hashable:
        """The one state in which `call` is legal, or NO_STATE."""
        return NO_STATE

    def changes_from(self, call: Call) -> Hashable:
        """The one state from which `call` can change the state, or NO_STATE;
        the search tries an indeterminate call only in that state."""
        return NO_STATE

    def produces(self, call: Call) -> Hashable:
        """The state `call` leaves when it changes the state: NO_STATE if it
        never does, ANY_STATE if that depends on the state before (the default).
        With every call's product named, a state only one call produces can
        never come back once left, and the search prunes leaving it while a
        call that needs it is still to be placed."""
        return ANY_STATE

    def facts(self, calls: list[Call]) -> tuple[list[bool], list[Hashable], list[Hashable]]:
        """`mutates`, `needs` and `produces` of each call. The search asks them of
        every op of a partition before it starts, so a model may answer in bulk
        (for speed only: an override must agree with the three methods)."""
        return ([self.mutates(c) for c in calls], [self.needs(c) for c in calls],
                [self.produces(c) for c in calls])

    def dead_end(self, state: Hashable, call: Call, resets_pending: bool) -> bool:
        """Whether `call` can never become legal from `state`, given whether an op
        that resets the state may still run first. Models that cannot tell leave
        this undefined and the search skips the check."""
        return False

    def describe(self, call: Call) -> str:
        return repr(call)


@dataclass(frozen=True)
class RegisterModel(Model):
    """A single register (per key when `by_key`): read / write / cas.

    flavour "etcd": a failed cas (compare mismatch) is evidence the value
    differed at some point in its window; a nil read is legal only while the
    register was never written. flavour "knossos": failed ops are dropped and
    a nil read is always legal (Knossos reads nil as "value unknown").
    """

    allow_cas: bool = True
    flavour: str = "etcd"
    # The value before any write: nil for our systems and Jepsen's, 0 in
    # Knossos's own test harness.
    initial: Hashable = None

    OPTIONS: ClassVar[tuple[str, ...]] = ("initial",)

    def init(self) -> Hashable:
        return self.initial

    def operations(self) -> frozenset[str]:
        return frozenset({"read", "write", "cas"} if self.allow_cas else {"read", "write"})

    def interpret(self, invoke: Op, completion: Op | None) -> Interpretation:
        status = completion.type if completion is not None else "info"
        f = invoke.f
        if f == "read":
            if completion is None or status != "ok":
                return None  # an unanswered read constrains nothing
            value = completion.value
            if value.__class__ not in _SCALARS:
                value = _freeze(value)
            elif value is None and self.flavour == "knossos":
                return (READ_ANY,), DET
            return (READ, value), DET
        if f == "write":
            if status == "fail":
                return None
            value = invoke.value
            if value.__class__ not in _SCALARS:
                value = _freeze(value)
            return (WRITE, value), (DET if status == "ok" else INFO)
        if f == "cas" and self.allow_cas:
            old, new = _pair(invoke.value, invoke)
            if status == "ok":
                return (CAS, old, new), DET
            if status == "info":
                return (CAS_MAYBE, old, new), INFO
            if (self.flavour == "etcd" and completion is not None
                    and completion.error in CAS_MISMATCH_ERRORS):
                return (CAS_FAILED, old, new), DET
            return None
        raise ModelError(f"op {invoke.index}: model {self.name!r} has no operation {f!r}")

    def step(self, state: Hashable, call: Call) -> tuple[bool, Hashable]:
        code = call[0]
        if code == READ:
            return state == call[1], state
        if code == WRITE:
            return True, call[1]
        if code == CAS:
            return (True, call[2]) if state == call[1] else (False, state)
        if code == CAS_FAILED:
            return state != call[1], state
        if code == CAS_MAYBE:
            return True, (call[2] if state == call[1] else state)
        return True, state  # READ_ANY

    def relevant_infos(self, det: list[Call], info: list[Call]) -> list[bool]:
        # An indeterminate write whose value nobody ever observes can only
        # matter by making a failed cas's "value differed" hold; without such
        # evidence in the partition it is dead weight for the search.
        if any(c[0] == CAS_FAILED for c in det):
            return [True] * len(info)
        observed = _observed(det + info)
        return [(c[1] if c[0] == WRITE else c[2]) in observed for c in info]

    def witnessed(self, det: list[Call], info: list[Call]
                  ) -> list[tuple[Call, list[int]] | None]:
        # A value only one op ever produces, seen by a completed read or cas:
        # that op took effect, before the reader's linearization point. (With
        # two producers of a value, or the initial value, nobody can say which.)
        if not info:
            return []
        producers = Counter([c[1] if c[0] == WRITE else c[2] for c in (*det, *info)
                             if c[0] in _PRODUCING])
        wanted = {c[1] if c[0] == WRITE else c[2] for c in info}
        seen_by: dict[Hashable, list[int]] = {}
        for j, c in enumerate(det):
            if c[0] in _SEEING and c[1] in wanted:
                seen_by.setdefault(c[1], []).append(j)
        out: list[tuple[Call, list[int]] | None] = []
        for c in info:
            value = c[1] if c[0] == WRITE else c[2]
            seers = seen_by.get(value)
            if (value is None or value == self.init() or producers[value] != 1
                    or not seers or (c[0] == CAS_MAYBE and c[1] == c[2])):
                out.append(None)
            else:
                out.append(((WRITE, value) if c[0] == WRITE else (CAS, c[1], c[2]), seers))
        return out

    def mutates(self, call: Call) -> bool:
        return call[0] in (WRITE, CAS, CAS_MAYBE)

    def needs(self, call: Call) -> Hashable:
        return call[1] if call[0] in (READ, CAS) else NO_STATE

    def changes_from(self, call: Call) -> Hashable:
        return call[1] if call[0] in (CAS, CAS_MAYBE) else NO_STATE

    def produces(self, call: Call) -> Hashable:
        code = call[0]
        if code == WRITE:
            return call[1]
        return call[2] if code in (CAS, CAS_MAYBE) else NO_STATE

    def facts(self, calls: list[Call]) -> tuple[list[bool], list[Hashable], list[Hashable]]:
        return ([c[0] in _PRODUCING for c in calls],
                [c[1] if c[0] in _SEEING else NO_STATE for c in calls],
                [c[1] if c[0] == WRITE else c[2] if c[0] in _PRODUCING else NO_STATE
                 for c in calls])

    def canonical(self, det: list[Call], info: list[Call]) -> tuple[list[Call], list[Call]]:
        # A value nobody reads or compares against behaves like any other such
        # value under every op (reads and cas fail, failed cas holds), so all
        # of them become one state.
        calls = det + info
        observed = _observed(calls)
        observed.add(None)
        unseen = {c[1] if c[0] == WRITE else c[2] for c in calls if c[0] in _PRODUCING}
        unseen -= observed
        if not unseen:
            return det, info
        return _unobserved(det, unseen), _unobserved(info, unseen)

    def describe(self, call: Call) -> str:
        code = call[0]
        if code == READ:
            return f"read -> {call[1]!r}"
        if code == READ_ANY:
            return "read -> nil (unknown)"
        if code == WRITE:
            return f"write {call[1]!r}"
        tag = {CAS: "", CAS_FAILED: " (failed)", CAS_MAYBE: " (maybe)"}[code]
        return f"cas {call[1]!r}->{call[2]!r}{tag}"


class _Unobserved:
    def __repr__(self) -> str:
        return "<a value nobody observed>"


UNOBSERVED = _Unobserved()


def _unobserved(calls: list[Call], unseen: set) -> list[Call]:
    """`calls` with every produced value in `unseen` replaced by UNOBSERVED."""
    return [(WRITE, UNOBSERVED) if c[0] == WRITE and c[1] in unseen
            else (c[0], c[1], UNOBSERVED) if c[0] in _CAS_PRODUCING and c[2] in unseen
            else c for c in calls]


def _observed(calls: list[Call]) -> set:
    """Values some op reads or compares against."""
    return {c[1] for c in calls if c[0] in _OBSERVING}


@dataclass(frozen=True)
class KVModel(Model):
    """Porcupine's kv store, one string per key: get / put / append; "" at start."""

    def init(self) -> Hashable:
        return ""

    def operations(self) -> frozenset[str]:
        return frozenset({"get", "put", "append"})

    def interpret(self, invoke: Op, completion: Op | None) -> Interpretation:
        status = completion.type if completion is not None else "info"
        f = invoke.f
        if f == "get":
            if completion is None or status != "ok":
                return None
            value = completion.value
            return (GET, "" if value is None else value), DET
        if f in ("put", "append"):
            if status == "fail":
                return None
            code = PUT if f == "put" else APPEND
            return (code, invoke.value or ""), (DET if status == "ok" else INFO)
        raise ModelError(f"op {invoke.index}: model {self.name!r} has no operation {f!r}")

    def step(self, state: Hashable, call: Call) -> tuple[bool, Hashable]:
        code = call[0]
        if code == GET:
            return state == call[1], state
        if code == PUT:
            return True, call[1]
        return True, state + call[1]

    def resets(self, call: Call) -> bool:
        return call[0] == PUT

    def mutates(self, call: Call) -> bool:
        return call[0] != GET

    def needs(self, call: Call) -> Hashable:
        return call[1] if call[0] == GET else NO_STATE

    def produces(self, call: Call) -> Hashable:
        return call[1] if call[0] == PUT else ANY_STATE if call[0] == APPEND else NO_STATE

    def dead_end(self, state: Hashable, call: Call, resets_pending: bool) -> bool:
        # Appends only extend the string: until a put runs, a get can only
        # ever see something that starts with the current value.
        return call[0] == GET and not resets_pending and not call[1].startswith(state)

    def describe(self, call: Call) -> str:
        name = ("get ->", "put", "append")[call[0]]
        return f"{name} {call[1]!r}"


@dataclass(frozen=True)
class MutexModel(Model):
    """A lock: acquire succeeds only when free, release only by the holder."""

    def operations(self) -> frozenset[str]:
        return frozenset({"acquire", "release"})

    def interpret(self, invoke: Op, completion: Op | None) -> Interpretation:
        status = completion.type if completion is not None else "info"
        if invoke.f not in ("acquire", "release"):
            raise ModelError(f"op {invoke.index}: model {self.name!r} has no operation "
                             f"{invoke.f!r}")
        if status == "fail":
            return None
        code = ACQUIRE if invoke.f == "acquire" else RELEASE
        return (code, invoke.process), (DET if status == "ok" else INFO)

    def changes_from(self, call: Call) -> Hashable:
        return None if call[0] == ACQUIRE else call[1]

    def step(self, state: Hashable, call: Call) -> tuple[bool, Hashable]:
        if call[0] == ACQUIRE:
            return (True, call[1]) if state is None else (False, state)
        return (True, None) if state == call[1] else (False, state)

    def describe(self, call: Call) -> str:
        return f"{'acquire' if call[0] == ACQUIRE else 'release'} by {call[1]!r}"


# Multi-register micro-op codes.
MREAD, MWRITE = range(2)
_MOP_CODES = {"read": MREAD, "r": MREAD, "write": MWRITE, "w": MWRITE}


@dataclass(frozen=True)
class MultiRegisterModel(Model):
    """Knossos's multi-register: a txn of reads and writes over several
    registers, applied atomically in order. The state is the registers'
    values as a sorted tuple of (key, value); a register never written reads
    nil. As in Knossos, a read that returned nil is unknown and constrains
    nothing, and a failed txn is dropped."""

    # The registers' values before any txn, as a {key: value} map (or pairs).
    initial: Any = None

    OPTIONS: ClassVar[tuple[str, ...]] = ("initial",)

    def operations(self) -> frozenset[str]:
        return frozenset({"txn"})

    def init(self) -> Hashable:
        pairs = dict(self.initial).items() if self.initial else ()
        return tuple(sorted(((_freeze(k), _freeze(v)) for k, v in pairs if v is not None),
                            key=repr))

    def interpret(self, invoke: Op, completion: Op | None) -> Interpretation:
        status = completion.type if completion is not None else "info"
        if invoke.f != "txn":
            raise ModelError(f"op {invoke.index}: model {self.name!r} has no operation "
                             f"{invoke.f!r}")
        if status == "fail":
            return None
        value = completion.value if completion is not None and status == "ok" else invoke.value
        if not isinstance(value, (list, tuple)):
            raise ModelError(f"op {invoke.index}: a txn's value must be a list of "
                             f"[f, key, value], not {value!r:.60}")
        mops = []
        for mop in value:
            if (not isinstance(mop, (list, tuple)) or len(mop) != 3
                    or mop[0] not in _MOP_CODES):
                raise ModelError(f"op {invoke.index}: bad micro-op {mop!r:.60}: want "
                                 "[read|write, key, value]")
            code = _MOP_CODES[mop[0]]
            v = _freeze(mop[2])
            if code == MREAD and (v is None or status != "ok"):
                continue  # a read whose value is unknown says nothing
            mops.append((code, _freeze(mop[1]), v))
        if status == "ok" and not mops:
            return None   # reads of nil only: legal anywhere
        if status != "ok" and not any(m[0] == MWRITE for m in mops):
            return None   # an indeterminate txn that writes nothing changes nothing
        return (tuple(mops),), (DET if status == "ok" else INFO)

    def step(self, state: Any, call: Call) -> tuple[bool, Hashable]:
        # `state`: init()'s sorted tuple of (key, value) pairs, or one step() made.
        regs = dict(state)
        wrote = False
        for code, k, v in call[0]:
            if code == MREAD:
                if regs.get(k) != v:
                    return False, state
            else:
                regs[k] = v
                wrote = True
        if not wrote:
            return True, state
        return True, tuple(sorted(((k, v) for k, v in regs.items() if v is not None),
                                  key=repr))

    def mutates(self, call: Call) -> bool:
        return any(code == MWRITE for code, _, _ in call[0])

    def describe(self, call: Call) -> str:
        return "txn " + " ".join(f"{'r' if c == MREAD else 'w'}({k!r} {v!r})"
                                 for c, k, v in call[0])


MODELS: dict[str, Model] = {
    "register": RegisterModel("register", allow_cas=False),
    "cas-register": RegisterModel("cas-register"),
    "cas-register-etcd": RegisterModel("cas-register-etcd"),
    "cas-register-knossos": RegisterModel("cas-register-knossos", flavour="knossos"),
    "register-kv": RegisterModel("register-kv", by_key=True),
    "register-kv-knossos": RegisterModel("register-kv-knossos", by_key=True,
                                         flavour="knossos"),
    "kv": KVModel("kv", by_key=True),
    "mutex": MutexModel("mutex"),
    "multi-register": MultiRegisterModel("multi-register"),
}


def get_model(name: str, options: dict[str, Any] | None = None) -> Model:
    """The named model, with `options` (see each model's OPTIONS) set."""
    try:
        model = MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}") from None
    if not options:
        return model
    unknown = sorted(set(options) - set(model.OPTIONS))
    if unknown:
        raise ModelError(f"model {name!r} has no option {unknown[0]!r}"
                         + (f"; it has {', '.join(model.OPTIONS)}" if model.OPTIONS else ""))
    if "initial" in options:
        options = {**options, "initial": _freeze(options["initial"])}
    return replace(model, **options)
