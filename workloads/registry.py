"""Workloads by name."""

from __future__ import annotations

from types import ModuleType

from workloads import kv, list_append, log, register

WORKLOADS: dict[str, ModuleType] = {m.NAME: m for m in (register, kv, list_append, log)}


def get(name: str) -> ModuleType:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; choose from "
                         f"{', '.join(sorted(WORKLOADS))}") from None
