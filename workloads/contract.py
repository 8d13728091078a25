"""What a workload is: a module (or any object) with these members. The
registry (`workloads.registry.WORKLOADS`) holds them typed so; what a workload
may add is its own runtime-checkable Protocol, asked with `isinstance`."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from checkers.registry import Checker
from workloads.ops import OpShape, OpSpec
from workloads.options import Option


class Workload(Protocol):
    """NAME: what `--workload` and run.json call it. DATA: the data type its
    ops act on (`checkers.datatypes`), which picks the clients that serve it.
    OPTIONS: its `--client-option` keys. CHECKERS: what judges its answers
    (the stats and cluster checkers come on top). VALUES: the shapes of its
    ops' values. `generate` yields the run's
    ops from a seeded rng; `final_reads` the reads the run ends with, from
    what it issued."""

    # Read-only, so a module's own narrower types (a dict, a 2-tuple) fit.
    @property
    def NAME(self) -> str: ...

    @property
    def DATA(self) -> str: ...

    @property
    def OPTIONS(self) -> Mapping[str, Option]: ...

    @property
    def CHECKERS(self) -> tuple[Checker, ...]: ...

    @property
    def VALUES(self) -> tuple[OpShape, ...]: ...

    def generate(self, rng: random.Random, config: dict[str, Any]) -> Iterator[OpSpec]: ...

    def final_reads(self, issued: list[OpSpec]) -> list[OpSpec]: ...


@runtime_checkable
class CheckerOptions(Protocol):
    """A workload that sets options of its checkers from the run's config
    (register and kv: the linearizability model)."""

    def checker_options(self, config: Mapping[str, Any]) -> dict[str, dict[str, Any]]: ...


@runtime_checkable
class ChecksOptions(Protocol):
    """A workload that refuses a combination of its `--client-option`s before
    the run starts (raises ValueError, one sentence)."""

    def check_options(self, options: Mapping[str, Any]) -> None: ...
