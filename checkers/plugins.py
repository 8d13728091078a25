"""What systems and plug-ins add to a registry through an entry-point group
(`faultline.checkers`, `faultline.faults`): each entry point names one item
or an iterable of them. The registries (checkers.registry, nemesis.base)
load their group with `contributions`; faultline's own systems register
there too (pyproject.toml), so an install whose metadata predates a group
would silently lose them: that is refused, with the command that fixes it."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from typing import TypeVar

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
