"""Node processes on one address, for tests and benchmarks of a system alone.

Not the harness (which runs nodes in namespaces and owns their lifecycle
there); the smallest thing that starts, kills and reaps real processes. Every
process runs in its own session so a kill takes its whole group, and `close()`
reaps everything even when a test fails halfway.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from types import TracebackType


class LocalProcesses:
    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def spawn(self, name: str, argv: list[str], log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / "stdout.log", "ab") as out, open(log_dir / "stderr.log", "ab") as err:
            self.procs[name] = subprocess.Popen(argv, stdout=out, stderr=err,
                                                start_new_session=True)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def close(self) -> None:
        for name in list(self.procs):
            self.kill(name)

    def __enter__(self) -> LocalProcesses:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
