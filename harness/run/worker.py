"""A client worker process: one Jepsen "process" at a time, one op open at a time.

Run as `python -m harness.run.worker`. The harness sends an `open` frame (db kind,
workload, node addresses, options); the worker answers `ready` once its
client exists (interpreter start and imports take seconds on a loaded
machine: an op handed over before would be timed from its invoke while
nothing could send it yet), then answers each `op` frame with a completion
frame on stdout. It starts in the namespace the harness gave it (the hub), so
it reaches the nodes' test addresses.

A client reports what happened to an op by its completion (`fail`, `info`);
an exception out of the client is a bug in it, not an outcome: the worker
sends a `client-error` frame with the traceback and ends, and the harness
ends the run as a harness error.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, BinaryIO

from checkers.history import Op
from faultline import registry as systems
from harness.run.frames import read_frame, write_frame

READY = "ready"
CLIENT_ERROR = "client-error"


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    hello = read_frame(stdin)
    if not hello or hello.get("kind") != "open":
        print("worker: expected an open frame", file=sys.stderr)
        return 2
    doing = ["opening the client"]   # what the worker was at, should the client raise
    try:
        return _serve(hello, stdin, stdout, doing)
    except Exception:
        traceback.print_exc()   # the whole one, in the worker's log
        write_frame(stdout, {"kind": CLIENT_ERROR, "during": doing[0],
                             "traceback": traceback.format_exc()})
        return 3


def _serve(hello: dict, stdin: BinaryIO, stdout: BinaryIO, doing: list[str]) -> int:
    system = systems.get(hello["db"])
    main_workload = hello["workload"]
    nodes = {name: tuple(addr) for name, addr in hello["nodes"].items()}
    options = hello.get("options") or {}
    # One client per (workload, pinned): a run's companion workload
    # (workloads.companion) has ops of another data type, which the system
    # serves through a client made for that workload. Ops pinned to a node
    # (final reads asked of every node) go to that node first, not to the
    # leader a redirect named: a client of their own.
    clients: dict[tuple[str, bool], Any] = {}

    def client_for(workload: str, pinned: bool) -> Any:
        if (workload, pinned) not in clients:
            clients[workload, pinned] = system.client_class(workload)(
                workload, nodes, options | {"follow_leader": False} if pinned else options)
        return clients[workload, pinned]

    client_for(main_workload, False)
    write_frame(stdout, {"kind": READY})
    try:
        while (msg := read_frame(stdin)) is not None:
            if msg.get("kind") != "op":
                break
            invoke = Op(0, 0, msg["process"], "invoke", msg["f"], msg.get("value"),
                        msg.get("key"), msg.get("node"))
            doing[0] = f"op {invoke.f} {invoke.value!r} on {invoke.node}"
            target = client_for(msg.get("workload") or main_workload, bool(msg.get("pinned")))
            done = target.invoke(invoke)
            write_frame(stdout, {"type": done.type, "value": done.value, "error": done.error,
                                 "node": done.node, "level": done.level})
        doing[0] = "closing the client"
    finally:
        for client in clients.values():
            client.close()
    return 0


def main() -> int:
    stdin = sys.stdin.buffer
    # Frames own stdout; anything a library prints must not corrupt them.
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return serve(stdin, stdout)


if __name__ == "__main__":
    sys.exit(main())
