"""A tiny real DB for harness tests: a TCP line-echo server process.

Each start appends a line to `<data_dir>/starts` (so a restart on the same
data dir is visible), and it forks a helper child into its process group
(so tests can check kill/pause reach the whole tree, as with real servers).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from nodes.db import NodeSpec

SERVER = r"""
import os, socket, subprocess, sys, threading
host, port, data = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(os.path.join(data, "starts"), "a") as f:
    f.write(f"{os.getpid()} fresh={sys.argv[4]}\n")
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
with open(os.path.join(data, "helper.pid"), "w") as f:
    f.write(str(helper.pid))
srv = socket.create_server((host, port), reuse_port=False)
print("listening", host, port, flush=True)
def serve(conn):
    with conn, conn.makefile("rwb", buffering=0) as f:
        for line in f:
            f.write(line)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


def echo(host: str, port: int, message: bytes = b"ping\n", timeout: float = 0.5) -> bytes:
    """One round trip; raises OSError (incl. timeout) if the server cannot be reached."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(message)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


class EchoDB:
    kind = "echo"

    def __init__(self, leader: str | None = None) -> None:
        self._leader = leader

    def check_installed(self) -> str | None:
        return None

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]:
        return [sys.executable, "-c", SERVER, node.host, str(node.port), str(node.data_dir),
                str(fresh)]

    def is_ready(self, node: NodeSpec) -> bool:
        try:
            return echo(node.host, node.port, timeout=0.2) == b"ping\n"
        except OSError:
            return False

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        if self._leader is not None:
            return self._leader
        for node in cluster:
            if self.is_ready(node):
                return node.name
        return None

    def data_files(self, node: NodeSpec) -> list[Path]:
        return [node.data_dir / "starts"]

    def dump_log(self, node: NodeSpec, out: Path) -> None:
        out.write_bytes(b"")

    @staticmethod
    def starts(node: NodeSpec) -> list[str]:
        return (node.data_dir / "starts").read_text().splitlines()

    @staticmethod
    def helper_pid(node: NodeSpec) -> int:
        return int((node.data_dir / "helper.pid").read_text())
