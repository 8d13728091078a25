"""What systems and plug-ins add to a registry through an entry-point group
(`faultline.checkers`, `faultline.faults`): each entry point names one item
or an iterable of them. The registries (checkers.registry, nemesis.base)
load their group with `contributions`; faultline's own systems register
there too (pyproject.toml), so an install whose metadata predates a group
would silently lose them: that is refused, with the command that fixes it.
Only installed packages' entry points load (checkers.plugin_trust, the rule
the systems' follow): one declared from the current directory is refused."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution
from typing import TypeVar

from checkers import plugin_trust

T = TypeVar("T")


class StaleInstall(RuntimeError):
    """faultline's installed metadata lacks an entry-point group its checkout declares."""


def _check_own_metadata(group: str) -> None:
    try:
        own = distribution("faultline")
    except PackageNotFoundError:
        return   # run from a checkout without an install: nothing to compare
    if not any(ep.group == group for ep in own.entry_points):
        raise StaleInstall(f"faultline's installed metadata has no {group} entry points "
                           "(installed before they were added): run `make setup` "
                           "(or pip install -e .) again")


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of `group` that may load: the installed packages'
    only; UntrustedPlugin (one sentence) if one is declared from the current
    directory or its module would be imported from there."""
    return plugin_trust.trusted_entry_points(group, list(metadata.entry_points(group=group)))


def contributions(group: str, kind: type[T]) -> list[T]:
    """Every `kind` the entry points of `group` name, by entry-point name."""
    _check_own_metadata(group)
    out: list[T] = []
    for ep in sorted(entry_points(group=group), key=lambda ep: ep.name):
        loaded = ep.load()
        items: Iterable[object] = (loaded,) if isinstance(loaded, kind) else loaded
        for item in items:
            if not isinstance(item, kind):
                raise TypeError(f"entry point {ep.name!r} of {group} gives a "
                                f"{type(item).__name__}, not a {kind.__module__}.{kind.__name__}")
            out.append(item)
    return out
