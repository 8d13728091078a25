"""Whether a plug-in named by an entry point may be loaded, decided before
any of its code runs: only from the installed packages, never from the
current directory (`python -m` and `python -c` put it first on sys.path)
nor from a directory not trusted (a run dir someone sent). One rule for
every group: the systems' (faultline.registry), the faults' and the
checkers' (checkers.plugins)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, distributions
from pathlib import Path


class UntrustedPlugin(ValueError):
    """One sentence: the plug-in would be imported from a directory not trusted."""


def within(entry: str, untrusted: Sequence[Path]) -> bool:
    """Whether a sys.path entry is the current directory ('' included) or lies
    in one of the `untrusted` dirs. Only the cwd itself: an installed package
    may well live below it (a venv in the project's checkout)."""
    where = Path(entry or ".").resolve()
    return where == Path.cwd().resolve() or any(where == d or d in where.parents
                                                for d in untrusted)


def _trusted_path(untrusted: Sequence[Path]) -> list[str]:
    return [e for e in sys.path if not within(e, untrusted)]


def installed_entry_points(group: str, untrusted: Sequence[Path]) -> dict[str, EntryPoint]:
    """The entry points of `group` of the distributions found with the cwd and
    every `untrusted` dir off sys.path: a checkout's own egg-info beside the
    cwd (an editable install's build leaves one there) is not what declares
    an installed package's entry points; its dist-info in site-packages is."""
    return {ep.name: ep for dist in distributions(path=_trusted_path(untrusted))
            for ep in dist.entry_points if ep.group == group}


def _installed_spec(top: str, untrusted: Sequence[Path]) -> object | None:
    """How `top` is found with every sys.path entry within `untrusted` left out:
    the installed packages (an editable install's finder included)."""
    trusted = _trusted_path(untrusted)
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


def module_source(module: str, untrusted: Sequence[Path], what: str) -> str:
    """Where `module` would be imported from, found without running any of it
    (ModuleNotFoundError when nowhere). Refused unless that is where it is
    found with the `untrusted` directories off sys.path: a name found in one
    of them (a `msgpack.py` or a plugin shipped in a run dir, the cwd) must
    not run."""
    top = module.split(".")[0]
    if top in sys.modules:   # imported already, from where this process trusts
        return f"module {module} from {getattr(sys.modules[top], '__file__', None) or top}"
    actual = importlib.util.find_spec(top)
    if actual is None:
        raise ModuleNotFoundError(f"{what}: {top} is not importable here")
    installed = _installed_spec(top, untrusted)
    origin, locations = _origin(actual)
    if installed is None or _origin(installed) != (origin, locations):
        raise UntrustedPlugin(
            f"{what}: {top} would be imported from {origin or ', '.join(locations)}, "
            f"not from the installed packages; install it (pip install) to load it from there")
    return f"module {module} from {origin or ', '.join(locations)}"


def _declared_by(ep: EntryPoint) -> Path | None:
    return Path(str(ep.dist.locate_file(""))).resolve() if ep.dist is not None else None


def refuse_undeclared(ep: EntryPoint, what: str) -> UntrustedPlugin:
    """The refusal of an entry point no installed distribution declares."""
    return UntrustedPlugin(f"{what}: its entry point is declared by "
                           f"{_declared_by(ep) or 'an unknown distribution'}, "
                           "not an installed package")


def entry_point_source(ep: EntryPoint, untrusted: Sequence[Path], what: str) -> str:
    """Where an installed entry point (one of `installed_entry_points`) would be
    loaded from, without importing it; UntrustedPlugin when its distribution
    or its module lies in the cwd or within `untrusted`."""
    base = _declared_by(ep)
    if base is None or within(str(base), untrusted):
        raise refuse_undeclared(ep, what)
    where = module_source(ep.module, untrusted, what)
    dist = ep.dist
    assert dist is not None
    return f"entry point of {dist.name} {dist.version}: {where}"


def trusted_entry_points(group: str, found: Sequence[EntryPoint],
                         untrusted: Sequence[Path] = ()) -> list[EntryPoint]:
    """The installed entry points of `group`, each checked, by name; refused
    (UntrustedPlugin) if any of `found` (every one on sys.path) is declared
    only from the cwd or within `untrusted`: one planted there must not run,
    nor pass unnoticed."""
    untrusted = [d.resolve() for d in untrusted]
    installed = installed_entry_points(group, untrusted)
    for ep in found:
        if installed.get(ep.name) is None or installed[ep.name].value != ep.value:
            raise refuse_undeclared(ep, f"{group} entry point {ep.name!r}")
    for ep in installed.values():
        entry_point_source(ep, untrusted, f"{group} entry point {ep.name!r}")
    return sorted(installed.values(), key=lambda ep: ep.name)
