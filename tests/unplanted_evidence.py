"""For each unplanted bug (bench/unplanted/*.patch): a scenario where the
patched code misbehaves and the correct code does not, in the deterministic
simulation or against one component of the node.

Run from a scratch copy's root (bench/scratch.py) so the patched modules load:

    python tests/unplanted_evidence.py NAME     # prints {"misbehaved": bool, "detail": str}

tests/raft/test_unplanted_bugs.py runs every scenario on the correct code in
process and on each patched copy in a subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    # Run from a scratch copy: its own modules, never the editable install's.
    sys.path[:0] = [str(HERE.parent), str(HERE)]

import msgpack  # noqa: E402

from nodes.raft import storage  # noqa: E402
from nodes.raft.core import Entry  # noqa: E402
from nodes.raft.requests import QUORUM  # noqa: E402
from nodes.raft.roles import LEADER  # noqa: E402
from nodes.raft.sim import Sim  # noqa: E402
from nodes.raft.state_machine import StateMachine  # noqa: E402

Finding = tuple[bool, str]
CHAOS_SEEDS = range(60)


def sim_chaos() -> Finding:
    """test_raft_safety's random faults (crashes, partitions, lossy network),
    then heal: a safety violation or no progress after the heal."""
    from tests.raft.test_raft_safety import run_seed
    for seed in CHAOS_SEEDS:
        try:
            run_seed(seed)
        except (AssertionError, RuntimeError, IndexError) as e:
            return True, f"seed {seed}: {str(e)[:300]}"
    return False, f"seeds {CHAOS_SEEDS.start}-{CHAOS_SEEDS.stop - 1} safe and live"


def minority_down() -> Finding:
    """3 nodes, one follower crashed: a proposal must still commit."""
    for seed in range(5):
        sim = Sim(("n1", "n2", "n3"), seed=seed)
        leader = sim.settle()
        sim.crash(next(n for n in sim.nodes if n != leader))
        proposed = sim.propose(b"x")
        assert proposed is not None
        _, offset = proposed
        core = sim.core(leader)
        if not sim.run_until(lambda c=core, o=offset: c.high_watermark > o, 300):
            return True, f"seed {seed}: nothing commits with 2 of 3 up: {sim.describe()}"
    return False, "a proposal commits with one of three nodes down"


def ack_before_commit() -> Finding:
    """Every quorum-level acknowledgement the core reports names a committed offset."""
    for seed in range(5):
        sim = Sim(("n1", "n2", "n3"), seed=seed, flush_lag=(1, 4))
        leader = sim.settle()
        node = sim.nodes[leader]
        seen = len(node.acked)
        for i in range(40):
            sim.propose(b"w%d" % i)
            sim.step()
            for offset, level in node.acked[seen:]:
                hw = sim.core(leader).high_watermark
                if level == QUORUM and offset >= hw:
                    return True, f"seed {seed}: offset {offset} acknowledged at hw {hw}"
            seen = len(node.acked)
    return False, "every quorum acknowledgement was of a committed offset"


class _Answers:
    """A client connection that keeps what the server answers."""

    def __init__(self) -> None:
        self.replies: list[tuple] = []

    def reply(self, request_id, outcome, definite=True, leader=None) -> None:  # noqa: ANN001
        self.replies.append((request_id, outcome.ok, outcome.value, outcome.error))


def _server(data_dir: Path, peers: tuple[str, ...]):  # noqa: ANN202
    from nodes.raft.server import NodeOptions, RaftServer
    options = NodeOptions(node_id=peers[0], cluster_id="evidence", listen=("127.0.0.1", 0),
                          peers={p: ("127.0.0.1", 1) for p in peers}, data_dir=data_dir)
    server = RaftServer(options)
    with contextlib.redirect_stdout(io.StringIO()):
        server.recover()
    return server


def follower_read() -> Finding:
    """A node that does not lead holds k=1 and is asked for k."""
    with tempfile.TemporaryDirectory() as tmp:
        server = _server(Path(tmp), ("n1", "n2", "n3"))
        server.state_machine.kv["k"] = 1
        answers = _Answers()

        async def ask() -> None:
            server._on_client_request({"id": 1, "op": "get", "key": "k"}, answers)
            await asyncio.sleep(0)
        asyncio.run(ask())
        server.log.close()
    if answers.replies and answers.replies[0][1]:
        return True, f"a follower answered the read itself: {answers.replies[0]}"
    return False, f"a follower sends the reader away: {answers.replies}"


def read_before_commit() -> Finding:
    """A one-voter leader whose disk never flushes (no flush loop): nothing
    commits, so a read must stay unanswered."""
    with tempfile.TemporaryDirectory() as tmp:
        server = _server(Path(tmp), ("n1",))
        for _ in range(60):
            server.core.tick()
        with contextlib.redirect_stdout(io.StringIO()):
            server.process_ready()
        assert server.core.role == LEADER, server.core.role
        answers = _Answers()

        async def ask() -> None:
            server._on_client_request({"id": 1, "op": "put", "key": "k", "value": 1}, answers)
            server._on_client_request({"id": 2, "op": "get", "key": "k"}, answers)
            await asyncio.sleep(0.05)
        with contextlib.redirect_stdout(io.StringIO()):
            asyncio.run(ask())
        server.log.close()
    if answers.replies:
        return True, f"answered before anything committed: {answers.replies}"
    return False, "no answer before the barrier commits"


def disk_truncation() -> Finding:
    """Write 0-4 (epoch 1), truncate to 3, write 3-4 (epoch 2), reopen."""
    with tempfile.TemporaryDirectory() as tmp:
        log, _ = storage.SegmentedLog.open(Path(tmp))
        log.append([storage.LogRecord(i, 1, b"a%d" % i) for i in range(5)])
        log.sync()
        log.truncate(3)
        written = [storage.LogRecord(i, 2, b"b%d" % i) for i in (3, 4)]
        log.append(written)
        log.sync()
        log.close()
        log, recovered = storage.SegmentedLog.open(Path(tmp))
        log.close()
    expected = [(i, 1) for i in range(3)] + [(3, 2), (4, 2)]
    got = [(r.offset, r.epoch) for r in recovered.records]
    if got != expected:
        return True, f"reopened log {got}, written {expected}"
    return False, "the reopened log is what was written"


def replay_after_restart() -> Finding:
    """A node restarts on a log of two committed puts (hw checkpoint 2) and
    applies its committed entries as the server does once it learns the hw."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        _server(data, ("n1", "n2", "n3")).log.close()
        log, _ = storage.SegmentedLog.open(data)
        log.append([storage.LogRecord(i, 1, msgpack.packb({"op": "put", "key": "k", "value": i}))
                    for i in range(2)])
        log.sync()
        log.close()
        storage.write_high_watermark(data, 2)
        server = _server(data, ("n1", "n2", "n3"))
        for entry in server.core.entries():
            server._apply(Entry(entry.offset, entry.epoch, entry.payload), False)
        server.log.close()
    if server.state_machine.kv.get("k") != 1:
        return True, f"state after replay {server.state_machine.kv}, log says k=1"
    return False, "replay rebuilt k=1"


def cas_on_absent_key() -> Finding:
    outcome = StateMachine().apply({"op": "cas", "key": "k", "expect": 5, "value": 6})
    if outcome.ok:
        return True, "cas expecting 5 succeeded on a key with no value"
    return False, f"cas on an absent key: {outcome.error}"


def txn_reads_own_append() -> Finding:
    outcome = StateMachine().apply({"op": "txn", "ops": [["append", "k", 1], ["r", "k", None]]})
    if outcome.value[1][2] != [1]:
        return True, f"txn [append k 1, r k] read {outcome.value[1][2]}"
    return False, "the txn read its own append"


def peer_link_reconnects() -> Finding:
    """A peer that drops every connection at once: the link must keep dialling."""
    from nodes.raft.peers import PeerLink

    async def scenario() -> tuple[int, bool]:
        accepted = 0

        async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal accepted
            accepted += 1
            writer.close()

        server = await asyncio.start_server(drop, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        link = PeerLink("p", "127.0.0.1", port, source_host="127.0.0.1")
        link.start()
        for i in range(40):
            link.send({"type": "fetch", "to": "p", "n": i, "pad": "x" * 1000})
            await asyncio.sleep(0.025)
        ended = link._task is not None and link._task.done()
        await link.close()
        server.close()
        return accepted, ended

    accepted, ended = asyncio.run(scenario())
    if accepted < 2 or ended:
        return True, f"connections made {accepted}, link task ended {ended}"
    return False, f"the link redialled ({accepted} connections)"


SCENARIOS: dict[str, Callable[[], Finding]] = {
    "follower-local-read": follower_read,
    "read-on-barrier-append": read_before_commit,
    "vote-epoch-only": sim_chaos,
    "own-vote-counted-twice": sim_chaos,
    "progress-before-validation": sim_chaos,
    "truncate-keeps-flushed-end": sim_chaos,
    "disk-truncate-keeps-one": disk_truncation,
    "replay-from-hw-checkpoint": replay_after_restart,
    "cas-absent-key": cas_on_absent_key,
    "txn-reads-first": txn_reads_own_append,
    "ack-at-high-watermark": ack_before_commit,
    "peer-link-gives-up": peer_link_reconnects,
    "commit-needs-extra-replica": minority_down,
}


def main(argv: list[str]) -> int:
    misbehaved, detail = SCENARIOS[argv[0]]()
    print(json.dumps({"misbehaved": misbehaved, "detail": detail}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
