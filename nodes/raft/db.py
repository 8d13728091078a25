"""DB adapter for the raft node (the `nodes.db.DB` protocol in docs/contracts.md).

Says what to run and how to look at a node; the harness owns the processes.
Node options understood: "cluster_id" (default: a new random id per cluster,
made when its data dirs are formatted), "tick_ms", "request_timeout_ms", "seed",
"bugs" (list of bug switch names), "voters", "auto_join".
"""

from __future__ import annotations

import hashlib
import importlib.util
import time
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import msgpack

from nodes.child_python import module_argv
from nodes.db import FAILOVER_ELECTION_ROUNDS, RECOVERY_FAILOVERS, NodeSpec, NodeState, Timers
from nodes.log_patterns import PYTHON_BENIGN_LINES, PYTHON_FAILURE_LINES
from nodes.raft import storage
from nodes.raft.client import NodeClient, NotSent
from nodes.raft.core import Config
from nodes.raft.dump import write_dump
from nodes.raft.fault_rows import POWER_CUT_AFTER_COMMIT
from nodes.raft.requests import NO_ACK

STATUS_TIMEOUT_S = 1.0
# The key the nemesis writes to grow a leader's log (`grow_log`); no workload
# reads or writes it.
FILL_KEY = "faultline-nemesis-fill"
CHANGE_TIMEOUT_S = 5.0  # a voter change waits for its record to commit
APPLIED_STATE_TIMEOUT_S = 5.0  # a whole state machine in one frame (at most 4 MiB)


def _config_default(name: str) -> int:
    default = next(f.default for f in fields(Config) if f.name == name)
    assert isinstance(default, int), name   # every Config timer has a plain default
    return default


def timers(options: Mapping[str, Any]) -> Timers:
    """The node's own timers: a follower notices a lost leader after its fetch
    timeout, and each election round waits at most twice the election
    timeout (it is drawn from [T, 2T)). Pre-Vote with leader stickiness and
    check-quorum: a node coming back never deposes a healthy leader."""
    tick_s = int(options.get("tick_ms") or 50) / 1000
    election_s = _config_default("election_timeout_ticks") * tick_s
    fetch_s = _config_default("fetch_timeout_ticks") * tick_s
    failover = round(fetch_s + FAILOVER_ELECTION_ROUNDS * 2 * election_s, 3)
    # A node back up finds its leader within two election rounds (a refused
    # pre-vote names it; its announcements repeat every half election timeout).
    rejoin = round(fetch_s + 2 * 2 * election_s, 3)
    return Timers(failover_s=failover, recovery_s=round(RECOVERY_FAILOVERS * failover, 3),
                  rejoin_s=rejoin, rejoin_disrupts=False,
                  source=f"raft: tick {tick_s * 1000:g} ms, election timeout {election_s:g} s, "
                         f"fetch timeout {fetch_s:g} s")


class RaftDB:
    kind = "raft"
    # What a run can judge besides the history: the replicated-log dump and
    # the JSON event lines on stdout.
    artifacts = frozenset({"log_dump", "events"})
    # Lines of a node's output that mean it tripped over itself: a Python
    # traceback's exception line (the role guards' IllegalTransition, the
    # recovered log's ValueError, an assertion), unless the exception is the
    # operating system's answer (a disk fault's I/O error, a lost connection).
    failure_log_lines = PYTHON_FAILURE_LINES
    benign_log_lines = PYTHON_BENIGN_LINES
    # CPython reads clocks through libc's clock_gettime: libfaketime reaches it.
    # Its timers (ticks, request expiry, asyncio) use the monotonic clock only.
    clock_preload = True
    clock_note = "a Python process: wall and monotonic clocks read through libc"
    # The compositions' power-cut ending (nodes.abilities.PowerCutOnAck): its
    # own trigger, on the leader's ack lines, every node at once.
    power_cut_on_ack = f"{POWER_CUT_AFTER_COMMIT.name}:all"
    # --node-option keys it reads, with their kind (checked before a run starts).
    OPTIONS = {"cluster_id": "string", "tick_ms": "positive-int",
               "request_timeout_ms": "positive-int", "seed": "int", "bugs": "string-list",
               "voters": "node-names", "auto_join": "bool"}

    def __init__(self) -> None:
        # KIP-595: a cluster id is made once, when the cluster's data dirs are
        # formatted; a node re-formatted for another cluster is configured
        # for that one (`reformat`).
        self._cluster_id: str | None = None
        self._reformatted: dict[str, str] = {}

    def cluster_id(self, node: NodeSpec) -> str:
        """The cluster the node is configured for."""
        if node.name in self._reformatted:
            return self._reformatted[node.name]
        if node.options.get("cluster_id") is not None:
            return str(node.options["cluster_id"])
        if self._cluster_id is None:
            self._cluster_id = storage.new_cluster_id()
        return self._cluster_id

    def reformat(self, node: NodeSpec, cluster_id: str | None) -> str:
        """Format the node's (emptied) data dir for `cluster_id` and configure
        the node for that cluster from its next start; None undoes it (its own
        data put back). Returns the id the node is now configured for."""
        self._reformatted.pop(node.name, None)
        if cluster_id is None:
            return self.cluster_id(node)
        storage.format_data_dir(node.data_dir, cluster_id)
        self._reformatted[node.name] = cluster_id
        return cluster_id

    def check_installed(self) -> str | None:
        if importlib.util.find_spec("msgpack") is None:
            return "Install msgpack into the harness's Python: pip install msgpack."
        return None

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None:
        storage.format_data_dir(node.data_dir, self.cluster_id(node))

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]:
        # `fresh` needs nothing here: a node with an empty data dir simply starts
        # from an empty log, and a restarted one recovers what it has.
        options = node.options
        argv = module_argv(
            "nodes.raft",
            "--id", node.name,
            # One argument: an id of an option's shape must not read as an option.
            f"--cluster-id={self.cluster_id(node)}",
            "--listen", node.address,
            "--peers", ",".join(f"{n.name}={n.address}" for n in cluster),
            "--data-dir", str(node.data_dir),
        )
        for flag in ("tick_ms", "request_timeout_ms", "seed"):
            if options.get(flag) is not None:
                argv += [f"--{flag.replace('_', '-')}", str(int(options[flag]))]
        for bug in options.get("bugs", []):
            argv += ["--bug", str(bug)]
        # KIP-853: nodes of the cluster not among the bootstrap voters observe.
        if options.get("voters"):
            argv += ["--voters", ",".join(str(v) for v in options["voters"])]
        if options.get("auto_join"):
            argv.append("--auto-join")
        return argv

    def _status(self, node: NodeSpec) -> dict | None:
        try:
            with NodeClient(node.address, timeout=STATUS_TIMEOUT_S) as client:
                response = client.status()
        except OSError:
            return None
        return response.value if response.ok else None

    def status(self, node: NodeSpec) -> dict | None:
        """The node's own view (role, epoch, leader, hw, log_end), or None if it
        does not answer."""
        return self._status(node)

    def replica_progress(self, node: NodeSpec) -> dict[str, Any] | None:
        """`nodes.db.ReplicaProgress`: its high watermark and log end."""
        status = self._status(node)
        if status is None:
            return None
        return {"committed": status.get("hw"), "log_end": status.get("log_end")}

    def grow_log(self, node: NodeSpec, to_end: int, deadline: float) -> dict:
        """Append blind writes (acked at once, consistency none) to a key no
        workload uses at `node`, a leader, until its log reaches `to_end` or
        `deadline` (time.monotonic) passes; what it did."""
        appended, log_end, error = 0, None, None
        try:
            with NodeClient(node.address, timeout=STATUS_TIMEOUT_S) as client:
                while time.monotonic() < deadline:
                    status = client.status()
                    log_end = (status.value or {}).get("log_end") if status.ok else None
                    if log_end is None or log_end >= to_end:
                        break
                    for _ in range(to_end - log_end):
                        response = client.call("put", key=FILL_KEY, consistency=NO_ACK,
                                               value=f"{node.name}-{time.monotonic_ns()}")
                        if not response.ok:
                            error = response.error
                            break
                        appended += 1
                    if error is not None:
                        break
        except OSError as e:
            error = str(e) or type(e).__name__
        return {"node": node.name, "to": to_end, "appended": appended, "log_end": log_end,
                "error": error}

    def applied_state(self, node: NodeSpec, workload: str) -> NodeState | None:
        """The node's own state machine (no read barrier), in `workload`'s
        keys, with a digest of all of it (the nemesis' fill key included)."""
        try:
            with NodeClient(node.address, timeout=APPLIED_STATE_TIMEOUT_S) as client:
                response = client.applied_state()
        except OSError:
            return None
        if not response.ok or not isinstance(response.value, dict):
            return None
        kv = sorted((k, v) for k, v in response.value.get("kv") or [])
        logs = sorted((k, v) for k, v in response.value.get("logs") or [])
        digest = hashlib.sha256(msgpack.packb([kv, logs], use_bin_type=True)).hexdigest()
        return {"position": int(response.value["applied_end"]), "digest": digest,
                "keys": [[None if k == workload else k, v] for k, v in kv if k != FILL_KEY],
                "logs": [[k, v] for k, v in logs]}

    def change_voters(self, cluster: list[NodeSpec], change: str, node: str) -> dict:
        """AddRaftVoter / RemoveRaftVoter (KIP-853) through the leader's client
        port, answered once the new voter set commits."""
        leader = self.leader(cluster)
        if leader is None:
            return {"ok": False, "error": "no_leader"}
        address = next(n.address for n in cluster if n.name == leader)
        try:
            with NodeClient(address, timeout=CHANGE_TIMEOUT_S) as client:
                response = client.call(f"{change}_voter", node=node)
        except OSError as e:
            # Only a request never sent is definitely not made.
            return {"ok": False, "error": "timeout" if isinstance(e, TimeoutError) else str(e),
                    "definite": isinstance(e, NotSent)}
        return {"ok": response.ok, "error": response.error, "leader": leader,
                "definite": response.definite,
                "voters": (response.value or {}).get("voters") if response.ok else None}

    def is_ready(self, node: NodeSpec) -> bool:
        """Up and part of a quorum that has a leader."""
        status = self._status(node)
        return status is not None and status.get("leader") is not None

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        """The node that says it leads, in the highest epoch any leader claims."""
        best: tuple[int, str] | None = None
        for node in cluster:
            status = self._status(node)
            if status and status.get("role") == "Leader":
                claim = (int(status["epoch"]), node.name)
                best = claim if best is None or claim > best else best
        return best[1] if best else None

    def data_files(self, node: NodeSpec) -> list[Path]:
        segments = [p for _, p in storage.list_segments(node.data_dir / storage.LOG_DIR)]
        others = [
            node.data_dir / name
            for name in (storage.QUORUM_STATE_FILE, storage.EPOCH_CHECKPOINT_FILE,
                         storage.HIGH_WATERMARK_FILE)
        ]
        return segments + [p for p in others if p.exists()]

    def state_files(self, node: NodeSpec) -> list[Path]:
        """Where a node keeps the votes it gave (nemesis `lose-state`)."""
        return [node.data_dir / storage.QUORUM_STATE_FILE]

    def dump_log(self, node: NodeSpec, out: Path) -> None:
        write_dump(node.data_dir, out, node.name)
