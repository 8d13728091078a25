"""Workloads by name."""

from __future__ import annotations

from types import ModuleType

from workloads import kv, list_append, log, register, rw_register

WORKLOADS: dict[str, ModuleType] = {m.NAME: m for m in (register, kv, list_append, log,
                                                        rw_register)}


def get(name: str) -> ModuleType:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; choose from "
                         f"{', '.join(sorted(WORKLOADS))}") from None
