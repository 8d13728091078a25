"""Workloads by name."""

from __future__ import annotations

from workloads import kv, list_append, log, register, rw_register
from workloads.contract import Workload

_ALL: tuple[Workload, ...] = (register, kv, list_append, log, rw_register)
WORKLOADS: dict[str, Workload] = {m.NAME: m for m in _ALL}


def get(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; choose from "
                         f"{', '.join(sorted(WORKLOADS))}") from None
