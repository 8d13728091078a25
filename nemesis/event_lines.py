"""Tailing the nodes' JSON event lines (`{"event": ...}` on a node's stdout)
as they are written: what a trigger fault watches and the adaptive schedule
observes. Generic: any system whose nodes leave `events` may be watched; what
a line means is the system's (its own vocabulary, declared in its package)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nemesis.fault import ClusterControl

# How often the watcher looks at the logs: fast while armed, idle otherwise.
ARMED_POLL_S = 0.001
IDLE_POLL_S = 0.05
MAX_LINE = 1 << 20


class LogTail:
    """The complete JSON event lines appended to one file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(MAX_LINE)
        except FileNotFoundError:
            return []
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_LINE:
            self._partial = b""
        out = []
        for line in lines:
            if not line.startswith(b"{"):
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and "event" in event:
                out.append(event)
        return out


class Watcher:
    """Tails node logs in a thread and calls `on_event(node, event)` for each line."""

    def __init__(self, paths: Mapping[str, Path],
                 on_event: Callable[[str, dict[str, Any]], None],
                 armed: Callable[[], bool]) -> None:
        self._tails = {node: LogTail(p) for node, p in paths.items()}
        self._on_event = on_event
        self._armed = armed
        self._stop = False
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trigger-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Poll at once (and from now on at the armed rate, if armed)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def poll(self) -> None:
        for node, tail in self._tails.items():
            for event in tail.read():
                self._on_event(node, event)

    def _loop(self) -> None:
        while not self._stop:
            self.poll()
            self._wake.wait(ARMED_POLL_S if self._armed() else IDLE_POLL_S)
            self._wake.clear()


def node_log_paths(cluster: ClusterControl) -> dict[str, Path]:
    return {n.name: Path(n.log_dir) / "stdout.log" for n in cluster.nodes}
