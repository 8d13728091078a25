"""Options as metadata: each workload declares one table of its options (name,
kind, default, help). Its generator reads them through `resolve`, run config
validation checks them by kind, and the CLI's help and `faultline systems`
print them, all from that one table."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# An option's number is at most this big: no node or client option means
# anything past 64 bits, and a huge one (a timeout of 1e308) only breaks
# what is built from it.
MAX_NUMBER = 2**63 - 1


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -MAX_NUMBER <= v <= MAX_NUMBER


def _number(v: Any) -> bool:
    """A finite number (inf and nan are no option's value) within MAX_NUMBER."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and -MAX_NUMBER <= v <= MAX_NUMBER)


# What each kind of option value must be. Node and client option tables name
# these kinds too (`System.node_options`, a client's `OPTIONS`).
OPTION_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "positive-int": (lambda v: _int(v) and v > 0, f"a positive integer up to {MAX_NUMBER}"),
    "non-negative-int": (lambda v: _int(v) and v >= 0,
                         f"a non-negative integer up to {MAX_NUMBER}"),
    "positive-number": (lambda v: _number(v) and v > 0,
                        f"a finite positive number up to {MAX_NUMBER}"),
    "fraction": (lambda v: _number(v) and 0 <= v <= 1, "a number from 0 to 1"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "int": (_int, f"an integer from -{MAX_NUMBER} to {MAX_NUMBER}"),
    "string": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "string-list": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                    "a list of strings"),
    # Names of the run's own nodes (n1, n2, ...): the run checks they exist.
    "node-names": (lambda v: isinstance(v, list) and bool(v)
                   and all(isinstance(x, str) for x in v), "a non-empty list of node names"),
}
NODE_NAMES = "node-names"
# A kind naming its values: "one-of:read-committed|repeatable-read|serializable".
ONE_OF = "one-of:"


def option_kind(kind: str) -> tuple[Callable[[Any], bool], str]:
    """The test and the description of an option kind: an OPTION_KINDS key, or
    ONE_OF followed by the values allowed, separated by `|`. KeyError for a
    kind that is neither."""
    if kind.startswith(ONE_OF):
        values = tuple(kind[len(ONE_OF):].split("|"))
        return (lambda v: v in values), "one of " + ", ".join(values)
    return OPTION_KINDS[kind]


@dataclass(frozen=True)
class Option:
    name: str
    kind: str          # an OPTION_KINDS key, or ONE_OF values (option_kind)
    default: Any
    help: str

    def __post_init__(self) -> None:
        ok, what = option_kind(self.kind)
        if not ok(self.default):
            raise ValueError(f"option {self.name}: default {self.default!r} is not {what}")

    def problem(self, value: Any) -> str | None:
        """Why `value` cannot be this option's, in one sentence; None if it can."""
        ok, what = option_kind(self.kind)
        return None if ok(value) else f"{self.name} must be {what}, not {value!r}"


def table(*options: Option) -> dict[str, Option]:
    return {o.name: o for o in options}


def kinds(options: Mapping[str, Option]) -> dict[str, str]:
    """name -> kind, the form node and client option tables have."""
    return {name: o.kind for name, o in options.items()}


def resolve(options: Mapping[str, Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option of the table: the given value, else its default (keys the
    table does not name, e.g. the client's, are left out)."""
    return {name: given.get(name, o.default) for name, o in options.items()}


def describe(options: Mapping[str, Option]) -> str:
    """`name=default (help)`, comma-separated: the CLI's help line."""
    return ", ".join(f"{o.name}={o.default} ({o.help})" for o in options.values()) or "none"
