"""What each `disk` fault does to a process reading and writing through a
LazyFS mount, measured: the EIO rate readers and writers see against the
probability asked, ENOSPC, the delay a write and an fsync take under
`slow`, and how often a read comes back with a flipped bit.

    .venv/bin/python bench/disk_faults.py [--ops N] [--dir DIR]

Needs root and /dev/fuse. Prints one markdown row per measurement.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nemesis.diskfault import parse_variant  # noqa: E402
from nemesis.lazyfs import LazyFS, check_installed  # noqa: E402


def pwrite_once(path: Path) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"x" * 4096, 0)
    finally:
        os.close(fd)


def pread_once(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, 4096, 0)
    finally:
        os.close(fd)


def failures(call: Callable[[], object], n: int) -> dict[int, int]:
    seen: dict[int, int] = {}
    for _ in range(n):
        try:
            call()
        except OSError as e:
            seen[e.errno] = seen.get(e.errno, 0) + 1
    return seen


def timed(call: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.monotonic()
        call()
        out.append((time.monotonic() - started) * 1000)
    return out


def measure(fs: LazyFS, n: int) -> list[str]:
    path = fs.mountpoint / "data.seg"
    pwrite_once(path)
    rows = []

    def under(variant: str, seed: int = 1) -> None:
        fs.add_disk_fault(parse_variant(variant).rule(seed).to_map())

    for p in (0.05, 0.25, 0.5):
        under(f"eio={p}+ops=write")
        k = sum(failures(lambda: pwrite_once(path), n).values())
        fs.heal_disk()
        under(f"eio={p}+ops=read", seed=2)
        r = sum(failures(lambda: pread_once(path), n).values())
        fs.heal_disk()
        rows.append(f"| disk:eio={p} | writes failed {k}/{n} ({k / n:.3f}), "
                    f"reads failed {r}/{n} ({r / n:.3f}) |")
    under("full")
    k = failures(lambda: pwrite_once(path), n).get(28, 0)
    free = os.statvfs(fs.mountpoint).f_bavail
    fs.heal_disk()
    rows.append(f"| disk:full | ENOSPC {k}/{n} writes; statfs free blocks {free} |")
    base_w = statistics.median(timed(lambda: pwrite_once(path), 50))
    fd = os.open(path, os.O_RDWR)
    try:
        base_f = statistics.median(timed(lambda: os.fsync(fd), 50))
        under("slow=20+fsync=200")
        slow_w = statistics.median(timed(lambda: os.pwrite(fd, b"y", 0), 20))
        slow_f = statistics.median(timed(lambda: os.fsync(fd), 10))
        fs.heal_disk()
    finally:
        os.close(fd)
    rows.append(f"| disk:slow=20+fsync=200 | pwrite median {slow_w:.1f} ms (healthy "
                f"open+pwrite+close {base_w:.2f} ms), fsync median {slow_f:.1f} ms "
                f"(healthy {base_f:.2f} ms) |")
    zeros = fs.mountpoint / "zeros"
    zeros.write_bytes(bytes(4096))
    for p in (0.1, 1.0):
        under(f"bitflip={p}")
        reads = [pread_once(zeros) for _ in range(n)]
        fs.heal_disk()
        flipped = sum(any(r) for r in reads)
        bits = {sum(bin(b).count("1") for b in r) for r in reads if any(r)}
        rows.append(f"| disk:bitflip={p} | reads with a flipped bit {flipped}/{n} "
                    f"({flipped / n:.3f}); bits per flipped read {sorted(bits)} |")
    healed = pread_once(zeros) == bytes(4096) and (fs.backing / "zeros").read_bytes() == \
        bytes(4096)
    rows.append(f"| after every heal | reads clean and the file at rest untouched: {healed} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    problem = check_installed()
    if problem:
        print(problem, file=sys.stderr)
        return 254
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        fs = LazyFS(root / "backing", root / "mnt", root / "ctl.sock")
        fs.start()
        try:
            rows = measure(fs, args.ops)
        finally:
            fs.stop()
        print("| fault | measured |\n|---|---|")
        print("\n".join(rows))
        print(f"| mount left | {os.path.ismount(root / 'mnt')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
