"""Systems by name: the `faultline.systems` entry points, the built-ins, and
`package.module:NAME` specs. The only place a system is looked up."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from functools import cache
from importlib.metadata import EntryPoint, distributions, entry_points
from pathlib import Path
from typing import Any

from faultline.system import System

GROUP = "faultline.systems"


class UnknownSystem(ValueError):
    """One sentence naming the systems there are."""


class UntrustedSystem(ValueError):
    """One sentence: the system would be imported from a directory not trusted."""


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


def _within(entry: str, untrusted: Sequence[Path]) -> bool:
    """Whether a sys.path entry is the current directory ('' included) or lies
    in one of the `untrusted` dirs. Only the cwd itself: an installed package
    may well live below it (a venv in the project's checkout)."""
    where = Path(entry or ".").resolve()
    return where == Path.cwd().resolve() or any(where == d or d in where.parents
                                                for d in untrusted)


def _installed_entry_points(untrusted: Sequence[Path]) -> dict[str, Any]:
    """The entry points of the distributions found with the cwd and every
    `untrusted` dir off sys.path: a checkout's own egg-info beside the cwd
    (an editable install's build leaves one there) is not what declares an
    installed package's entry points; its dist-info in site-packages is."""
    trusted = [e for e in sys.path if not _within(e, untrusted)]
    return {ep.name: ep for dist in distributions(path=trusted)
            for ep in dist.entry_points if ep.group == GROUP}


def _installed_spec(top: str, untrusted: Sequence[Path]) -> object | None:
    """How `top` is found with every sys.path entry within `untrusted` left out:
    the installed packages (an editable install's finder included)."""
    trusted = [e for e in sys.path if not _within(e, untrusted)]
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder:
            found = importlib.machinery.PathFinder.find_spec(top, trusted)
        else:
            find = getattr(finder, "find_spec", None)
            found = find(top, None) if find is not None else None
        if found is not None:
            return found
    return None


def _origin(spec: object) -> tuple[object, tuple[str, ...]]:
    return (getattr(spec, "origin", None),
            tuple(getattr(spec, "submodule_search_locations", None) or ()))


def _module_source(module: str, untrusted: Sequence[Path], what: str) -> str:
    """Where `module` would be imported from, found without running any of it.
    Refused unless that is where it is found with the `untrusted` directories
    off sys.path: a name found in one of them (a `msgpack.py` or a plugin
    shipped in a run dir, the cwd) must not run."""
    top = module.split(".")[0]
    if top in sys.modules:   # imported already, from where this process trusts
        return f"module {module} from {getattr(sys.modules[top], '__file__', None) or top}"
    actual = importlib.util.find_spec(top)
    installed = _installed_spec(top, untrusted)
    if actual is None:
        raise UnknownSystem(f"{what}: {top} is not importable here")
    if installed is None or _origin(installed) != _origin(actual):
        origin, locations = _origin(actual)
        raise UntrustedSystem(
            f"{what}: {top} would be imported from {origin or ', '.join(locations)}, "
            f"not from the installed packages; install it (pip install) to load it from there")
    origin, locations = _origin(actual)
    return f"module {module} from {origin or ', '.join(locations)}"


def installed_source(name: str, untrusted: Sequence[Path]) -> str:
    """Where system `name` would be loaded from, without importing it: a
    built-in, an installed distribution's entry point or an installed module.
    Raises UntrustedSystem when it would come from the current directory or
    from within `untrusted` (a run dir someone sent), UnknownSystem when
    from nowhere."""
    untrusted = [d.resolve() for d in untrusted]
    if ":" in name:
        return _module_source(name.partition(":")[0], untrusted, f"system {name}")
    eps = _installed_entry_points(untrusted)
    if name not in eps and name in _entry_points():
        dist = _entry_points()[name].dist
        base = Path(str(dist.locate_file(""))) if dist is not None else None
        raise UntrustedSystem(f"system {name}: its entry point is declared by "
                              f"{base or 'an unknown distribution'}, not an installed package")
    if name in eps:
        ep = eps[name]
        dist = ep.dist
        base = Path(str(dist.locate_file(""))) if dist is not None else None
        if base is None or _within(str(base), untrusted):
            raise UntrustedSystem(f"system {name}: its entry point is declared by "
                                  f"{base or 'an unknown distribution'}, not an installed package")
        where = _module_source(ep.module, untrusted, f"system {name}")
        return f"entry point of {dist.name} {dist.version}: {where}"
    from faultline.builtin import SYSTEMS
    if any(s.name == name for s in SYSTEMS):
        return "built in"
    raise _unknown(name)
