"""contrib/galera: MariaDB Galera Cluster as a faultline system, through the public API only.

Unit tests of the adapter's pure parts; slow end-to-end runs of the installed
plugin, one per finding (contrib/galera/README.md has the K/N figures)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from faultline import LISTS, REGISTER_TXNS, NodeSpec

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "contrib" / "galera"


def _plugin(module):
    pytest.importorskip("pymysql")   # PyMySQL: the plugin's own dependency
    sys.path.insert(0, str(PLUGIN))
    try:
        return __import__(f"faultline_galera.{module}", fromlist=["_"])
    finally:
        sys.path.remove(str(PLUGIN))


def _cluster(n):
    return [NodeSpec(f"n{i}", f"10.0.0.{i}", 7000, Path(f"/d/n{i}"), Path(f"/l/n{i}"))
            for i in range(1, n + 1)]


def _conf(options=None, node=1):
    config = _plugin("config")
    nodes = _cluster(3)
    return config.server_conf(nodes[node], nodes, f"/d/n{node + 1}/mysql", options or {})


def test_every_listener_is_on_the_nodes_own_address():
    text = _conf()
    assert "bind-address = 10.0.0.2" in text and "port = 7000" in text
    assert "gmcast.listen_addr=tcp://10.0.0.2:7001" in text
    assert "ist.recv_addr=10.0.0.2:7002" in text
    assert "wsrep_sst_receive_address = 10.0.0.2:7003" in text
    assert "wsrep_cluster_address = gcomm://10.0.0.1:7001,10.0.0.2:7001,10.0.0.3:7001" in text
    addresses = set(re.findall(r"\d+\.\d+\.\d+\.\d+", text))
    assert addresses == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}


def test_the_outcome_settings_are_pinned_at_their_defaults():
    text = _conf()
    assert "innodb_flush_log_at_trx_commit = 0" in text
    assert "innodb_snapshot_isolation = OFF" in text
    assert "wsrep_sync_wait = 0" in text


def test_node_options_override_the_pinned_settings():
    text = _conf({"innodb_flush_log_at_trx_commit": 1, "innodb_snapshot_isolation": True,
                  "wsrep_sync_wait": 1})
    assert "innodb_flush_log_at_trx_commit = 1" in text
    assert "innodb_flush_log_at_trx_commit = 0" not in text
    assert "innodb_snapshot_isolation = ON" in text and "wsrep_sync_wait = 1" in text


@pytest.mark.parametrize("options", [{"innodb_flush_log_at_trx_commit": 4},
                                     {"wsrep_sync_wait": 16}])
def test_settings_mariadbd_would_refuse_are_refused(options):
    with pytest.raises(ValueError):
        _plugin("config").check_settings(options)


@pytest.mark.parametrize("options", [{}, {"innodb_flush_log_at_trx_commit": 1},
                                     {"innodb_flush_log_at_trx_commit": 2, "wsrep_sync_wait": 15}])
def test_settings_it_takes_are_taken(options):
    assert _plugin("config").check_settings(options) is None


def test_an_isolation_typo_is_refused_before_the_run_by_the_clients_option_kind():
    from harness.run.config import ConfigError, _check_options
    from workloads.options import option_kind
    client = _plugin("client").GaleraClient
    kind = client.OPTIONS["isolation"]
    assert option_kind(kind)[0]("serializable")
    with pytest.raises(ConfigError, match="isolation must be one of read-committed"):
        _check_options({"isolation": "snapshot"}, client.OPTIONS, "--client-option", "galera")
    _check_options({"isolation": "read-committed"}, client.OPTIONS, "--client-option", "galera")


def test_isolation_levels_are_galeras_three():
    config = _plugin("config")
    assert config.isolation_level("repeatable-read") == "REPEATABLE READ"
    assert config.isolation_level("read-committed") == "READ COMMITTED"
    assert config.isolation_level("serializable") == "SERIALIZABLE"
    with pytest.raises(ValueError, match="isolation must be one of"):
        config.isolation_level("snapshot")
    # Each level names a model Elle knows.
    from checkers.elle.consistency import canonical
    assert all(canonical(m) == m for m in config.CLAIMED_MODEL.values())


def test_bootstrap_makes_the_account_and_a_table_per_workload():
    sql = _plugin("config").bootstrap_sql()
    assert "INSERT IGNORE INTO mysql.global_priv" in sql and "'faultline'" in sql
    assert "faultline.list_append (id BIGINT NOT NULL PRIMARY KEY, val TEXT NOT NULL)" in sql
    assert "faultline.rw_register (id BIGINT NOT NULL PRIMARY KEY, val BIGINT NOT NULL)" in sql
    assert "CREATE USER" not in sql   # refused under --bootstrap (no grant tables)


def test_a_list_is_read_back_from_its_text():
    client = _plugin("client")
    assert client.parse_list(None) == []
    assert client.parse_list("3,1,2") == [3, 1, 2]
    assert client.parse_list(b"7") == [7]
    assert client.parse_register(None) is None and client.parse_register(5) == 5


def test_an_append_concats_onto_the_row_and_a_write_replaces_it():
    client = _plugin("client")
    sql, args = client.statements(LISTS, "list_append", ["append", 4, 9])
    assert "ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', %s)" in sql and args == (4, "9", "9")
    sql, args = client.statements(REGISTER_TXNS, "rw_register", ["w", 4, 9])
    assert "ON DUPLICATE KEY UPDATE val = %s" in sql and args == (4, 9, 9)
    sql, args = client.statements(LISTS, "list_append", ["r", 4, None])
    assert sql.startswith("SELECT val FROM faultline.list_append") and args == (4,)
    with pytest.raises(ValueError):
        client.statements(REGISTER_TXNS, "rw_register", ["append", 4, 9])


def test_only_a_missing_answer_is_a_connection_error():
    import pymysql
    client = _plugin("client")
    assert client.is_connection_error(pymysql.err.OperationalError(2013, "Lost connection"))
    assert client.is_connection_error(pymysql.err.OperationalError("no code"))
    # A certification failure is the server's answer: the txn did not commit.
    assert not client.is_connection_error(pymysql.err.OperationalError(1213, "Deadlock found"))
    assert not client.is_connection_error(pymysql.err.InternalError(1047, "WSREP not ready"))


def test_the_client_refuses_an_isolation_galera_does_not_offer():
    client = _plugin("client")
    nodes = {"n1": ("10.0.0.1", 7000)}
    assert client.GaleraClient("list-append", nodes, {}).isolation == "REPEATABLE READ"
    assert client.GaleraClient("rw-register", nodes, {"isolation": "serializable"}).table \
        == "rw_register"
    with pytest.raises(ValueError):
        client.GaleraClient("list-append", nodes, {"isolation": "snapshot-isolation"})


def test_a_node_is_ready_only_as_a_synced_member_of_a_primary_component():
    db = _plugin("db")
    good = {"wsrep_ready": "ON", "wsrep_cluster_status": "Primary",
            "wsrep_local_state_comment": "Synced"}
    assert db.is_member(good)
    assert not db.is_member(None)
    for key, bad in (("wsrep_ready", "OFF"), ("wsrep_cluster_status", "non-Primary"),
                     ("wsrep_local_state_comment", "Joining")):
        assert not db.is_member({**good, key: bad})


def test_data_files_are_the_tables_redo_log_and_write_set_cache(tmp_path):
    db = _plugin("db")
    node = NodeSpec("n1", "10.0.0.1", 7000, tmp_path, tmp_path / "log")
    d = tmp_path / "mysql"
    (d / "faultline").mkdir(parents=True)
    for name in ("faultline/list_append.ibd", "faultline/db.opt", "ib_logfile0", "ibdata1",
                 "galera.cache", "grastate.dat"):
        (d / name).write_bytes(b"x")
    assert [p.name for p in db.GaleraDB().data_files(node)] == \
        ["list_append.ibd", "galera.cache", "ib_logfile0", "ibdata1"]


def test_the_starter_recovers_the_position_innodb_logged():
    recovery = _plugin("recovery")
    log = ("2026-11-26 21:08:01 0 [Note] InnoDB: Starting crash recovery\n"
           "2026-11-26 21:08:02 0 [Note] WSREP: Recovered position: "
           "3b5c1a2e-cb1f-11f0-9a1e-2f5d6c7b8a90:1004\n")
    assert recovery.recovered_position(log) == ("3b5c1a2e-cb1f-11f0-9a1e-2f5d6c7b8a90", 1004)
    assert recovery.recovered_position("WSREP: Recovered position: "
                                       "00000000-0000-0000-0000-000000000000:-1") \
        == ("00000000-0000-0000-0000-000000000000", -1)
    assert recovery.recovered_position("no such line") is None


def test_the_most_advanced_node_bootstraps_ties_to_the_first():
    recovery = _plugin("recovery")
    order = ["n1", "n2", "n3"]
    assert recovery.bootstrapper({"n1": 9, "n2": 12, "n3": -1}, order) == "n2"
    assert recovery.bootstrapper({"n1": 5, "n2": 5, "n3": 5}, order) == "n1"
    assert recovery.bootstrapper({"n3": 7, "n2": 7}, order) == "n2"


def test_safe_to_bootstrap_is_set_as_the_operator_would():
    recovery = _plugin("recovery")
    grastate = "# GALERA saved state\nversion: 2.1\nseqno: -1\nsafe_to_bootstrap: 0\n"
    out = recovery.safe_to_bootstrap(grastate)
    assert "safe_to_bootstrap: 1" in out and "safe_to_bootstrap: 0" not in out
    assert "seqno: -1" in out
    assert recovery.safe_to_bootstrap("version: 2.1\n").endswith("safe_to_bootstrap: 1\n")


def test_the_system_serves_the_transaction_workloads():
    pytest.importorskip("pymysql")
    sys.path.insert(0, str(PLUGIN))
    try:
        from faultline_galera import GALERA
    finally:
        sys.path.remove(str(PLUGIN))
    assert GALERA.name == "galera" and GALERA.workloads == ["list-append", "rw-register"]
    assert set(GALERA.node_options) == {"innodb_flush_log_at_trx_commit",
                                        "innodb_snapshot_isolation", "wsrep_sync_wait"}


def test_no_core_module_names_the_server_it_runs():
    """Beyond the plugin's own name (test_plugin_contract.py): the server's."""
    out = subprocess.run(["git", "grep", "-l", "-i", "-w", "-e", "mariadb", "-e", "mariadbd",
                          "--", "faultline", "harness", "nodes", "workloads", "checkers",
                          "nemesis"],
                         capture_output=True, text=True, cwd=REPO)
    assert out.stdout == "", out.stdout


def _validate(nemesis, **node_options):
    pytest.importorskip("pymysql")
    from harness.run.config import RunConfig, validate
    sys.path.insert(0, str(PLUGIN))
    try:
        return validate(RunConfig(db="faultline_galera:GALERA", workload="list-append",
                                  nemesis=[nemesis] if nemesis else [],
                                  node_options=node_options))
    finally:
        sys.path.remove(str(PLUGIN))


@pytest.mark.parametrize("nemesis, says", [
    ("membership", "cannot change voters"),
    ("power-cut-after-commit", "events lines"),
])
def test_faults_it_cannot_take_are_refused_before_the_run(nemesis, says):
    from harness.run.config import ConfigError
    with pytest.raises(ConfigError, match=says):
        _validate(nemesis)


def test_node_options_are_checked_before_the_run():
    from harness.run.config import ConfigError
    assert _validate(None, innodb_flush_log_at_trx_commit=1).node_options == \
        {"innodb_flush_log_at_trx_commit": 1}
    with pytest.raises(ConfigError):
        _validate(None, innodb_flush_log_at_trx_commit=7)
    with pytest.raises(ConfigError):
        _validate(None, innodb_snapshot_isolaton=True)   # a typo


def test_the_bench_counts_lost_updates_stale_reads_and_lost_appends():
    sys.path.insert(0, str(PLUGIN))
    try:
        from bench_findings import summarize
    finally:
        sys.path.remove(str(PLUGIN))
    lost = {"type": "lost-write"}
    s = summarize({"checkers": {
        "elle": {"stats": {"anomaly_counts": {"G-single-item": 3, "G2-item": 2,
                                              "G-single-item-realtime": 1, "G1c": 4},
                           "not": ["repeatable-read"]}},
        "durability": {"stats": {"writes": {"ok": 40}}, "anomalies": [lost, lost]}}})
    assert (s["lost_update"], s["stale"], s["g2_item"], s["acked"], s["lost"]) == \
        (3, 1, 2, 40, "2")
    assert s["not"] == ["repeatable-read"]
    assert summarize({})["lost"] == "0"
    # rw-register histories are judged by the checker of that name
    registers = summarize({"checkers": {"rw-register": {"stats": {
        "anomaly_counts": {"lost-update": 3, "G-single-item-process": 1}}}}})
    assert (registers["lost_update"], registers["stale"]) == (3, 1)


def test_the_campaign_is_each_finding_and_its_control_over_five_seeds():
    """contrib/galera/campaign.toml names the installed system; here the same
    matrix is expanded against the plugin loaded from its source tree."""
    import tomllib

    from harness.campaign.spec import parse_campaign
    pytest.importorskip("pymysql")
    doc = tomllib.loads((PLUGIN / "campaign.toml").read_text())
    assert {db for m in doc["matrix"] for db in m["db"]} == {"galera"}
    for m in doc["matrix"]:
        m["db"] = ["faultline_galera:GALERA"]
    sys.path.insert(0, str(PLUGIN))
    try:
        runs = parse_campaign(doc).runs
    finally:
        sys.path.remove(str(PLUGIN))
    seen = {}
    for run in runs:
        key = (run.config.workload, tuple(run.config.nemesis),
               tuple(sorted(run.config.node_options.items())), run.config.consistency_model,
               tuple(sorted(run.config.workload_options.items())))
        seen.setdefault(key, []).append(run.config.seed)
    rr = ("repeatable-read", (("isolation", "repeatable-read"),))
    flush1 = (("innodb_flush_log_at_trx_commit", 1),)
    assert seen == {
        ("list-append", (), (), *rr): [1, 2, 3, 4, 5],
        ("list-append", (), (("innodb_snapshot_isolation", True),), *rr): [1, 2, 3, 4, 5],
        ("list-append", ("lose-unsynced:all",), (), *rr): [1, 2, 3, 4, 5],
        ("list-append", ("lose-unsynced:all",), flush1, *rr): [1, 2, 3, 4, 5],
        ("list-append", ("kill",), flush1, *rr): [1, 2, 3, 4, 5],
        ("list-append", ("partition",), flush1, *rr): [1, 2, 3, 4, 5],
        ("list-append", ("pause",), flush1, *rr): [1, 2, 3, 4, 5],
        ("rw-register", (), (), *rr): [1, 2, 3],
        ("list-append", (), (), "read-committed", (("isolation", "read-committed"),)): [1, 2, 3],
    }


def needs_a_cluster(test):
    for mark in (pytest.mark.slow,
                 pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
                 pytest.mark.skipif(not os.path.exists("/usr/lib/galera/libgalera_smm.so")
                                    or shutil.which("mariadb-install-db") is None,
                                    reason="MariaDB Galera is not installed: "
                                           "apt-get install mariadb-server galera-4 rsync")):
        test = mark(test)
    return test


def _run_installed(tmp_path, *args, isolation="repeatable-read"):
    """One run of the pip-installed plugin in a new process (entry points read
    afresh, as a user's would be); its exit code, run dir and verdicts."""
    pytest.importorskip("pymysql")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--disable-pip-version-check", "-e", str(PLUGIN)],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--system", "galera",
         "--workload", "list-append", "--client-option", f"isolation={isolation}",
         "--consistency-model", isolation, "--results", str(tmp_path), *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=600)
    found = re.search(r"verdict: \w+\s+\((.+)\)", proc.stdout)
    assert found, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = Path(found.group(1))
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["config"]["db"] == "galera" and doc["status"] == "complete"
    return proc, run_dir, json.loads((run_dir / "verdicts.json").read_text())["checkers"]


def _settings(run_dir):
    """What each node's server said it ran with (recorded once it was ready)."""
    return {n: json.loads((run_dir / "nodes" / n / "settings.json").read_text())
            for n in ("n1", "n2", "n3")}


@needs_a_cluster
def test_a_healthy_cluster_at_repeatable_read_loses_updates(tmp_path):
    """The finding with no faults at all: concurrent transactions on the
    three nodes read a key, then append to it over another's append (P4,
    Lost Update), which REPEATABLE READ forbids; nothing acknowledged is
    lost. 5/5 seeds in contrib/galera/README.md."""
    proc, run_dir, checkers = _run_installed(tmp_path, "--nemesis", "none",
                                             "--time-limit", "20", "--seed", "1")
    assert proc.returncode == 1, proc.stdout[-3000:]
    elle = checkers["elle"]
    assert elle["valid"] is False and "repeatable-read" in elle["stats"]["models"]
    assert elle["stats"]["models"]["repeatable-read"]["valid"] is False
    counts = elle["stats"]["anomaly_counts"]
    assert counts.get("lost-update", 0) + counts.get("G-single-item", 0) > 0, counts
    assert checkers["durability"]["valid"] is True
    for variables in _settings(run_dir).values():
        assert variables["innodb_snapshot_isolation"] == "OFF"
        assert variables["innodb_flush_log_at_trx_commit"] == "0"
        assert variables["wsrep_sync_wait"] == "0"


@needs_a_cluster
def test_with_snapshot_isolation_on_reads_across_nodes_are_stale(tmp_path):
    """innodb_snapshot_isolation=ON: no lost update in 5/5 measured runs (each
    history fits snapshot isolation), but with wsrep_sync_wait=0 a node serves reads
    before it has applied what the cluster committed: a process that
    committed on one node and whose next txn (each op goes to a node drawn at
    random) reads the key on another node within that node's apply lag, or a
    txn that begins there right after another's commit, misses the write
    (G-single-item-process / -realtime). Whether a run shows one is chance:
    the apply lag is a few ms, and the chances grow with the txns a run
    gets. Measured: stale reads in 5/5 30 s runs on the shared machine
    (3-10 cycles each, contrib/galera/README.md), but a CI trial's one 20 s
    run of seed 1 on a loaded 2-core machine had none; on 2026-11-27 (load
    average ~30) seed 1's 30 s run had 9 stale-read cycles in 5,979 txns.
    So up to three 30 s runs (seeds 1-3), stopping at the first that shows
    it. The lag, and so the rate, grows with the machine's load: on a quiet
    machine (load ~1, 2026-11-27) seed 1 had none in 6,200 txns, nor with a
    `stress:cpu=4` episode, and a CI trial's three runs had none; then the
    test says so as an expected failure (xfail), not as a pass. (No lost update
    is asserted: 0 in 5 runs here, but Jepsen saw P4 occasionally with
    snapshot isolation on, so its absence is not certain.)"""
    for seed in ("1", "2", "3"):
        (tmp_path / seed).mkdir()
        proc, run_dir, checkers = _run_installed(
            tmp_path / seed, "--nemesis", "none", "--time-limit", "30", "--seed", seed,
            "--node-option", "innodb_snapshot_isolation=true")
        assert all(v["innodb_snapshot_isolation"] == "ON" for v in _settings(run_dir).values())
        models = checkers["elle"]["stats"]["models"]
        stale = set(models["strong-session-snapshot-isolation"].get("ruled_out_by") or [])
        if stale & {"G-single-item-process", "G-single-item-realtime"}:
            break
    assert proc.returncode == 1, proc.stdout[-3000:]
    if not stale & {"G-single-item-process", "G-single-item-realtime"}:
        pytest.xfail("no stale read in three 30 s runs: the apply lag this finding "
                     "needs is a few ms, longer only on a loaded machine")
    assert models["strong-session-snapshot-isolation"]["valid"] is False


@needs_a_cluster
def test_a_power_cut_of_every_node_loses_committed_transactions(tmp_path):
    """The finding under the flush setting MariaDB recommends for Galera
    (innodb_flush_log_at_trx_commit=0): a power cut of all three nodes at
    once rolls each back to its last fsync, and acknowledged commits are
    gone from the cluster that comes back."""
    # 5 of 5 seeds lost acknowledged appends when measured, but a CI trial's
    # seed 1 lost none it could show (invalid only by Elle, which a healthy
    # cluster at REPEATABLE READ is too): a second seed before it fails.
    for seed in ("1", "2"):
        (tmp_path / seed).mkdir()
        proc, run_dir, checkers = _run_installed(
            tmp_path / seed, "--nemesis", "lose-unsynced:all", "--time-limit", "40",
            "--nemesis-interval", "15", "--seed", seed)
        assert proc.returncode == 1, proc.stdout[-3000:]
        lost = [a for a in checkers["durability"]["anomalies"] if a["type"] == "lost-write"]
        if lost:
            break
    assert lost and all(a["evidence"] == "final-read" for a in lost), proc.stdout[-3000:]
    assert all(v["innodb_flush_log_at_trx_commit"] == "0" for v in _settings(run_dir).values())


def test_the_bench_tells_one_node_lost_updates_from_cross_node_ones():
    sys.path.insert(0, str(PLUGIN))
    try:
        from bench_findings import spread
    finally:
        sys.path.remove(str(PLUGIN))
    node_of = {5: "n1", 7: "n1", 9: "n2"}
    anomalies = [{"type": "lost-update", "txns": [{"completion": 5}, {"completion": 7}]},
                 {"type": "G-single-item", "cycle": [{"completion": 5}, {"completion": 9}]},
                 {"type": "G2-item", "cycle": [{"completion": 5}, {"completion": 9}]}]
    assert spread(anomalies, node_of) == {"one_node": 1, "across_nodes": 1}
    assert spread(anomalies, node_of, ("G2-item",)) == {"one_node": 0, "across_nodes": 1}


def test_a_position_posted_before_this_restart_does_not_count(tmp_path):
    node = _plugin("node")
    (tmp_path / "n1.json").write_text(json.dumps({"seqno": 40, "wall": 100.0}))
    (tmp_path / "n2.json").write_text(json.dumps({"seqno": 7, "wall": 80.0}))   # a cut ago
    (tmp_path / "n3.json").write_text("not json")
    assert node.posted(tmp_path, ["n1", "n2", "n3"], since=99.0) == {"n1": 40}
    assert node.posted(tmp_path, ["n1", "n2", "n3"], since=50.0) == {"n1": 40, "n2": 7}
