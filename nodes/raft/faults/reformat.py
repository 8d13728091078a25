"""`reformat`: a node re-formatted for another cluster rejoins under its old
name and address (KIP-595's cluster id check is what keeps it out).

An operator's mistake, made real: the node is killed, its data put aside in
its own data dir, the dir formatted for a new cluster id and the node started
configured for that cluster, with the same peers. Its requests carry the
other cluster's id, so every node must refuse them (and it theirs): it stays
alone, electing no one and following no one. The heal (`restore-data`) kills
it, puts its own data back and starts it in its cluster again, as if it had
been down all along.

The re-format goes through the DB adapter's `reformat(node, cluster_id)`
(format the emptied data dir, configure the node for that cluster; None
undoes it); a system without it cannot run this fault.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checkers.history import NOOP
from nemesis.fault import ClusterControl, FaultContext
from nodes.abilities import Reformat
from nodes.raft.fault_rows import REFORMAT

HEAL_F = REFORMAT.heal_f
# Inside the data dir, so the move is a rename on the same file system (the
# dir may be a LazyFS mount point, which cannot itself be renamed).
STASH = ".reformat-stash"


class ReformatFault:
    name, heal_f = REFORMAT.name, HEAL_F

    def __init__(self, db: Any) -> None:
        if not isinstance(db, Reformat):
            raise ValueError(f"{getattr(db, 'kind', 'this db')} cannot re-format a node")
        self.db: Reformat = db
        self.foreign: dict[str, str] = {}   # node -> the cluster id it was formatted for

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        node = (params.get("nodes") or [rng.choice(cluster.names)])[0]
        if node in self.foreign:
            return {"nodes": [node], NOOP: f"{node} is already formatted for another cluster"}
        cluster.kill([node])
        spec = cluster.spec(node)
        stash_data(spec.data_dir)
        # Drawn from the event's rng, so a replay formats for the same cluster.
        cluster_id = f"foreign-{rng.getrandbits(64):016x}"
        self.db.reformat(spec, cluster_id)
        self.foreign[node] = cluster_id
        cluster.start([node])
        # "restarted": the hunt holds it through the node's election timeout,
        # before which the re-formatted node says nothing (nemesis.hunt).
        return {"nodes": [node], "cluster_id": cluster_id, "restarted": [node]}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        if not self.foreign:
            return {"nodes": [], NOOP: "no node was re-formatted"}
        healed = sorted(self.foreign)
        cluster.kill(healed)
        for node in healed:
            spec = cluster.spec(node)
            restore_data(spec.data_dir)
            self.db.reformat(spec, None)
            del self.foreign[node]
        cluster.start(healed)
        return {"nodes": healed}


def stash_data(data_dir: Path) -> None:
    """Move everything in `data_dir` into its stash (durably), leaving it empty."""
    stash = Path(data_dir) / STASH
    stash.mkdir()
    for entry in Path(data_dir).iterdir():
        if entry.name != STASH:
            entry.rename(stash / entry.name)
    _fsync_dirs(stash, Path(data_dir))


def restore_data(data_dir: Path) -> None:
    """Drop what the node wrote since `stash_data` and move the stash back."""
    stash = Path(data_dir) / STASH
    for entry in Path(data_dir).iterdir():
        if entry.name == STASH:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for entry in stash.iterdir():
        entry.rename(Path(data_dir) / entry.name)
    stash.rmdir()
    _fsync_dirs(Path(data_dir))


def _fsync_dirs(*dirs: Path) -> None:
    # A lose-unsynced fault later must not undo the moves.
    for d in dirs:
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def reformat_fault(ctx: FaultContext) -> ReformatFault:
    if ctx.variant is not None:
        raise ValueError("reformat takes no variant")
    return ReformatFault(ctx.db)
