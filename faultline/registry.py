"""Systems by name: the `faultline.systems` entry points, the built-ins, and
`package.module:NAME` specs. The only place a system is looked up."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from checkers import plugin_trust
from faultline.system import System

GROUP = "faultline.systems"


class UnknownSystem(ValueError):
    """One sentence naming the systems there are."""


# The systems' refusal is every plug-in's (checkers.plugin_trust: one rule).
UntrustedSystem = plugin_trust.UntrustedPlugin


@cache
def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def names() -> list[str]:
    """Every registered system's name, without importing any plugin."""
    from faultline.builtin import SYSTEMS
    return sorted({s.name for s in SYSTEMS} | set(_entry_points()))


def _unknown(name: str) -> UnknownSystem:
    return UnknownSystem(f"unknown system {name!r}: choose one of {', '.join(names())} "
                         "or give package.module:NAME")


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
    raise _unknown(name)


def installed_source(name: str, untrusted: Sequence[Path]) -> str:
    """Where system `name` would be loaded from, without importing it: a
    built-in, an installed distribution's entry point or an installed module.
    Raises UntrustedSystem when it would come from the current directory or
    from within `untrusted` (a run dir someone sent), UnknownSystem when
    from nowhere."""
    untrusted = [d.resolve() for d in untrusted]
    try:
        if ":" in name:
            return plugin_trust.module_source(name.partition(":")[0], untrusted,
                                              f"system {name}")
        eps = plugin_trust.installed_entry_points(GROUP, untrusted)
        if name not in eps and name in _entry_points():
            raise plugin_trust.refuse_undeclared(_entry_points()[name], f"system {name}")
        if name in eps:
            return plugin_trust.entry_point_source(eps[name], untrusted, f"system {name}")
    except ModuleNotFoundError as e:
        raise UnknownSystem(str(e)) from None
    from faultline.builtin import SYSTEMS
    if any(s.name == name for s in SYSTEMS):
        return "built in"
    raise _unknown(name)
