"""contrib/nats: NATS JetStream as a faultline system, through the public API only.

Unit tests of the adapter's pure parts; slow end-to-end runs of the installed
plugin (a healthy run is valid; a coordinated power cut of every node loses
acknowledged messages that kill -9 of every node does not)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from faultline import NodeSpec

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "contrib" / "nats"


def _plugin(module):
    pytest.importorskip("nats")   # nats-py: the plugin's own dependency
    sys.path.insert(0, str(PLUGIN))
    try:
        return __import__(f"faultline_nats.{module}", fromlist=["_"])
    finally:
        sys.path.remove(str(PLUGIN))


def _cluster(n):
    return [NodeSpec(f"n{i}", f"10.0.0.{i}", 7000, Path(f"/d/n{i}"), Path(f"/l/n{i}"))
            for i in range(1, n + 1)]


def test_every_listener_is_on_the_nodes_own_address():
    config = _plugin("config")
    nodes = _cluster(3)
    text = config.server_conf(nodes[1], nodes)
    assert 'listen: "10.0.0.2:7000"' in text
    assert 'http: "10.0.0.2:7002"' in text
    assert 'listen: "10.0.0.2:7001"' in text          # the cluster's routes
    assert 'server_name: "n2"' in text and 'store_dir: "/d/n2/jetstream"' in text
    # Bound nowhere else: every address in the file is a node's.
    addresses = set(re.findall(r"\d+\.\d+\.\d+\.\d+", text))
    assert addresses == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}


def test_routes_name_every_other_node_and_not_itself():
    config = _plugin("config")
    nodes = _cluster(5)
    text = config.server_conf(nodes[0], nodes)
    routes = re.findall(r"nats-route://([\d.]+):(\d+)", text)
    assert routes == [(f"10.0.0.{i}", "7001") for i in range(2, 6)]


def test_no_sync_setting_this_version_would_refuse():
    """2.9's config check rejects sync_interval; the default is what is tested."""
    config = _plugin("config")
    nodes = _cluster(3)
    assert "sync" not in config.server_conf(nodes[0], nodes)


@pytest.mark.parametrize("size, want", [(1, 1), (3, 3), (5, 5), (7, 5)])
def test_a_stream_is_on_every_node_up_to_five(size, want):
    assert _plugin("config").replicas(size) == want


def test_a_log_is_one_subject_token_of_the_one_stream():
    config = _plugin("config")
    assert config.subject("log0") == "faultline.log0"
    assert config.subject("a.b c*>") == "faultline.a_b_c__"


def test_offsets_are_sequences_from_zero():
    config = _plugin("config")
    assert config.offset(1) == 0 and config.first_seq(0) == 1 and config.first_seq(-3) == 1
    assert config.first_seq(config.offset(42)) == 42


def test_a_read_takes_count_entries_or_what_the_log_holds():
    client = _plugin("client")
    assert client.read_window(0, 50, 10) == (1, 10)      # short: the log's end
    assert client.read_window(5, 3, 100) == (6, 3)       # full: count entries
    assert client.read_window(10, 5, 0) == (11, 0)       # past the end: empty


def test_the_stream_is_file_backed_replicated_and_takes_every_log():
    client = _plugin("client")
    cfg = client.stream_config(3)
    assert cfg.name == "faultline" and cfg.subjects == ["faultline.>"]
    assert cfg.num_replicas == 3 and cfg.storage.value == "file"
    assert client.stream_config(7).num_replicas == 5


def test_meta_leader_is_read_from_jsz():
    db = _plugin("db")
    assert db.meta_leader({"meta_cluster": {"leader": "n2", "cluster_size": 3}}) == "n2"
    for bad in (None, {}, {"meta_cluster": {}}, {"meta_cluster": {"leader": ""}},
                {"meta_cluster": "n1"}, [1]):
        assert db.meta_leader(bad) is None


def test_a_leader_needs_a_majority_naming_it():
    db = _plugin("db")
    names = ["n1", "n2", "n3"]
    assert db.agreed_leader(["n1", "n1", None], names) == "n1"
    assert db.agreed_leader(["n1", "n2", None], names) is None
    assert db.agreed_leader(["n9", "n9", "n9"], names) is None   # not one of ours
    assert db.agreed_leader([None, None, None], names) is None


def test_data_files_are_the_streams_message_blocks(tmp_path):
    db = _plugin("db")
    node = NodeSpec("n1", "10.0.0.1", 7000, tmp_path, tmp_path / "log")
    msgs = tmp_path / "jetstream" / "jetstream" / "$G" / "streams" / "faultline_log0" / "msgs"
    msgs.mkdir(parents=True)
    for name in ("2.blk", "1.blk", "index.db"):
        (msgs / name).write_bytes(b"x")
    assert [p.name for p in db.NatsDB().data_files(node)] == ["1.blk", "2.blk"]


def test_the_system_serves_the_log_workload_only():
    pytest.importorskip("nats")
    sys.path.insert(0, str(PLUGIN))
    try:
        from faultline_nats import NATS
    finally:
        sys.path.remove(str(PLUGIN))
    assert NATS.name == "nats" and NATS.workloads == ["log"]


def _validate(nemesis):
    pytest.importorskip("nats")
    from harness.run.config import RunConfig, validate
    sys.path.insert(0, str(PLUGIN))
    try:
        return validate(RunConfig(db="faultline_nats:NATS", workload="log", nemesis=[nemesis]))
    finally:
        sys.path.remove(str(PLUGIN))


@pytest.mark.parametrize("nemesis, says", [
    ("lose-state", "state files"),
    ("reformat", "cannot re-format"),
    ("membership", "cannot change voters"),
    ("power-cut-after-commit", "events lines"),
    ("kill-after-vote", "events lines"),
])
def test_faults_it_cannot_take_are_refused_before_the_run(nemesis, says):
    from harness.run.config import ConfigError
    with pytest.raises(ConfigError, match=says):
        _validate(nemesis)


def test_the_bench_counts_lost_acks_and_says_when_the_list_was_cut():
    sys.path.insert(0, str(PLUGIN))
    try:
        from bench_lost_messages import final_reads, lost_acks
    finally:
        sys.path.remove(str(PLUGIN))
    lost = {"type": "lost-write"}
    assert lost_acks({"stats": {"writes": {"ok": 9}},
                      "anomalies": [lost, lost, {"type": "read-went-backwards"}]}) == (9, "2")
    assert lost_acks({"stats": {"writes": {"ok": 500}, "anomalies_omitted": 3},
                      "anomalies": [lost]}) == (500, "at least 1")
    assert lost_acks({}) == (0, "0")
    assert final_reads({"final_reads": {"asked": 5, "succeeded": 0}}) == "0/5"
    assert final_reads({}) == "?/?"


def needs_a_cluster(test):
    for mark in (pytest.mark.slow,
                 pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
                 pytest.mark.skipif(shutil.which("nats-server") is None,
                                    reason="nats-server is not installed: "
                                           "apt-get install nats-server")):
        test = mark(test)
    return test


def _run_installed(tmp_path, *args):
    """One run of the pip-installed plugin in a new process (entry points read
    afresh, as a user's would be); its exit code, run dir and verdicts."""
    pytest.importorskip("nats")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--disable-pip-version-check", "-e", str(PLUGIN)],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--system", "nats", "--workload", "log",
         "--client-option", "logs=1", "--results", str(tmp_path), *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=400)
    found = re.search(r"verdict: \w+\s+\((.+)\)", proc.stdout)
    assert found, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = Path(found.group(1))
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["config"]["db"] == "nats" and doc["status"] == "complete"
    return proc, run_dir, json.loads((run_dir / "verdicts.json").read_text())["checkers"]


@needs_a_cluster
def test_a_healthy_cluster_keeps_every_acknowledged_message(tmp_path):
    proc, _, checkers = _run_installed(tmp_path, "--nemesis", "none",
                                       "--time-limit", "6", "--recovery-time", "1")
    durability = checkers["durability"]
    kinds = {a["type"] for a in durability["anomalies"]}
    # A read is an ephemeral consumer, placed on any replica: one placed on a
    # replica a little behind reads less than its process had already seen
    # (read-went-backwards, seen once in a CI trial with no fault at all;
    # contrib/nats/README.md). That is not a lost message.
    assert kinds <= {"read-went-backwards"}, proc.stdout[-3000:]
    assert proc.returncode == (1 if kinds else 0), proc.stdout[-3000:]
    assert durability["stats"]["writes"]["ok"] > 0
    assert durability["stats"]["lost_write_evidence"] == ["final-reads"]


@needs_a_cluster
def test_five_nodes_with_reads_at_the_stream_leader_keep_every_message(tmp_path):
    """A 5-node cluster (an R5 stream) read through message gets, which only
    the stream's leader answers: with no fault the reads are recorded at the
    stream leader, and the final reads all succeed and hold every
    acknowledged message. (No read went backwards in the 3 such runs made on
    2026-11-27, but a leader that steps down on a starved CPU could serve one,
    as deposed leaders did under partitions: contrib/nats/README.md. That is
    not a lost message, and is allowed here.)"""
    from collections import Counter

    from checkers.rundir import load_run
    proc, run_dir, checkers = _run_installed(tmp_path, "--nemesis", "none", "--nodes", "5",
                                             "--client-option", "reads=leader",
                                             "--time-limit", "8", "--recovery-time", "1")
    durability = checkers["durability"]
    kinds = {a["type"] for a in durability["anomalies"]}
    assert kinds <= {"read-went-backwards"}, proc.stdout[-3000:]
    assert proc.returncode == (1 if kinds else 0), proc.stdout[-3000:]
    assert durability["stats"]["writes"]["ok"] > 0
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["config"]["nodes"] == 5 and doc["final_reads"]["succeeded"] == 5
    reads = [op for op in load_run(run_dir).history.ops
             if op.f == "read" and op.type == "ok" and op.value[2]]
    # A read that found messages is recorded at the leader its stream info
    # named, wherever it was sent (each op goes to a node drawn at random):
    # with no fault one node leads, barring a rare step-down on a starved CPU.
    by_node = Counter(op.node for op in reads)
    assert reads and by_node.most_common(1)[0][1] >= 0.8 * len(reads), by_node


@needs_a_cluster
def test_a_power_cut_of_every_node_loses_acknowledged_messages(tmp_path):
    """The finding: JetStream acknowledges before it fsyncs. Within its first
    sync (a timer) none of the stream is on disk, so a power cut of all three
    nodes in a 15 s run loses what it had acknowledged (measured over seeds:
    contrib/nats/README.md)."""
    from checkers.rundir import load_run
    proc, run_dir, checkers = _run_installed(tmp_path, "--nemesis", "lose-unsynced:all",
                                             "--time-limit", "15", "--seed", "1")
    if checkers["durability"]["stats"]["writes"]["ok"] == 0:
        # Seen once in 16 runs, under kill:majority: the stream never took a
        # message (contrib/nats/README.md, an open question). Such a run says
        # nothing about power cuts either way.
        pytest.xfail("the stream took no message in this run: nothing to lose")
    assert proc.returncode == 1, proc.stdout[-3000:]
    lost = [a for a in checkers["durability"]["anomalies"] if a["type"] == "lost-write"]
    assert lost and all(a["evidence"] == "final-read" for a in lost)
    # The mechanism: a cut rolled the stream's message block back to its last
    # fsync, on every node at once.
    cuts = [op.value for op in load_run(run_dir).history.ops
            if op.f == "lose-unsynced" and op.type == "info"]
    assert cuts, "no power cut was made"

    def block_shrank(files):
        return any(f["file"].endswith("/streams/faultline/msgs/1.blk")
                   and f["new_size"] < f["old_size"] for f in files)

    assert any(all(block_shrank(files) for files in cut["lost"].values()) for cut in cuts), cuts


def test_the_campaign_is_the_finding_and_its_control_over_five_seeds():
    """contrib/nats/campaign.toml names the installed system; here the same
    matrix is expanded against the plugin loaded from its source tree."""
    import tomllib

    from harness.campaign.spec import parse_campaign
    pytest.importorskip("nats")
    doc = tomllib.loads((PLUGIN / "campaign.toml").read_text())
    assert [m["db"] for m in doc["matrix"]] == [["nats"], ["nats"]]
    for m in doc["matrix"]:
        m["db"] = ["faultline_nats:NATS"]
    sys.path.insert(0, str(PLUGIN))
    try:
        runs = parse_campaign(doc).runs
    finally:
        sys.path.remove(str(PLUGIN))
    by_nemesis = {}
    for run in runs:
        key = (tuple(run.config.nemesis), run.config.nodes)
        by_nemesis.setdefault(key, []).append(run.config.seed)
    assert by_nemesis == {
        (("lose-unsynced:all",), 3): [1, 2, 3, 4, 5], (("kill:majority",), 3): [1, 2, 3, 4, 5],
        (("lose-unsynced:one", "partition"), 5): [1, 2, 3, 4, 5],
        (("kill:one", "partition"), 5): [1, 2, 3, 4, 5],
        (("lose-unsynced:one", "pause"), 5): [1, 2, 3, 4, 5],
        (("kill:one", "pause"), 5): [1, 2, 3, 4, 5]}
    for run in runs:
        five = run.config.nodes == 5
        assert run.config.workload_options == ({"logs": 1, "reads": "leader"} if five
                                               else {"logs": 1})
        assert run.config.recovery_time == (25.0 if five else 5.0)


def test_a_read_is_recorded_as_served_by_the_replica_its_consumer_is_on():
    client = _plugin("client")
    from nats.js import api
    nodes = {"n1": ("10.0.0.1", 7000), "n2": ("10.0.0.2", 7000)}
    on = api.ConsumerInfo.from_response({"name": "c", "stream_name": "faultline",
                                         "config": {}, "created": "2026-11-26T00:00:00Z",
                                         "cluster": {"leader": "n2"}})
    assert client.placed_on(on, nodes) == "n2"
    stranger = api.ConsumerInfo.from_response({"name": "c", "stream_name": "faultline",
                                               "config": {}, "created": "2026-11-26T00:00:00Z",
                                               "cluster": {"leader": "x9"}})
    assert client.placed_on(stranger, nodes) is None
    nowhere = api.ConsumerInfo.from_response({"name": "c", "stream_name": "faultline",
                                              "config": {}, "created": "2026-11-26T00:00:00Z"})
    assert client.placed_on(nowhere, nodes) is None


class _LeaderOnlyStream:
    """What the stream leader answers to STREAM.INFO and STREAM.MSG.GET: the
    message at a sequence, or "no message found" (a table of
    the stream's messages; the wire is nats-py's, tested on a real cluster by
    the slow tests)."""

    def __init__(self, messages, leader="n2", grow_after_info=()):
        self.messages = dict(messages)          # seq -> (subject, payload)
        self.leader = leader
        self.grow_after_info = dict(grow_after_info)
        self.gets = 0

    async def stream_info(self, name):
        from nats.js import api
        last = max(self.messages, default=0)
        info = api.StreamInfo.from_response({
            "config": {"name": name}, "state": {"messages": len(self.messages),
                                                "bytes": 0, "first_seq": 1, "last_seq": last,
                                                "consumer_count": 0},
            "cluster": {"leader": self.leader}})
        self.messages.update(self.grow_after_info)   # appends landing while the read runs
        return info

    async def get_msg(self, stream, seq):
        import nats.js.errors
        from nats.js import api
        self.gets += 1
        if seq not in self.messages:
            raise nats.js.errors.NotFoundError(code=404, err_code=10037,
                                               description="no message found")
        subject, data = self.messages[seq]
        return api.RawStreamMsg(subject=subject, seq=seq, data=data)


def _leader_read(stream, value, nodes=("n1", "n2", "n3")):
    import asyncio
    client = _plugin("client")
    from faultline import Op
    c = client.NatsClient("log", {n: ("10.0.0.1", 7000) for n in nodes}, {"reads": "leader"})
    c._stream_tried = True
    op = Op(index=0, time=0.0, process=0, type="invoke", f="read", value=value, node="n1")
    try:
        return asyncio.new_event_loop().run_until_complete(c._read_at_leader(stream, op, "n1"))
    finally:
        c.close()


def test_a_leader_read_takes_the_logs_messages_up_to_the_leaders_last_sequence():
    a, b = "faultline.log0", "faultline.log1"
    stream = _LeaderOnlyStream({1: (a, b"10"), 2: (b, b"20"), 3: (a, b"11"), 4: (a, b"12")},
                               grow_after_info={5: (a, b"13")})
    done = _leader_read(stream, ["log0", 0, 50])
    # Short (the log's end as the leader had it when asked), other logs' messages
    # skipped, an append landing after the info not taken.
    assert done.type == "ok" and done.value == ["log0", 0, [[0, 10], [2, 11], [3, 12]]]
    assert done.node == "n2"                     # served by the stream's leader
    done = _leader_read(_LeaderOnlyStream({1: (a, b"10"), 2: (a, b"11"), 3: (a, b"12")}),
                        ["log0", 1, 1])
    assert done.value == ["log0", 1, [[1, 11]]]  # full: count entries from the offset


def test_a_leader_read_of_a_stream_the_cluster_does_not_know_is_empty():
    import nats.js.errors

    class NoStream(_LeaderOnlyStream):
        async def stream_info(self, name):
            raise nats.js.errors.NotFoundError(code=404, err_code=10059,
                                               description="stream not found")

    done = _leader_read(NoStream({}), ["log0", 0, 50])
    assert done.type == "ok" and done.value == ["log0", 0, []] and done.node == "n1"


def test_a_leader_read_names_no_stranger_as_its_node():
    done = _leader_read(_LeaderOnlyStream({1: ("faultline.log0", b"1")}, leader="x9"),
                        ["log0", 0, 50])
    assert done.value == ["log0", 0, [[0, 1]]] and done.node == "n1"


def test_reads_is_one_of_consumer_or_leader():
    client = _plugin("client")
    assert client.NatsClient.OPTIONS["reads"] == "one-of:consumer|leader"
    with pytest.raises(ValueError, match="reads="):
        client.NatsClient("log", {"n1": ("10.0.0.1", 7000)}, {"reads": "follower"})


def test_a_leader_read_crosses_get_windows_and_stops_at_count():
    client = _plugin("client")
    a, b = "faultline.log0", "faultline.log1"
    n = 2 * client.GET_WINDOW + 5
    messages = {s: (a if s % 3 else b, str(s).encode()) for s in range(1, n + 1)}
    del messages[4]                              # no message there: skipped
    mine = [[s - 1, s] for s in sorted(messages) if s % 3]
    done = _leader_read(_LeaderOnlyStream(messages), ["log0", 0, 10_000])
    assert done.value == ["log0", 0, mine]       # every window's, in order
    done = _leader_read(_LeaderOnlyStream(messages), ["log0", 0, 90])
    assert done.value == ["log0", 0, mine[:90]]


def test_a_leader_read_that_a_get_fails_is_a_failed_read():
    import nats.js.errors

    class Unavailable(_LeaderOnlyStream):
        async def get_msg(self, stream, seq):
            raise nats.js.errors.ServiceUnavailableError(code=503, err_code=10008,
                                                         description="unavailable")

    done = _leader_read(Unavailable({1: ("faultline.log0", b"1")}), ["log0", 0, 50])
    assert done.type == "fail" and "get" in done.error
