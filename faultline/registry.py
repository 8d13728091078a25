"""Systems by name: the `faultline.systems` entry points, the built-ins, and
`package.module:NAME` specs. The only place a system is looked up."""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points

from faultline.system import System

GROUP = "faultline.systems"


class UnknownSystem(ValueError):
    """One sentence naming the systems there are."""


@cache
def _entry_points() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def names() -> list[str]:
    """Every registered system's name, without importing any plugin."""
    from faultline.builtin import SYSTEMS
    return sorted({s.name for s in SYSTEMS} | set(_entry_points()))


def _check(obj: object, where: str) -> System:
    if not isinstance(obj, System):
        raise UnknownSystem(f"{where} is a {type(obj).__name__}, not a faultline System")
    return obj


def load_spec(spec: str) -> System:
    """`package.module:NAME` -> the System object it names."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownSystem(f"cannot import {module_name!r} for --system {spec}: {e}") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise UnknownSystem(f"{module_name} has no {attr!r} (--system {spec})") from None
    return _check(obj, spec)


@cache
def get(name: str) -> System:
    """A system by registered name or by `package.module:NAME`."""
    if ":" in name:
        return load_spec(name)
    eps = _entry_points()
    if name in eps:
        system = _check(eps[name].load(), f"entry point {name!r}")
        if system.name != name:
            raise UnknownSystem(f"entry point {name!r} names a System called {system.name!r}")
        return system
    from faultline.builtin import SYSTEMS  # an install whose metadata predates the entry points
    for system in SYSTEMS:
        if system.name == name:
            return system
    raise UnknownSystem(f"unknown system {name!r}: choose one of {', '.join(names())} "
                        "or give package.module:NAME")
