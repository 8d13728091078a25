"""The `disk` fault family: a node's disk that fails, fills up, slows down or
flips bits, through the LazyFS mount its data dir sits on.

    disk:eio[=P]          reads and writes fail with EIO, each with probability P
    disk:full[=P]         writes fail with ENOSPC (P=1: every one; statfs says 0 free)
    disk:slow[=D]         every operation waits D ms (default 10), fsync its own `fsync=` ms
    disk:bitflip[=P]      a read returns one flipped bit, with probability P
    disk:bitflip+at=rest  the nodes are stopped, `bits` random bits of their data files
                          flipped (Jepsen's file corruption); the heal starts them
    disk:truncate         today's `truncate` (tail mode), recorded as a `disk` op

Options follow the mode after `+` (a comma separates faults in --nemesis):
`p=` probability, `ops=` what fails (read, write, fsync, meta, joined by `-`),
`files=` a glob on the path in the data dir or the base name (`state`: the
files the system names as its nodes' vote records), `nodes=` one,
minority, majority or all, `fsync=` ms, `bits=` count.
`disk:eio=0.2+ops=write+files=*.seg+nodes=majority`. Without `nodes=` the
set is drawn as kill's is, over one, a minority, a majority and all
(nemesis.process.SIZES), for the modes that destroy nothing on disk (eio,
full, slow); bit flips and truncation hit one node (process.DESTROYING).

Planned in the schedule (pure: which nodes, the parsed rule), seeded per node at
inject time from the event's rng, so a replay sets the same rules on the same
nodes at the recorded times. The heal removes the rules and starts any node
that crashed on them: a node that stops on a disk error is what a correct one
does; one that carries on as if the write had happened is the finding. A
disk that refused writes (eio, full) has every node it hit restarted at the
heal, as a power cut's or a truncation's are: what the node holds in memory
of a write its disk refused is then only what its disk holds, so a quorum
that acknowledged writes no disk took shows it (ignore-write-error's state).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from checkers.faults import AT_REST, DISK, TRUNCATE
from checkers.history import NOOP
from nemesis.disk import TruncateFault
from nemesis.disk_rules import (
    BITFLIP,
    DEFAULT_DELAY_MS,
    DEFAULT_FSYNC_MS,
    DEFAULT_P,
    EIO,
    FULL,
    MODES,
    OP_NAMES,
    SLOW,
    DiskRule,
)
from nemesis.fault import ClusterControl, Fault, FaultContext
from nemesis.process import DESTROYING, SIZES, drawn_set, nodes_of_size
from nodes.abilities import StateFiles

TRUNCATE_MODE = TRUNCATE.name
REST = AT_REST
STATE = "state"   # files=state: the adapter's state files (nemesis.disk.StateFiles)
DEFAULT_MODE = EIO
DEFAULT_BITS = 8
# `nodes=` not given: the set is drawn (`sizes`).
DRAWN = ""
# The variants the hunt draws (nemesis.hunt.moves_for). Each draws its node
# set (`sizes`), so a whole cluster's disk failing at once, as a shared
# storage failure (a SAN path, a storage array) fails them, is one draw of
# `disk:eio` and of `disk:full`, no variant of its own (it was
# `eio+nodes=all`, one variant of eight, until 2026-11-27).
VARIANTS = (*MODES, TRUNCATE_MODE, f"{BITFLIP}+at={REST}")
# The modes whose disk refuses writes: their heal restarts the nodes they hit.
REFUSES_WRITES = (EIO, FULL)
KEYS = ("p", "ops", "files", "nodes", "fsync", "bits", "at")


@dataclass(frozen=True)
class DiskVariant:
    """A `disk:` variant, parsed."""

    mode: str
    p: float
    ops: tuple[str, ...]
    files: str
    nodes: str
    delay_ms: int
    fsync_ms: int
    bits: int
    at_rest: bool

    def rule(self, seed: int) -> DiskRule:
        return DiskRule(self.mode, self.p, self.ops, self.files, self.delay_ms,
                        self.fsync_ms, seed)


def _ms(text: str) -> int:
    value = int(text.removesuffix("ms"))
    if value < 0:
        raise ValueError
    return value


def parse_variant(variant: str | None) -> DiskVariant:
    """`eio=0.2+ops=write+files=*.log` -> a DiskVariant; ValueError on anything
    it does not know (said before the run starts)."""
    head, *options = (variant or DEFAULT_MODE).split("+")
    mode, _, value = head.partition("=")
    if mode not in (*MODES, TRUNCATE_MODE):
        raise ValueError(f"disk mode must be one of {', '.join((*MODES, TRUNCATE_MODE))}, "
                         f"not {mode!r}")
    given: dict[str, str] = {}
    for option in options:
        key, eq, text = option.partition("=")
        if key not in KEYS or not eq:
            raise ValueError(f"disk option {option!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)}")
        given[key] = text
    try:
        if mode == SLOW:
            delay = _ms(value) if value else DEFAULT_DELAY_MS
            p = 1.0
        else:
            delay = 0
            p = float(given.get("p", value or DEFAULT_P.get(mode, 1.0)))
        fsync = _ms(given["fsync"]) if "fsync" in given else (
            DEFAULT_FSYNC_MS if mode == SLOW else 0)
        bits = int(given.get("bits", DEFAULT_BITS))
    except ValueError:
        raise ValueError(f"disk:{variant}: a probability is a number in 0..1, a delay "
                         f"whole ms, bits a whole number") from None
    ops = tuple(o for o in given.get("ops", "").split("-") if o)
    nodes = given.get("nodes", DRAWN)
    if "nodes" in given and nodes not in SIZES:
        raise ValueError(f"disk nodes= must be one of {', '.join(SIZES)}, not {nodes!r}")
    at = given.get("at", "read" if mode == BITFLIP else "")
    if at not in ("", "read", REST) or (at == REST and mode != BITFLIP):
        raise ValueError(f"disk at= is `rest` (bitflip only) or `read`, not {at!r}")
    if bits < 1:
        raise ValueError("disk bits= must be at least 1")
    parsed = DiskVariant(mode, p, ops, given.get("files", "*"), nodes, delay, fsync, bits,
                         at == REST)
    if mode in MODES and not parsed.at_rest:
        bad = [o for o in ops if o not in OP_NAMES]
        if bad:
            raise ValueError(f"disk ops= takes {', '.join(OP_NAMES)} joined by '-', "
                             f"not {'-'.join(ops)}")
        parsed.rule(0)  # the FUSE side's own checks, now
    return parsed


def sizes(parsed: DiskVariant) -> tuple[str, ...]:
    """Pure: the node-set sizes a variant may draw: the one its `nodes=`
    names; else every size (process.SIZES) for a mode that leaves what the
    disk holds as it was, one node (process.DESTROYING) for bit flips and
    truncation, which destroy it."""
    if parsed.nodes != DRAWN:
        return (parsed.nodes,)
    return DESTROYING if parsed.mode in (BITFLIP, TRUNCATE_MODE) else SIZES


def _planned(rng: random.Random, nodes: Sequence[str], parsed: DiskVariant
             ) -> dict[str, Any]:
    (size, *more) = sizes(parsed)
    if not more:
        return {"targets": size, "nodes": nodes_of_size(rng, nodes, size)}
    return drawn_set(rng, nodes, sizes(parsed))


def _pick(rng: random.Random, nodes: Sequence[str], parsed: DiskVariant) -> list[str]:
    return list(_planned(rng, nodes, parsed)["nodes"])


def plan(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    """Pure: the nodes (and `targets`, the size drawn), by the variant's
    `nodes=` or drawn over its `sizes`, from the rng."""
    return _planned(rng, nodes, parse_variant(variant))


class DiskFault:
    """`disk:eio|full|slow|bitflip`: rules on the nodes' LazyFS mounts until the
    heal (`restore-disk`), which lifts them and starts the nodes they crashed."""

    name, heal_f = DISK.name, DISK.heal_f

    def __init__(self, mounts: Mapping[str, Any], variant: DiskVariant, db: Any = None
                 ) -> None:
        self.mounts = mounts
        self.variant = variant
        self.db = db
        # node -> seeds of the rules this fault set there: its heal lifts
        # those, not another disk fault's on the same mount.
        self.faulty: dict[str, list[int]] = {}
        # The nodes that were running when it struck: only those can have
        # stopped on it (one down for another fault stays down for that one).
        self.were_running: set[str] = set()

    def _rule(self, cluster: ClusterControl, name: str, seed: int) -> dict[str, Any]:
        rule = self.variant.rule(seed).to_map()
        if self.variant.files == STATE:
            # This node's own state files, as paths inside its mount, and the
            # temporary copies a system writes to replace one atomically.
            root = Path(cluster.spec(name).data_dir)
            rule["files"] = "|".join("/" + str(p.relative_to(root)) + "*"
                                     for p in self.db.state_files(cluster.spec(name)))
        return rule

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        names = sorted(params.get("nodes") or _pick(rng, cluster.names, self.variant))
        missing = [n for n in names if n not in self.mounts]
        if missing:
            raise ValueError(f"no LazyFS mount for {', '.join(missing)}")
        seeds = {n: rng.getrandbits(32) for n in names}
        self.were_running |= {n for n in names if cluster.is_running(n)}
        rules = {}
        for name in names:
            rules[name] = self.mounts[name].add_disk_fault(
                self._rule(cluster, name, seeds[name]))
            self.faulty.setdefault(name, []).append(seeds[name])
        rule = rules[names[0]] if names else self.variant.rule(0).to_map()
        return {"nodes": names, "mode": self.variant.mode,
                **{k: rule[k] for k in ("p", "ops", "files", "delay_ms", "fsync_ms")},
                "seeds": seeds}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        faulty, self.faulty = self.faulty, {}
        names = sorted(faulty)
        if not names:
            return {"nodes": [], NOOP: "no disk fault in force"}
        did = {n: [d for seed in faulty[n] for d in self.mounts[n].heal_disk(seed)]
               for n in names}
        hit = [n for n in names if n in self.were_running]
        crashed = [n for n in hit if not cluster.is_running(n)]
        self.were_running -= set(names)
        if self.variant.mode in REFUSES_WRITES:
            # The rules are lifted: restarted now, a node reads back what its
            # disk took, not what it believed written (REFUSES_WRITES).
            cluster.kill([n for n in hit if n not in crashed])
            crashed = hit
        started = cluster.start(crashed) if crashed else []
        return {"nodes": names, "did": did, "restarted": started}


@dataclass(frozen=True)
class Flip:
    node: str
    file: str
    offset: int
    bit: int


def plan_flips(rng: random.Random, sizes: Mapping[str, Mapping[str, int]], bits: int
               ) -> list[Flip]:
    """Pure: `bits` flips per node, each in a file drawn by size (a byte anywhere
    in the node's files, equally likely) at a random byte and bit."""
    flips = []
    for node in sorted(sizes):
        files = sorted((f, s) for f, s in sizes[node].items() if s > 0)
        total = sum(s for _, s in files)
        for _ in range(bits if total else 0):
            at = rng.randrange(total)
            for file, size in files:
                if at < size:
                    flips.append(Flip(node, file, at, rng.randrange(8)))
                    break
                at -= size
    return flips


def apply_flips(flips: Sequence[Flip]) -> None:
    for flip in flips:
        fd = os.open(flip.file, os.O_RDWR)
        try:
            byte = os.pread(fd, 1, flip.offset)
            if len(byte) != 1:
                raise RuntimeError(f"{flip.file} shrank while its node was down")
            os.pwrite(fd, bytes([byte[0] ^ (1 << flip.bit)]), flip.offset)
            # Durable, as the truncation is: a later lose-unsynced must not undo it.
            os.fsync(fd)
        finally:
            os.close(fd)


def files_of(db: Any, node: Any, pattern: str) -> list[Path]:
    """The node's data files (the adapter's), or every file under its data dir
    matching `pattern`."""
    if pattern == "*":
        return list(db.data_files(node))
    if pattern == STATE:
        return [p for p in db.state_files(node) if p.is_file()]
    rule = DiskRule(EIO, files=pattern)
    root = Path(node.data_dir)
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and rule.matches("/" + str(p.relative_to(root))))


class CorruptFault:
    """`disk:bitflip+at=rest`: stop the nodes, flip bits in their files at rest,
    start them at the heal (`restore-disk`) - Jepsen's file-corruption nemesis."""

    name, heal_f = DISK.name, DISK.heal_f

    def __init__(self, db: Any, variant: DiskVariant) -> None:
        self.db = db
        self.variant = variant
        self.down: list[str] = []

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        names = sorted(params.get("nodes") or _pick(rng, cluster.names, self.variant))
        cluster.kill(names)
        self.down = sorted(set(self.down) | set(names))
        sizes = {n: {str(p): p.stat().st_size
                     for p in files_of(self.db, cluster.spec(n), self.variant.files)}
                 for n in names}
        flips = plan_flips(rng, sizes, self.variant.bits)
        apply_flips(flips)
        return {"nodes": names, "mode": BITFLIP, "at": REST,
                "flips": [asdict(f) for f in flips]}

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        names, self.down = self.down, []
        if not names:
            return {"nodes": [], NOOP: "no node was down"}
        return {"nodes": names, "restarted": cluster.start(names)}


class DiskTruncate(TruncateFault):
    """`disk:truncate`: today's truncate under the family's name, so its ops
    read (and replay) as `disk` ones; `truncate` itself stays as it was."""

    name, heal_f = DISK.name, DISK.heal_f

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        value = super().inject(cluster, rng, params)
        return {**value, "mode": TRUNCATE_MODE, TRUNCATE_MODE: value["mode"]}


def disk_fault(ctx: FaultContext) -> Fault:
    """The registry's factory: the variant's fault, or ValueError saying why
    this run cannot take it (refused before the run starts)."""
    parsed = parse_variant(ctx.variant)
    if parsed.files == STATE and not isinstance(ctx.db, StateFiles):
        raise ValueError("files=state needs a system that names its nodes' state files "
                         "(e.g. an epoch and vote file); this one names none")
    if parsed.mode == TRUNCATE_MODE:
        return DiskTruncate(ctx.db)
    if parsed.at_rest:
        return CorruptFault(ctx.db, parsed)
    if "mounts" not in ctx.extras:
        raise ValueError("disk faults need the nodes' data dirs on LazyFS mounts")
    return DiskFault(ctx.extras["mounts"], parsed, ctx.db)
