"""Disk faults: cut the tail off a stopped node's files, or make it lose its un-fsynced writes.

Which file and how much is a pure function of a seeded rng and the file
sizes (`plan_truncation`), so a schedule replays; the faults do the I/O
around it and put in the op value exactly what they did.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from checkers.faults import LOSE_UNSYNCED, TRUNCATE
from nemesis.fault import ClusterControl
from nemesis.lazyfs import LazyFS, kill_powered_off
from nemesis.process import (
    ALL,
    SIZES,
    choose_targets,
    drawn_set,
    resolve_nodes,
)
from nodes.db import NodeSpec

Mode = Literal["tail", "length"]
MODES: tuple[str, ...] = get_args(Mode)  # the truncate variants


class DataFiles(Protocol):
    """The one `nodes.db.DB` method truncation needs."""

    def data_files(self, node: NodeSpec) -> list[Path]: ...


@dataclass(frozen=True)
class TruncateChoice:
    """How much to cut. tail: `bytes` off the end (None: 1..max_bytes from the rng),
    a torn write; length: down to `length` (None: an rng pick below the size)."""

    mode: Mode = "tail"
    bytes: int | None = None
    max_bytes: int = 4096
    length: int | None = None
    every_file: bool = False  # else one non-empty file per node

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TruncateChoice:
        known = {k: params[k] for k in ("mode", "bytes", "max_bytes", "length", "every_file")
                 if k in params}
        choice = cls(**known)
        if choice.mode not in MODES:
            raise ValueError(f"truncate mode must be one of {', '.join(MODES)}, "
                             f"not {choice.mode!r}")
        return choice


@dataclass(frozen=True)
class Cut:
    node: str
    file: str
    old_size: int
    new_size: int


def plan_truncation(
    rng: random.Random, sizes: Mapping[str, Mapping[str, int]], choice: TruncateChoice
) -> list[Cut]:
    """Pure: the cuts for {node: {file: size}}. Empty files cannot be cut and are skipped."""
    cuts = []
    for node in sorted(sizes):
        candidates = sorted(f for f, size in sizes[node].items() if size > 0)
        if not candidates:
            continue
        files = candidates if choice.every_file else [rng.choice(candidates)]
        for file in files:
            old = sizes[node][file]
            cuts.append(Cut(node, file, old, _new_size(rng, old, choice)))
    return cuts


def _new_size(rng: random.Random, old: int, choice: TruncateChoice) -> int:
    if choice.mode == "tail":
        cut = choice.bytes if choice.bytes is not None else rng.randint(1, choice.max_bytes)
        return max(0, old - cut)
    if choice.length is not None:
        return min(choice.length, old)
    return rng.randrange(0, old)


def file_sizes(paths: Iterable[Path]) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in paths if p.is_file()}


def apply_cuts(cuts: Sequence[Cut]) -> None:
    for cut in cuts:
        fd = os.open(cut.file, os.O_WRONLY)
        try:
            if os.fstat(fd).st_size != cut.old_size:
                raise RuntimeError(f"{cut.file} changed size while its node was down")
            os.ftruncate(fd, cut.new_size)
            # The cut is the disk's state now: on a LazyFS mount an un-fsynced
            # truncate would be undone by the next lose-unsynced.
            os.fsync(fd)
        finally:
            os.close(fd)


class TruncateFault:
    """`truncate`: kill the nodes, cut their data files; `heal` starts them again.

    inject(cluster, rng, params) -> op value; params: `nodes` or `targets` (as
    for kill; default one node picked by rng) plus the `TruncateChoice` fields,
    whose `mode` defaults to the fault's variant (`truncate:length`).
    """

    name, heal_f = TRUNCATE.name, TRUNCATE.heal_f

    def __init__(self, db: DataFiles, variant: str | None = None) -> None:
        self.db = db
        self.variant = variant
        self.down: list[str] = []

    def inject(
        self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        aimed = resolve_nodes(cluster, rng, params)
        names = aimed.nodes
        defaults = {"mode": self.variant} if self.variant else {}
        choice = TruncateChoice.from_params({**defaults, **params})
        cluster.kill(names)
        self.down = sorted(set(self.down) | set(names))
        sizes = {n: file_sizes(self.db.data_files(cluster.spec(n))) for n in names}
        cuts = plan_truncation(rng, sizes, choice)
        apply_cuts(cuts)
        return {"nodes": names, "mode": choice.mode, "cuts": [asdict(c) for c in cuts],
                **aimed.recorded()}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        names, self.down = self.down, []
        return {"nodes": cluster.start(names) if names else []}


class LoseUnsyncedFault:
    """`lose-unsynced`: SIGKILL the nodes, roll their LazyFS back to the last fsyncs, restart.

    `mounts` maps node name -> the LazyFS its data dir sits on (see
    `nemesis.lazyfs.mount_data_dir`). The node is restarted inside inject;
    heal only restarts nodes a failed inject left down.
    """

    name, heal_f = LOSE_UNSYNCED.name, LOSE_UNSYNCED.heal_f

    def __init__(self, mounts: Mapping[str, LazyFS]) -> None:
        self.mounts = mounts
        self.down: list[str] = []

    def inject(
        self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        aimed = resolve_nodes(cluster, rng, params)
        names = aimed.nodes
        missing = [n for n in names if n not in self.mounts]
        if missing:
            raise ValueError(f"no LazyFS mount for {', '.join(missing)}")
        # The power goes off on all of them at one instant, before the kills
        # (which take milliseconds each): an fsync in flight must not finish.
        kill_powered_off(cluster, names, self.mounts)
        self.down = sorted(set(self.down) | set(names))
        lost = {
            name: [
                {"file": f["path"], "old_size": f["size_before"], "new_size": f["synced_size"],
                 "pages_restored": f["pages_restored"]}
                for f in self.mounts[name].lose_unsynced()
            ]
            for name in names
        }
        cluster.start(names)
        self.down = [n for n in self.down if n not in names]
        return {"nodes": names, "lost": lost, **aimed.recorded()}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        names, self.down = self.down, []
        return {"nodes": cluster.start(names) if names else []}


def plan_lose_unsynced(rng: random.Random, nodes: Sequence[str], variant: str | None
                       ) -> dict[str, Any]:
    """A power cut of a target set at once, drawn over nemesis.process.SIZES
    without a variant: a majority (or all) is what loses data a quorum
    acknowledged but had not flushed (the Redpanda RFC's case)."""
    if variant is None:
        return drawn_set(rng, nodes, SIZES)
    if variant == ALL:
        return {"targets": ALL, "nodes": sorted(nodes)}
    return {"targets": variant, "nodes": choose_targets(rng, nodes, variant)}
