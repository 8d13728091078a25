"""What a faulty disk does to one file-system operation: the rules the LazyFS
process applies while a `disk` fault is in force (nemesis.diskfault sets them).

Pure, and free of dependencies but the fault-row vocabulary, whose names
it counts reads under (the FUSE process imports it; so do the harness and
the tests): a `DiskRule` says which operations on which files misbehave and
how, and `Verdict`s come from a seeded rng, so a given sequence of operations
meets the same errors on a replay.

Modes:
  eio      the operation fails with EIO, with probability `p`
  full     writes fail with ENOSPC, with probability `p` (1: a full disk);
           statfs reports no free space
  slow     every operation waits `delay_ms`, an fsync `fsync_ms` instead
  bitflip  a read returns its data with one bit flipped, with probability `p`
"""

from __future__ import annotations

import fnmatch
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from checkers.fault_row import READ_FAILED, READ_FAILED_AGAIN, READ_FLIPPED

EIO, FULL, SLOW, BITFLIP = "eio", "full", "slow", "bitflip"
MODES = (EIO, FULL, SLOW, BITFLIP)

# Operation classes, by the FUSE operation names (fusepy's Operations methods).
READ, WRITE, FSYNC, META = "read", "write", "fsync", "meta"
OP_CLASSES: dict[str, str] = {
    "read": READ, "readdir": READ, "readlink": READ,
    "write": WRITE, "truncate": WRITE, "create": WRITE, "mkdir": WRITE, "mknod": WRITE,
    "symlink": WRITE, "link": WRITE, "rename": WRITE,
    "fsync": FSYNC, "fsyncdir": FSYNC,
}
# What each mode hits unless told: EIO on reads and writes (not on fsync: a
# failed fsync after a good write loses nothing on this passthrough, the
# bytes are in the backing file already), ENOSPC on what allocates.
DEFAULT_OPS = {EIO: (READ, WRITE), FULL: (WRITE,), SLOW: (READ, WRITE, FSYNC, META),
               BITFLIP: (READ,)}
OP_NAMES = (READ, WRITE, FSYNC, META)
# Operations that never fail: without them the mount cannot even be
# unmounted, and a node's process could not be cleaned up.
NEVER_FAIL = frozenset({"init", "destroy", "release", "releasedir", "flush", "statfs",
                        "getattr", "access", "open", "opendir"})
DEFAULT_P = {EIO: 0.1, FULL: 1.0, SLOW: 1.0, BITFLIP: 0.1}
DEFAULT_DELAY_MS = 10
DEFAULT_FSYNC_MS = 200


@dataclass(frozen=True)
class DiskRule:
    """One disk fault as the FUSE process applies it.

    files: a glob matched against the path inside the mount ("/log/*.log") and
    against the file's base name ("*.log"); "*" is every file; "a|b" either.
    """

    mode: str
    p: float = 1.0
    ops: tuple[str, ...] = ()
    files: str = "*"
    delay_ms: int = 0
    fsync_ms: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        if self.mode not in MODES:
            return f"disk mode must be one of {', '.join(MODES)}, not {self.mode!r}"
        if not 0.0 <= self.p <= 1.0:
            return f"disk fault probability must be within 0..1, not {self.p}"
        bad = [o for o in self.ops if o not in OP_NAMES]
        if bad:
            return f"disk fault ops must be among {', '.join(OP_NAMES)}, not {', '.join(bad)}"
        if self.delay_ms < 0 or self.fsync_ms < 0:
            return "disk delays must be >= 0 ms"
        if not self.files:
            return "disk fault files pattern must not be empty"
        return None

    @property
    def hit_ops(self) -> tuple[str, ...]:
        return self.ops or DEFAULT_OPS[self.mode]

    def to_map(self) -> dict[str, Any]:
        m = asdict(self)
        m["ops"] = list(self.hit_ops)
        return m

    @classmethod
    def from_map(cls, m: dict[str, Any]) -> DiskRule:
        known = {k: m[k] for k in ("mode", "p", "files", "delay_ms", "fsync_ms", "seed")
                 if k in m}
        return cls(ops=tuple(m.get("ops") or ()), **known)

    def matches(self, path: str) -> bool:
        if self.files == "*":
            return True
        base = path.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(base, glob)
                   for glob in self.files.split("|"))


@dataclass
class Verdict:
    """What to do to one operation: wait `delay_s`, then fail with `errno`
    (None: do it), and flip bit `flip` (byte index * 8 + bit) of what a read
    returns (None: none)."""

    delay_s: float = 0.0
    errno: int | None = None
    flip: int | None = None


@dataclass
class RuleState:
    """A rule in force with its own rng (seeded by the rule) and counts of what it did."""

    rule: DiskRule
    rng: random.Random = field(init=False)
    counts: dict[str, int] = field(default_factory=dict)
    # Reads that failed, by (path, offset): the kernel retries a failed page
    # read once, synchronously, and a bad sector stays bad for that retry, so
    # a reader sees EIO with the probability asked, not its square.
    bad_reads: set[tuple[str, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.rule.seed)

    def decide(self, op: str, path: str, size: int = 0, offset: int | None = None
               ) -> Verdict:
        """Pure but for the rule's own rng and counters: the verdict on one
        operation `op` (a FUSE operation name) on `path`; `size` and `offset`
        are a read's (where a flipped bit may land, which sector it reads)."""
        import errno as errnos

        verdict = Verdict()
        if op in ("init", "destroy"):
            return verdict
        kind = OP_CLASSES.get(op, META)
        rule = self.rule
        if kind not in rule.hit_ops or not rule.matches(path):
            return verdict
        if rule.mode == SLOW:
            verdict.delay_s = (rule.fsync_ms if kind == FSYNC else rule.delay_ms) / 1000
            self._count("delayed")
            return verdict
        if op in NEVER_FAIL:
            return verdict
        sector = (path, offset) if op == "read" and offset is not None else None
        if rule.mode == EIO and sector in self.bad_reads:
            self.bad_reads.discard(sector)
            verdict.errno = errnos.EIO
            self._count(READ_FAILED_AGAIN)
            return verdict
        if self.rng.random() >= rule.p:
            self._count("passed")
            return verdict
        if rule.mode == EIO:
            verdict.errno = errnos.EIO
            self._count(READ_FAILED if kind == READ else f"eio-{kind}")
            if sector is not None:
                self.bad_reads.add(sector)
        elif rule.mode == FULL:
            verdict.errno = errnos.ENOSPC
            self._count("enospc")
        elif rule.mode == BITFLIP and op == "read" and size > 0:
            verdict.flip = self.rng.randrange(size * 8)
            self._count(READ_FLIPPED)
        return verdict

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


def flip_bit(data: bytes, bit: int | None) -> bytes:
    """`data` with bit `bit` (byte * 8 + bit, LSB first) flipped; a bit past
    the end (a short read) flips the last byte's instead. Pure."""
    if bit is None or not data:
        return data
    index = min(bit // 8, len(data) - 1)
    out = bytearray(data)
    out[index] ^= 1 << (bit % 8)
    return bytes(out)
