"""DB adapter for etcd 3.4 (the `nodes.db.DB` protocol in docs/contracts.md).

Ports: a member serves clients on `node.host:node.port` and talks raft to its
peers on `node.host:node.port + 1`; it listens on nothing else (no metrics or
pprof listener is configured), so it is reachable only at the address the
harness gave it.

Node options understood: "cluster_token" (default "faultline"),
"heartbeat_ms" (100), "election_ms" (1000), "pre_vote" (bool, etcd's default
when unset).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import urllib3

from nodes.db import FAILOVER_ELECTION_ROUNDS, RECOVERY_FAILOVERS, NodeSpec, NodeState, Timers
from nodes.etcd.codec import (
    as_int,
    b64,
    client_url,
    key_in_workload,
    parse_status,
    peer_port,
    prefix_end,
    unb64,
)
from nodes.log_patterns import GO_BENIGN_LINES, GO_FAILURE_LINES

STATUS_TIMEOUT_S = 1.0
APPLIED_STATE_TIMEOUT_S = 5.0
# etcd 3.4's capnslog marks what ends the process (Fatal, Panic) with "C";
# its zap logger says "fatal" or "panic" as the level.
ETCD_FAILURE_LINES = (r"^\S+ \S+ C \| ", r'"level":"(?:fatal|panic|dpanic)"')
# etcd's raft stopping a member whose log is shorter than what it told the
# leader it holds: the answer to a fault that took its WAL's tail (truncate,
# a disk's), not a mistake of its own. The exit it brings is still judged:
# node-exits excuses it only after a fault that takes state
# (`FaultOp.loses_state`), so a member that lost its log on its own is flagged.
ETCD_STATE_LOSS_LINES = (r"Was the raft log corrupted, truncated, or lost\?",)
INSTALL_HINT = "etcd is not installed: apt-get install etcd-server etcd-client"


def _decoded(raw: bytes) -> Any:
    """A value as the workload client wrote it (JSON), else its text."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def peer_url(node: NodeSpec) -> str:
    return client_url(node.host, peer_port(node.port))


def member_dir(node: NodeSpec) -> Path:
    return node.data_dir / "member"


CHANGE_TIMEOUT_S = 5.0  # a member add/remove answers once the change is applied
# etcd's refusals that only mean "not now", as the codes the membership fault
# retries: a member that has not been connected long enough, or a change
# still being applied (--strict-reconfig-check).
NOT_NOW = {"etcdserver: unhealthy cluster": "not_caught_up",
           "etcdserver: request timed out": "timeout",
           "etcdserver: leader changed": "not_leader",
           "etcdserver: re-configuration failed due to not enough started members":
               "not_caught_up"}

# etcd's answers to a member change that may still be applied: the proposal
# was made but not seen through (no answer at all is in doubt as well). A
# leader that removes itself applies the change and stops before it answers:
# "server stopped" (default run seed 22, 2026-11-27: taken for a refusal, the
# removed n1 was never added back, and the members restarted later named it
# in --initial-cluster and exited).
CHANGE_IN_DOUBT = ("etcdserver: request timed out", "etcdserver: leader changed",
                   "etcdserver: server stopped")

# etcd's own defaults, and its upper bound on the election timeout.
HEARTBEAT_MS, ELECTION_MS, MAX_ELECTION_MS = 100, 1000, 50_000


def timers(options: Mapping[str, Any]) -> Timers:
    """etcd's: a follower campaigns after a randomized election timeout in
    [T, 2T); without Pre-Vote (3.4's default) a member coming back with a
    higher term deposes a healthy leader."""
    election_s = int(options.get("election_ms", ELECTION_MS)) / 1000
    heartbeat_s = int(options.get("heartbeat_ms", HEARTBEAT_MS)) / 1000
    failover = round(heartbeat_s + FAILOVER_ELECTION_ROUNDS * 2 * election_s, 3)
    return Timers(failover_s=failover, recovery_s=round(RECOVERY_FAILOVERS * failover, 3),
                  rejoin_s=failover,
                  rejoin_disrupts=not options.get("pre_vote"),
                  source=f"etcd: election timeout {election_s:g} s, heartbeat {heartbeat_s:g} s")


class EtcdDB:
    kind = "etcd"
    # A removed member shuts itself down, and one added (back) must start with
    # an empty data dir: the membership fault stops it after a removal and
    # starts it after an add (nemesis/membership.py).
    members_leave_when_removed = True
    # No log dump (etcd has no honest offline one) and no event lines.
    artifacts: frozenset[str] = frozenset()
    failure_log_lines = GO_FAILURE_LINES + ETCD_FAILURE_LINES
    benign_log_lines = GO_BENIGN_LINES + ETCD_STATE_LOSS_LINES
    clock_preload = False
    clock_note = ("etcd is a Go binary: it reads the clock through the vDSO, not libc, so "
                  "libfaketime (LD_PRELOAD) cannot set it off")
    # --node-option keys it reads, with their kind (checked before a run starts).
    OPTIONS = {"cluster_token": "string", "heartbeat_ms": "positive-int",
               "election_ms": "positive-int", "pre_vote": "bool", "seed": "int"}

    @staticmethod
    def check_options(options: dict) -> None:
        """What etcd itself refuses at start (it exits before it is ready): an
        election timeout under 5 heartbeats, or over 50 s."""
        heartbeat = options.get("heartbeat_ms", HEARTBEAT_MS)
        election = options.get("election_ms", ELECTION_MS)
        if election < 5 * heartbeat:
            raise ValueError(f"election_ms ({election}) must be at least 5 x heartbeat_ms "
                             f"({heartbeat}), as etcd requires")
        if election > MAX_ELECTION_MS:
            raise ValueError(f"election_ms must be at most {MAX_ELECTION_MS} (etcd's limit), "
                             f"not {election}")

    def __init__(self) -> None:
        # One pool per adapter, no retries: a status probe that fails says so.
        self._http = urllib3.PoolManager(retries=False, maxsize=4)
        # Members removed through change_voters and not added back: a member
        # added later must name the current members in --initial-cluster.
        self._removed: set[str] = set()

    def check_installed(self) -> str | None:
        return None if shutil.which("etcd") else INSTALL_HINT

    def setup(self, node: NodeSpec, cluster: list[NodeSpec]) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)

    def argv(self, node: NodeSpec, cluster: list[NodeSpec], fresh: bool) -> list[str]:
        options = node.options
        url = client_url(node.host, node.port)
        # A member restarted with its data dir ignores every --initial-* flag
        # and recovers from its WAL. One restarted without one (wiped or never
        # written) must not bootstrap a second cluster of its own, so any
        # start after the first says "existing": it then joins the running
        # cluster as the member the static --initial-cluster already names.
        argv = [
            shutil.which("etcd") or "etcd",
            "--name", node.name,
            "--data-dir", str(node.data_dir),
            "--listen-client-urls", url,
            "--advertise-client-urls", url,
            "--listen-peer-urls", peer_url(node),
            "--initial-advertise-peer-urls", peer_url(node),
            "--initial-cluster", ",".join(f"{n.name}={peer_url(n)}" for n in cluster
                                          if n.name not in self._removed or n is node),
            "--initial-cluster-state", "new" if fresh else "existing",
            "--initial-cluster-token", str(options.get("cluster_token", "faultline")),
            "--heartbeat-interval", str(int(options.get("heartbeat_ms", HEARTBEAT_MS))),
            "--election-timeout", str(int(options.get("election_ms", ELECTION_MS))),
        ]
        if options.get("pre_vote") is not None:
            # etcd's boolean flags take their value only after '='.
            argv.append(f"--pre-vote={'true' if options['pre_vote'] else 'false'}")
        return argv

    def _post(self, node: NodeSpec, path: str, body: dict, timeout: float) -> dict | None:
        """The gateway's JSON answer, or {"error": ...} when it refused, or None
        when the member did not answer."""
        try:
            resp = self._http.request(
                "POST", client_url(node.host, node.port) + path, body=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"}, timeout=urllib3.Timeout(timeout))
        except urllib3.exceptions.HTTPError:
            return None
        try:
            doc = json.loads(resp.data)
        except ValueError:
            return {"error": f"HTTP {resp.status}"}
        if not isinstance(doc, dict):
            return {"error": f"HTTP {resp.status}: not a JSON object"}
        if resp.status != 200:
            return {"error": str(doc.get("error") or doc.get("message") or resp.status)}
        return doc

    def change_voters(self, cluster: list[NodeSpec], change: str, node: str) -> dict:
        """etcd's member remove / member add (what its own robustness tests
        use), sent to the leader. An added member's data dir is emptied here:
        it joins as a new member. The caller stops it before an add and
        starts it after (`members_leave_when_removed`)."""
        leader = self.leader(cluster)
        if leader is None:
            return {"ok": False, "error": "no_leader"}
        at = next(n for n in cluster if n.name == leader)
        target = next(n for n in cluster if n.name == node)
        listed = self._post(at, "/v3/cluster/member/list", {}, CHANGE_TIMEOUT_S)
        if listed is None or "error" in listed:
            return {"ok": False, "error": "timeout" if listed is None else listed["error"]}
        members = listed.get("members") or []
        mine = [m for m in members if peer_url(target) in (m.get("peerURLs") or [])]
        if change == "remove":
            if not mine:
                return {"ok": False, "error": "voter_not_found"}
            answer = self._post(at, "/v3/cluster/member/remove", {"ID": mine[0]["ID"]},
                                CHANGE_TIMEOUT_S)
        else:
            if mine:
                return {"ok": False, "error": "duplicate_voter"}
            answer = self._post(at, "/v3/cluster/member/add",
                                {"peerURLs": [peer_url(target)]}, CHANGE_TIMEOUT_S)
        if answer is None or "error" in answer:
            error = "timeout" if answer is None else answer["error"]
            return {"ok": False, "leader": leader, "error": NOT_NOW.get(error, error),
                    "definite": answer is not None and error not in CHANGE_IN_DOUBT}
        if change == "remove":
            self._removed.add(node)
        else:
            self._removed.discard(node)
            shutil.rmtree(member_dir(target), ignore_errors=True)
        names = {m.get("name") or n.name for m in answer.get("members") or []
                 for n in cluster if peer_url(n) in (m.get("peerURLs") or [])}
        return {"ok": True, "error": None, "leader": leader, "voters": sorted(names)}

    def _status(self, node: NodeSpec) -> tuple[int, int, int] | None:
        try:
            resp = self._http.request(
                "POST", client_url(node.host, node.port) + "/v3/maintenance/status",
                body=b"{}", headers={"Content-Type": "application/json"},
                timeout=urllib3.Timeout(STATUS_TIMEOUT_S))
        except urllib3.exceptions.HTTPError:
            return None
        if resp.status != 200:
            return None
        try:
            return parse_status(json.loads(resp.data))
        except (ValueError, TypeError):
            return None

    def applied_state(self, node: NodeSpec, workload: str) -> NodeState | None:
        """Every key of `workload` as this member has applied it: a serializable
        range, answered from the member's own store (no quorum), at the
        revision it has applied. No digest: HashKV is not on the 3.4 gateway,
        and Hash covers the whole backend, not only what the members agree on."""
        found = self._post(node, "/v3/kv/range", {
            "key": b64(workload), "range_end": b64(prefix_end(workload)),
            "serializable": True}, APPLIED_STATE_TIMEOUT_S)
        if found is None or "error" in found:
            return None
        keys = []
        for kv in found.get("kvs") or []:
            ours, key = key_in_workload(workload, unb64(kv.get("key")).decode(errors="replace"))
            if ours:
                keys.append([key, _decoded(unb64(kv.get("value")))])
        return {"position": as_int((found.get("header") or {}).get("revision")), "keys": keys}

    def is_ready(self, node: NodeSpec) -> bool:
        """Serving clients and aware of a leader. etcd opens its client port only
        once it has joined a quorum, so an answer with a leader means ready."""
        status = self._status(node)
        return status is not None and status[1] != 0

    def leader(self, cluster: list[NodeSpec]) -> str | None:
        """The member that says it leads (its leader id is its own id), in the
        highest term any such member reports."""
        best: tuple[int, str] | None = None
        for node in cluster:
            status = self._status(node)
            if status is None:
                continue
            member_id, leader_id, term = status
            if member_id and member_id == leader_id:
                claim = (term, node.name)
                best = claim if best is None or claim > best else best
        return best[1] if best else None

    def data_files(self, node: NodeSpec) -> list[Path]:
        """The WAL segments and raft snapshots, oldest first. Not the bbolt `db`
        file: it is a page-structured B+tree that etcd rebuilds from the WAL on
        restart only up to its last snapshot, and a truncated B+tree is a
        corrupt file, not a lost tail of writes."""
        member = member_dir(node)
        wal = sorted((member / "wal").glob("*.wal"))
        snaps = sorted((member / "snap").glob("*.snap"))
        return wal + snaps

    def dump_log(self, node: NodeSpec, out: Path) -> None:
        """Writes nothing. etcd has no offline dump of its raft log in our shape
        (offset, epoch, committed, payload digest) short of parsing its WAL
        format, and a partial dump would make the divergence checker report
        lost or diverging entries that are not; so etcd runs have no dumps and
        divergence says "unknown" rather than guessing."""
