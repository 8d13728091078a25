"""The node-logs and node-exits checkers: pass and fail twins, with the
patterns the systems declare."""

from __future__ import annotations

import pytest

from checkers import node_logs
from checkers.history import NEMESIS, Op
from nodes.etcd.db import EtcdDB
from nodes.log_patterns import GENERIC_BENIGN_LINES, GENERIC_FAILURE_LINES
from nodes.raft.db import RaftDB

RAFT = (RaftDB.failure_log_lines, RaftDB.benign_log_lines)
ETCD = (EtcdDB.failure_log_lines, EtcdDB.benign_log_lines)
GENERIC = (GENERIC_FAILURE_LINES, GENERIC_BENIGN_LINES)

GUARD_TRACEBACK = """Exception in callback RaftServer.process_ready()
handle: <Handle RaftServer.process_ready()>
Traceback (most recent call last):
  File "/work/nodes/raft/server.py", line 301, in process_ready
    self._handle(ready)
nodes.raft.roles.IllegalTransition: Follower -> Leader without a vote majority"""

DISK_TRACEBACK = """Exception in callback RaftServer.process_ready()
Traceback (most recent call last):
  File "/work/nodes/raft/storage.py", line 119, in write_file_atomically
    os.fsync(fd)
OSError: [Errno 5] Input/output error"""

EVENTS = '{"t": 1, "node": "n1", "event": "error", "what": "ValueError: in a JSON field"}'


def lines(node: str, text: str, file: str = "stderr.log") -> list[tuple[str, str, int, str]]:
    return [(node, file, i + 1, t) for i, t in enumerate(text.splitlines())]


@pytest.mark.parametrize("patterns", [RAFT, GENERIC])
def test_a_python_guard_exception_is_quoted_with_node_file_and_line(patterns) -> None:
    v = node_logs.check_logs(lines("n2", GUARD_TRACEBACK), *patterns)
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert (a["node"], a["file"], a["line"]) == ("n2", "stderr.log", 6)
    assert a["text"].startswith("nodes.raft.roles.IllegalTransition: Follower")


@pytest.mark.parametrize("text", [
    "AssertionError", "ValueError: recovered log is not contiguous from 0 at index 7",
    "RuntimeError: applied past the log end", "KeyError: 'n9'"])
def test_other_python_exceptions_count(text: str) -> None:
    assert node_logs.check_logs(lines("n1", text), *RAFT)["valid"] is False


@pytest.mark.parametrize("text", [
    DISK_TRACEBACK, "ConnectionResetError: [Errno 104] Connection reset by peer",
    "BrokenPipeError: [Errno 32] Broken pipe", EVENTS,
    "n1: closing connection: frame length 99999999 exceeds 4194304",
    "listening on 10.0.0.1:7000"])
def test_what_faults_cause_and_ordinary_output_do_not_count(text: str) -> None:
    v = node_logs.check_logs(lines("n1", text), *RAFT)
    assert v["valid"] is True, v


@pytest.mark.parametrize("text, caught", [
    ("panic: runtime error: index out of range [3] with length 3", True),
    ("fatal error: concurrent map writes", True),
    ("2026-11-26 18:00:00.000000 C | etcdserver: failed to apply: corrupt", True),
    ('{"level":"panic","msg":"failed to recover v3 backend"}', True),   # zap's JSON lines
    ('{"level":"warn","msg":"lost TCP streaming connection with remote peer"}', False),
    ("2026-11-26 18:00:00.000000 W | rafthttp: lost the TCP streaming connection", False),
    ("2026-11-26 18:00:00.000000 E | rafthttp: failed to dial 2a3b: connection refused", False),
    # A disk made to fail: etcd stops on it (fail-stop, as a correct node
    # must; seen under disk:eio+nodes=all), the operating system's error
    # ending the line; the same line with another cause, or saying more
    # after the error, still counts.
    ("2026-11-27 09:44:12.337249 C | etcdserver: failed to save state and entries error: "
     "write /tmp/n1/member/wal.tmp/0000000000000000-0000000000000000.wal: input/output error",
     False),
    ("2026-11-27 09:44:14.895693 C | mvcc/backend: cannot commit tx (write "
     "/tmp/n1/member/snap/db: input/output error)", False),
    ("2026-11-27 09:44:14.895693 C | mvcc/backend: cannot commit tx (write "
     "/tmp/n1/member/snap/db: no space left on device)", False),
    ("panic: write /tmp/n1/member/wal/0.wal: input/output error", False),
    ("2026-11-27 09:44:14.895693 C | mvcc/backend: cannot commit tx (checksum mismatch)", True),
    ("2026-11-27 09:44:12.337249 C | etcdserver: input/output error: applied index went "
     "backwards", True),
    ("panic: runtime error: invalid memory address or nil pointer dereference", True),
])
def test_go_and_etcd_lines(text: str, caught: bool) -> None:
    assert node_logs.check_logs(lines("n1", text), *ETCD)["valid"] is (not caught)


# etcd n4's stderr in a default (hunt) run, seed 5, 2026-11-27: the hunt's
# `disk` fault filled n4's disk and etcd stopped, as it must without a WAL.
ETCD_DISK_FULL = ("2026-11-27 09:04:09.277617 C | etcdserver: failed to save state and entries "
                  "error: write /tmp/faultline-20261127T090355.643029Z-be60a8-3ugilq59/n4/member/"
                  "wal.tmp/0000000000000000-0000000000000000.wal: no space left on device")


ETCD_STATE_LOST = ("panic: tocommit(367) is out of range [lastIndex(353)]. Was the raft log "
                   "corrupted, truncated, or lost?")


@pytest.mark.parametrize("text, caught", [
    (ETCD_DISK_FULL, False),
    ("panic: sync /data/member/wal/0.wal: input/output error", False),
    ('{"level":"fatal","msg":"failed to save","error":"write x.wal: input/output error"}', False),
    # The same fatal line without the OS's error is etcd's own.
    (ETCD_DISK_FULL.rsplit(": ", 1)[0] + ": unexpected EOF", True),
    # A member whose WAL tail a truncate took (default run seed 18): its
    # exit is node-exits' to judge (below).
    (ETCD_STATE_LOST, False),
    ("panic: runtime error: index out of range [3] with length 3", True),
])
def test_a_go_node_stopping_on_its_disk_faults_error_is_not_its_own_failure(
        text: str, caught: bool) -> None:
    assert node_logs.check_logs(lines("n4", text), *ETCD)["valid"] is (not caught)


def test_no_patterns_or_no_lines_is_unknown() -> None:
    assert node_logs.check_logs(lines("n1", "x"), ())["valid"] == "unknown"
    assert node_logs.check_logs([], *RAFT)["valid"] == "unknown"


def test_a_bad_pattern_is_one_sentence() -> None:
    with pytest.raises(ValueError, match="does not compile"):
        node_logs.check_logs(lines("n1", "x"), ("(",))


# --- exits ------------------------------------------------------------------

S = 1_000_000_000
START = 10 * S


def nemesis(index: int, t: float, f: str, kind: str = "info") -> Op:
    return Op(index, int(t * S), NEMESIS, kind, f, {"nodes": ["n3"]})


def test_an_exit_no_kill_caused_is_an_anomaly_with_time_and_status() -> None:
    exits = [{"node": "n2", "monotonic_ns": START + 3 * S, "status": 1, "signal": None}]
    v = node_logs.check_exits(exits, [], START)
    assert v["valid"] is False
    [a] = v["anomalies"]
    assert (a["node"], a["time"], a["status"]) == ("n2", 3 * S, 1)


def test_no_exits_is_valid() -> None:
    assert node_logs.check_exits([], [], START)["valid"] is True


def test_a_member_leaving_while_removed_is_excused_and_only_then() -> None:
    ops = [nemesis(0, 1, "membership", "invoke"), nemesis(1, 1.1, "membership"),
           nemesis(2, 4, "restore-voters", "invoke"), nemesis(3, 4.5, "restore-voters")]
    during = {"node": "n3", "monotonic_ns": START + 2 * S, "status": 0}
    later = {"node": "n3", "monotonic_ns": START + 20 * S, "status": 0}
    another = {"node": "n1", "monotonic_ns": START + 2 * S, "status": 0}
    assert node_logs.check_exits([during], ops, START)["valid"] is True
    assert node_logs.check_exits([later], ops, START)["valid"] is False
    # A node the fault did not remove has no reason to leave.
    assert node_logs.check_exits([another], ops, START)["valid"] is False


def membership_then_restore(failed: dict[str, str]) -> list[Op]:
    """n4 and n5 removed at 20.7 s; the restore at 28.6 s adds back n5 and
    reports what it could not add (the hunt's seed 5 on etcd, 2026-11-27)."""
    removed = {"change": "remove", "nodes": ["n4", "n5"], "refused": {}}
    return [Op(0, int(20.6 * S), NEMESIS, "invoke", "membership", None),
            Op(1, int(20.7 * S), NEMESIS, "info", "membership", removed),
            Op(2, int(28.5 * S), NEMESIS, "invoke", "restore-voters", None),
            Op(3, int(28.6 * S), NEMESIS, "info", "restore-voters",
               {"nodes": [n for n in ("n4", "n5") if n not in failed], "failed": failed})]


# etcd's n4, still removed, started again after a truncate (its fault's own
# restart) and shut itself down: "the member has been permanently removed".
N4_LEAVES_AGAIN = {"node": "n4", "monotonic_ns": START + int(64.2 * S), "status": 0}


def test_a_member_the_heal_failed_to_add_back_may_still_leave() -> None:
    ops = membership_then_restore({"n4": "not_caught_up"})
    assert node_logs.check_exits([N4_LEAVES_AGAIN], ops, START)["valid"] is True


def test_a_member_not_added_back_stays_out_through_later_changes() -> None:
    """As in that run: n5 removed again at 39.1 s and added back at 40.9 s,
    a restore that names only n5 and reports no failure; n4 is still out."""
    again = membership_then_restore({"n4": "not_caught_up"}) + [
        Op(4, int(39.1 * S), NEMESIS, "invoke", "membership", None),
        Op(5, int(39.4 * S), NEMESIS, "info", "membership",
           {"change": "remove", "nodes": ["n5"], "ok": True}),
        Op(6, int(40.4 * S), NEMESIS, "invoke", "restore-voters", None),
        Op(7, int(40.9 * S), NEMESIS, "info", "restore-voters", {"nodes": ["n5"], "failed": {}})]
    assert node_logs.check_exits([N4_LEAVES_AGAIN], again, START)["valid"] is True
    # A restore that names n4 brings it back: a later exit is its own.
    back = [*again[:-1], Op(7, int(40.9 * S), NEMESIS, "info", "restore-voters",
                            {"nodes": ["n4", "n5"], "failed": {}})]
    assert node_logs.check_exits([N4_LEAVES_AGAIN], back, START)["valid"] is False


def test_a_member_added_back_leaving_later_is_an_anomaly() -> None:
    ops = membership_then_restore({})
    v = node_logs.check_exits([N4_LEAVES_AGAIN], ops, START)
    assert v["valid"] is False
    assert [a["node"] for a in v["anomalies"]] == ["n4"]
    # Nor does one node's failed add excuse another's exit.
    ops = membership_then_restore({"n4": "not_caught_up"})
    n5 = dict(N4_LEAVES_AGAIN, node="n5")
    assert node_logs.check_exits([n5], ops, START)["valid"] is False


def truncate_then_start(truncate_s: float, start_s: float) -> list[Op]:
    """The hunt's truncate of n2's WAL tail and the restart that ends it
    (default etcd run seed 18, 2026-11-27: 32.67 s and 34.36 s)."""
    value = {"nodes": ["n2"], "mode": "tail"}
    return [Op(0, int((truncate_s - 0.1) * S), NEMESIS, "invoke", "truncate", None),
            Op(1, int(truncate_s * S), NEMESIS, "info", "truncate", value),
            Op(2, int((start_s - 0.1) * S), NEMESIS, "invoke", "start", None),
            Op(3, int(start_s * S), NEMESIS, "info", "start", {"nodes": ["n2"]})]


# etcd's n2 panicking on its shortened log, 1.1 s after its restart.
N2_STATE_LOST_EXIT = {"node": "n2", "monotonic_ns": START + int(35.5 * S), "status": 2}


def test_a_node_stopping_after_a_fault_took_its_log_is_excused() -> None:
    assert node_logs.check_exits([N2_STATE_LOST_EXIT], truncate_then_start(32.67, 34.36),
                                 START)["valid"] is True


def test_a_node_stopping_with_no_state_taken_or_long_after_is_an_anomaly() -> None:
    assert node_logs.check_exits([N2_STATE_LOST_EXIT], [], START)["valid"] is False
    # The same exit long after the truncate's heal is the node's own.
    assert node_logs.check_exits([N2_STATE_LOST_EXIT], truncate_then_start(12.0, 14.0),
                                 START)["valid"] is False
    # Nor does n2's truncate excuse another node's exit.
    other = dict(N2_STATE_LOST_EXIT, node="n3")
    assert node_logs.check_exits([other], truncate_then_start(32.67, 34.36),
                                 START)["valid"] is False


def test_a_kill_fault_window_excuses_nothing() -> None:
    # The harness never records its own kills; an exit while a kill is in
    # force is another process's, or the node's own.
    ops = [nemesis(0, 1, "kill", "invoke"), nemesis(1, 1.1, "kill"),
           nemesis(2, 4, "start", "invoke"), nemesis(3, 4.5, "start")]
    exits = [{"node": "n1", "monotonic_ns": START + 2 * S, "status": -6, "signal": "SIGABRT"}]
    assert node_logs.check_exits(exits, ops, START)["valid"] is False


def test_exits_without_a_time_base_are_unknown() -> None:
    assert node_logs.check_exits([], [], None)["valid"] == "unknown"


@pytest.mark.parametrize("text, caught", [
    ("12345:M 26 Nov 2026 18:00:00.000 # === REDIS BUG REPORT START: Cut & paste ===", True),
    ("12345:M 26 Nov 2026 18:00:00.000 # Redis 7.0.15 crashed by signal: 11", True),
    ("12345:M 26 Nov 2026 18:00:00.000 # Connection with replica 10.0.0.2:7000 lost.", False),
    ("12345:X 26 Nov 2026 18:00:00.000 # +odown master faultline 10.0.0.1 7000 #quorum 2/2",
     False),
])
def test_redis_lines(text: str, caught: bool) -> None:
    redis_db = pytest.importorskip("faultline_redis.db")   # the plugin, when installed
    patterns = (redis_db.RedisDB.failure_log_lines, redis_db.RedisDB.benign_log_lines)
    assert node_logs.check_logs(lines("n1", text, "stdout.log"), *patterns)["valid"] is (
        not caught)


# --- which stopped nodes a fault left down (node-state's excuse) -------------


def test_a_member_every_heal_failed_to_add_back_was_left_down_by_its_fault() -> None:
    ops = membership_then_restore({"n4": "not_caught_up"})
    left = node_logs.left_down(["n4"], [N4_LEAVES_AGAIN], ops, START)
    assert list(left) == ["n4"] and "still in force" in left["n4"]


def test_a_member_added_back_and_down_at_the_end_was_not_left_down_by_a_fault() -> None:
    """The twin: the restore named n4 back, so its exit after is its own."""
    ops = membership_then_restore({})
    assert node_logs.left_down(["n4"], [N4_LEAVES_AGAIN], ops, START) == {}
    # Nor does n4's failed add account for n5 being down.
    ops = membership_then_restore({"n4": "not_caught_up"})
    assert node_logs.left_down(["n5"], [], ops, START) == {}


def test_a_node_that_stopped_after_its_state_was_taken_was_left_down() -> None:
    ops = truncate_then_start(32.67, 34.36)
    left = node_logs.left_down(["n2"], [N2_STATE_LOST_EXIT], ops, START)
    assert list(left) == ["n2"] and "35.500s" in left["n2"]


def test_a_node_down_after_an_exit_no_fault_excuses_was_not_left_down() -> None:
    # Long after the truncate's heal, or with no recorded exit at all (a
    # start that failed): no fault accounts for it.
    assert node_logs.left_down(["n2"], [N2_STATE_LOST_EXIT], truncate_then_start(12.0, 14.0),
                               START) == {}
    assert node_logs.left_down(["n2"], [], truncate_then_start(32.67, 34.36), START) == {}
