"""What LazyFS costs: small appends with and without fsync, on a plain dir vs a LazyFS mount.

    sudo .venv/bin/python bench/lazyfs.py [--ops 2000] [--size 128] [--dir /var/tmp]

Both targets live on the same filesystem (the LazyFS backing dir sits next to
the plain dir), so the difference is the FUSE round trips plus the undo log.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nemesis.lazyfs import LazyFS


def append_loop(path: Path, ops: int, size: int, sync: Callable[[int], None] | None) -> float:
    """Seconds per append (+ sync) of `size` bytes."""
    payload = b"x" * size
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(ops):
            os.write(fd, payload)
            if sync is not None:
                sync(fd)
        return (time.perf_counter() - start) / ops
    finally:
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp"))
    args = parser.parse_args()

    loops: dict[str, Callable[[int], None] | None] = {
        "write": None, "write+fdatasync": os.fdatasync, "write+fsync": os.fsync,
    }
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        plain = root / "plain"
        plain.mkdir()
        with LazyFS(root / "backing", root / "mnt", root / "ctl.sock") as lazyfs:
            print(f"{args.ops} appends of {args.size} B, microseconds per op")
            print(f"{'loop':<18}{'plain':>10}{'lazyfs':>10}{'ratio':>8}")
            for name, sync in loops.items():
                base = append_loop(plain / name, args.ops, args.size, sync)
                lazy = append_loop(lazyfs.mountpoint / name, args.ops, args.size, sync)
                print(f"{name:<18}{base * 1e6:>10.1f}{lazy * 1e6:>10.1f}{lazy / base:>8.1f}")
            started = time.perf_counter()
            lazyfs.lose_unsynced()
            print(f"lose-unsynced: {(time.perf_counter() - started) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
