"""Client worker processes and the dispatcher that feeds them ops.

As in Jepsen, the harness owns the generator and the history: it records an
invoke just before handing an op to a worker and the completion as soon as it
comes back, so every recorded interval contains the real one. A worker whose
op ends `info` takes a fresh process id (its old one may still be in flight
on the server, as far as anyone knows). A worker gets ops only once it has said
it is ready: an op queued behind a starting interpreter would be recorded as
seconds of unavailability the cluster never caused.
"""

from __future__ import annotations

import os
import random
import selectors
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checkers.history import LEVELS, Op
from harness.run.errors import ClientError
from harness.run.frames import FrameReader, encode
from harness.run.recorder import Recorder
from harness.run.worker import CLIENT_ERROR, READY
from nodes.child_python import module_argv
from workloads.ops import OpSpec


@dataclass
class Worker:
    slot: int
    process: int
    proc: subprocess.Popen[bytes]
    reader: FrameReader = field(default_factory=FrameReader)
    open_op: Op | None = None
    ready: bool = False


# What one client costs: a worker process (~17 MiB of its own once its client
# library is loaded, measured on a Python register client; 20 with a margin) and
# the two pipe ends the harness holds for it. Clients may take at most half
# of the memory free at start (nodes and checkers need the rest), and leave
# file descriptors and processes for the harness, nodes and nemesis.
WORKER_MIB = 20
WORKER_FDS = 2
RESERVED = 256


def max_concurrency() -> int:
    """The most clients this machine can hold: each is a process with two pipes
    and its own memory, so a `--concurrency` past this fails mid-run (EMFILE,
    EAGAIN or the OOM killer) instead of testing anything."""
    import resource

    import psutil

    fds = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    procs = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    bounds = [psutil.virtual_memory().available // 2 // (WORKER_MIB << 20)]
    if fds != resource.RLIM_INFINITY:
        bounds.append((fds - RESERVED) // WORKER_FDS)
    if procs != resource.RLIM_INFINITY:
        bounds.append(procs - RESERVED)
    return max(1, min(bounds))


# How long start() waits for the workers' interpreters; past it the run goes
# on and a late worker takes ops once it is ready.
READY_TIMEOUT_S = 60.0


class ClientPool:
    """N worker processes talking to the nodes of one cluster."""

    def __init__(self, concurrency: int, db_kind: str, workload: str,
                 nodes: dict[str, tuple[str, int]], options: dict[str, Any], log_dir: Path,
                 preexec_fn: Callable[[], None] | None = None,
                 node_rng: random.Random | None = None,
                 node_choice: str = "random") -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self._hello = {"kind": "open", "db": db_kind, "workload": workload,
                       "nodes": {k: list(v) for k, v in nodes.items()}, "options": options}
        self._node_names = sorted(nodes)
        self._node_choice = node_choice
        # A seeded stream of its own (harness.run.seeds "node-choice"), so a replay
        # sends each op to the node it went to.
        self._node_rng = node_rng or random.Random(0)
        self._log_dir = log_dir
        self._preexec_fn = preexec_fn
        self.workers: list[Worker] = []
        self._sel = selectors.DefaultSelector()
        # Told of every (invoke, completion) pair as it is recorded.
        self.on_complete: Callable[[Op, Op], None] | None = None

    def start(self, recorder: Recorder | None = None, timeout: float = READY_TIMEOUT_S) -> None:
        """Start the workers and wait (bounded) until each is ready. A worker
        that dies meanwhile is replaced (`recorder` takes nothing: no op is open)."""
        self._log_dir.mkdir(parents=True, exist_ok=True)
        for slot in range(self.concurrency):
            self.workers.append(self._spawn(slot, slot))
        deadline = time.monotonic() + timeout
        while not all(w.ready for w in self.workers) and time.monotonic() < deadline:
            self._poll(min(0.05, deadline - time.monotonic()), recorder)

    def _spawn(self, slot: int, process: int) -> Worker:
        stderr = open(self._log_dir / f"worker-{slot}.log", "ab")
        proc = subprocess.Popen(module_argv("harness.run.worker"),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                preexec_fn=self._preexec_fn, close_fds=True)
        stderr.close()
        assert proc.stdin is not None and proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        proc.stdin.write(encode(self._hello))
        proc.stdin.flush()
        w = Worker(slot, process, proc)
        self._sel.register(proc.stdout, selectors.EVENT_READ, w)
        return w

    def _choose_node(self, w: Worker) -> str:
        if self._node_choice == "sticky":
            return self._node_names[w.slot % len(self._node_names)]
        return self._node_rng.choice(self._node_names)

    def _send(self, w: Worker, spec: OpSpec, recorder: Recorder) -> None:
        pinned = spec.node in self._node_names
        node = spec.node if pinned else self._choose_node(w)
        w.open_op = recorder.record(w.process, "invoke", spec.f, spec.value, spec.key, node,
                                    workload=spec.workload)
        assert w.proc.stdin is not None
        try:
            w.proc.stdin.write(encode({"kind": "op", "process": w.process, "f": spec.f,
                                       "value": spec.value, "key": spec.key, "node": node,
                                       "pinned": pinned, "workload": spec.workload}))
            w.proc.stdin.flush()
        except BrokenPipeError:
            self._worker_died(w, recorder)

    def _complete(self, w: Worker, msg: dict[str, Any], recorder: Recorder) -> None:
        inv = w.open_op
        if inv is None:
            return
        w.open_op = None
        typ = msg.get("type")
        if typ not in ("ok", "fail", "info"):
            typ, msg = "info", {"error": f"worker sent a bad completion type {typ!r}"}
        # The consistency level the ack promised (checkers.acks); a level the
        # history format does not know would make the history unreadable.
        level = msg.get("level") if msg.get("level") in LEVELS else None
        done = recorder.record(inv.process, typ, inv.f, msg.get("value"), inv.key,
                               msg.get("node") or inv.node, msg.get("error"), level,
                               inv.workload)
        if typ == "info":
            w.process += self.concurrency
        if self.on_complete is not None:
            self.on_complete(inv, done)

    def _worker_died(self, w: Worker, recorder: Recorder | None) -> None:
        """A crashed worker's open op is indeterminate; a new worker takes its slot."""
        if w.open_op is not None:
            inv = w.open_op
            w.open_op = None
            if recorder is not None:   # an op is only open once recording has begun
                recorder.record(inv.process, "info", inv.f, inv.value, inv.key, inv.node,
                                "client-worker-died", workload=inv.workload)
        try:
            if w.proc.stdout is not None:
                self._sel.unregister(w.proc.stdout)
        except (KeyError, ValueError):
            pass
        w.proc.kill()
        w.proc.wait()
        self.workers[w.slot] = self._spawn(w.slot, w.process + self.concurrency)

    def _poll(self, timeout: float, recorder: Recorder | None) -> None:
        for key, _ in self._sel.select(max(0.0, timeout)):
            w: Worker = key.data
            try:
                data = os.read(key.fileobj.fileno(), 1 << 16)  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            if not data:
                self._worker_died(w, recorder)
                continue
            for msg in w.reader.feed(data):
                if msg.get("kind") == READY:
                    w.ready = True
                elif msg.get("kind") == CLIENT_ERROR:
                    # A bug in the client, not a crash the run can absorb: no
                    # replacement worker, the run ends as a harness error.
                    raise ClientError(str(self._hello["db"]), w.slot, str(msg.get("during")),
                                      str(msg.get("traceback")))
                elif recorder is not None:
                    self._complete(w, msg, recorder)

    def run(self, ops: Iterator[OpSpec], recorder: Recorder, deadline: float,
            rate: float | None, jitter: random.Random,
            on_tick: Callable[[], None] | None = None) -> None:
        """Dispatch ops until the deadline (monotonic s) or the generator ends,
        then wait for the ops in flight until the deadline passes.

        `rate` is ops/s over all workers (None: as fast as they go); gaps are
        jittered so clients do not march in lock-step.
        """
        exhausted = False
        turn = 0
        next_at = time.monotonic()
        last_tick = 0.0
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            # Round-robin over idle workers, so every client and its
            # connection is exercised, not just the fastest one.
            n = len(self.workers)
            if exhausted and self.in_flight() == 0:
                break
            idle = [w for w in (self.workers[(turn + i) % n] for i in range(n))
                    if w.open_op is None and w.ready]
            while idle and not exhausted and now >= next_at:
                spec = next(ops, None)
                if spec is None:
                    exhausted = True
                    break
                w = idle.pop(0)
                turn = w.slot + 1
                self._send(w, spec, recorder)
                if rate:
                    next_at += jitter.uniform(0.0, 2.0 / rate)
                    # After a stall (every worker blocked on a dead node), do not
                    # burst to catch up: the offered load stays what was asked.
                    next_at = max(next_at, now - 0.1)
            wait = 0.05
            if idle and not exhausted:
                wait = min(wait, max(0.0, next_at - now))
            self._poll(min(wait, deadline - now), recorder)
            if on_tick is not None and now - last_tick >= 0.5:
                last_tick = now
                on_tick()

    def in_flight(self) -> int:
        return sum(1 for w in self.workers if w.open_op is not None)

    def close(self, recorder: Recorder, error: str = "run-ended") -> None:
        """Stop every worker; ops still open become `info`."""
        for w in self.workers:
            if w.open_op is not None:
                inv = w.open_op
                w.open_op = None
                recorder.record(inv.process, "info", inv.f, inv.value, inv.key, inv.node, error,
                                workload=inv.workload)
            try:
                if w.proc.stdin is not None:
                    w.proc.stdin.close()
            except OSError:
                pass
        for w in self.workers:
            try:
                w.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            if w.proc.stdout is not None:
                w.proc.stdout.close()
        self._sel.close()
        self.workers = []
