"""What a fault is, for the faults and for the registry that names them: the
`Fault` interface, the context a fault factory gets, and fault spec names.
Below every fault module and the registry (nemesis.base), so none of them
imports another back."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class Fault(Protocol):
    name: str

    def inject(self, cluster: Any, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]: ...

    def heal(self, cluster: Any) -> dict[str, Any]: ...


@dataclass
class FaultContext:
    """What a fault factory may need from the run: the DB adapter, and
    anything else a run prepared (e.g. `mounts`: node -> LazyFS)."""
    db: Any = None
    variant: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


FaultFactory = Callable[[FaultContext], Fault]


def split_spec(spec: str) -> tuple[str, str | None]:
    """`"partition:one-way"` -> (`"partition"`, `"one-way"`)."""
    name, _, variant = spec.partition(":")
    return name, (variant or None)
