"""What a generator yields: an operation to invoke, before it has a process or time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class OpSpec:
    f: str
    value: Any = None
    key: Any = None


class UniqueValues:
    """Integers never handed out twice in a run, so a read names its writer."""

    def __init__(self) -> None:
        self._next = 1

    def take(self) -> int:
        v = self._next
        self._next += 1
        return v
