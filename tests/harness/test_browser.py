"""`faultline serve`'s pure parts (filters, the trend's figures, the diff of two
runs, which files a path may reach) and its HTTP server on loopback."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pandas as pd
import pytest

from harness.browser import catalog, diff, trend
from harness.browser.server import Browser, Server, inside
from harness.results.store import RunSummary, create_run_dir


def summary(**kw) -> RunSummary:
    base = {"run_id": "r", "path": Path("/nonexistent"), "db": "raft", "workload": "register",
            "nemesis": "partition:one-way,kill", "bugs": [], "verdict": "valid",
            "start": "2026-11-25T01:02:03"}
    return RunSummary(**{**base, **kw})


def test_filters_keep_what_matches_and_drop_the_rest():
    runs = [summary(run_id="a"), summary(run_id="b", db="etcd", verdict="invalid"),
            summary(run_id="c", bugs=["no-pre-vote"], nemesis="pause",
                    start="2026-11-24T09:00:00")]
    ids = lambda f: [r.run_id for r in catalog.filter_runs(runs, f)]  # noqa: E731
    assert ids({}) == ["a", "b", "c"]
    assert ids({"system": "etcd"}) == ["b"]
    assert ids({"fault": "partition"}) == ["a", "b"]            # a family finds its variants
    assert ids({"fault": "partition:one-way"}) == ["a", "b"]
    assert ids({"fault": "pause", "switch": "no-pre-vote"}) == ["c"]
    assert ids({"verdict": "invalid", "system": "raft"}) == []
    assert ids({"date": "2026-11-24"}) == ["c"]
    assert catalog.choices(runs)["fault"] == ["kill", "partition", "partition:one-way", "pause"]


def test_night_figures_count_runs_switches_and_systems():
    rows = pd.DataFrame([
        {"run": "1", "checker": "lin", "valid": "false", "db": "raft", "bugs": "no-pre-vote"},
        {"run": "1", "checker": "stats", "valid": "true", "db": "raft", "bugs": "no-pre-vote"},
        {"run": "2", "checker": "lin", "valid": "true", "db": "raft", "bugs": "no-pre-vote"},
        {"run": "3", "checker": "lin", "valid": "true", "db": "etcd", "bugs": ""},
        {"run": "4", "checker": "lin", "valid": "unknown", "db": "etcd", "bugs": "a,b"},
    ])
    n = trend.night_figures("c", "2026-11-25", rows, [1_000_000 * i for i in range(1, 101)])
    assert (n.runs, n.invalid) == (4, 1)
    assert n.detection == {"no-pre-vote": (1, 2), "a": (0, 1), "b": (0, 1)}
    assert n.invalid_by_system == {"raft": (1, 2), "etcd": (0, 2)}
    assert n.p99_ms == 99.0
    assert trend.night_figures("c", "d", rows.iloc[0:0], []).p99_ms is None


def test_ok_latencies_pair_each_ok_with_its_own_invoke():
    ops = pd.DataFrame([
        {"index": 0, "time": 10, "process": 0, "type": "invoke"},
        {"index": 1, "time": 12, "process": 1, "type": "invoke"},
        {"index": 2, "time": 15, "process": -1, "type": "info"},
        {"index": 3, "time": 30, "process": 0, "type": "ok"},
        {"index": 4, "time": 40, "process": 1, "type": "fail"},
        {"index": 5, "time": 50, "process": 1, "type": "invoke"},
        {"index": 6, "time": 57, "process": 1, "type": "ok"},
    ])
    assert sorted(trend.ok_latencies_ns(ops)) == [7, 20]


def test_diff_names_what_differs_and_only_that():
    a = {"config": {"seed": 1, "nodes": 3, "node_options": {"x": 1}},
         "schedule": [{"time": 1e9, "label": "kill n1"}, {"time": 2e9, "label": "heal"}]}
    b = {"config": {"seed": 2, "nodes": 3, "node_options": {"x": 1, "y": True}},
         "schedule": [{"time": 1.5e9, "label": "kill n1"},
                      {"time": 1.7e9, "label": "pause n2", "noop": "already"},
                      {"time": 2e9, "label": "heal"}]}
    assert diff.config_diff(a, b) == [("node_options.y", "-", "true"), ("seed", "1", "2")]
    assert diff.config_diff(a, a) == []
    rows = diff.schedule_diff(a, b)
    assert [r.tag for r in rows] == ["same", "only-b", "same"]
    assert "pause n2 (no-op)" in rows[1].b
    va = {"checkers": {"lin": {"valid": False, "anomalies": [{"type": "nonlinearizable"}]},
                       "stats": {"valid": True}}}
    vb = {"checkers": {"lin": {"valid": True}, "stats": {"valid": True}}}
    assert diff.verdict_diff(va, vb) == [
        ("lin", "INVALID (nonlinearizable)", "valid", True), ("stats", "valid", "valid", False)]


def test_only_files_inside_a_run_dir_are_reachable(tmp_path):
    run = create_run_dir(tmp_path / "results")
    (run / "report.html").write_text("<p>ok</p>")
    (run / "nodes").mkdir()
    (run / "nodes" / "stderr.log").write_text("log")
    (run / "data.bin").write_text("x")
    (tmp_path / "secret.html").write_text("secret")
    (run / "link.html").symlink_to(tmp_path / "secret.html")
    root = tmp_path / "results"
    assert inside(root, run.name, "report.html") == (run / "report.html").resolve()
    assert inside(root, run.name, "nodes/stderr.log") is not None
    for rel in ("../../secret.html", "link.html", "data.bin", "missing.html", "nodes"):
        assert inside(root, run.name, rel) is None, rel
    assert inside(root, "..", "secret.html") is None
    assert inside(root, "not-a-run-id", "report.html") is None


def get(server: Server, path: str, host: str | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest("GET", path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{server.port}")
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode(errors="replace")
    conn.close()
    return resp.status, body


def test_the_server_listens_on_loopback_and_refuses_other_hosts_and_paths(tmp_path):
    results = tmp_path / "results"
    run = create_run_dir(results)
    (run / "run.json").write_text(json.dumps({"run_id": run.name, "status": "complete",
                                              "config": {"db": "raft", "seed": 7}}))
    (run / "report.html").write_text("<p>the report</p>")
    (tmp_path / "secret.html").write_text("secret")
    server = Server(results).start()
    try:
        assert server.httpd.server_address[0] == "127.0.0.1"
        status, body = get(server, "/")
        assert status == 200 and run.name in body
        assert get(server, f"/run/{run.name}/report.html") == (200, "<p>the report</p>")
        assert get(server, f"/run/{run.name}/")[1] == "<p>the report</p>"
        for path in (f"/run/{run.name}/../../secret.html",
                     f"/run/{run.name}/%2e%2e/%2e%2e/secret.html", "/run/../secret.html",
                     "/etc/passwd", "/campaign/nope", "/diff?a=x&b=y"):
            status, body = get(server, path)
            assert status == 404 and "secret" not in body, path
        # A page that rebinds its own name to 127.0.0.1 gets nothing.
        status, body = get(server, "/", host="evil.example:80")
        assert status == 421 and run.name not in body
    finally:
        server.stop()


def test_the_diff_of_a_run_with_itself_shows_no_change(tmp_path):
    results = tmp_path / "results"
    run = create_run_dir(results)
    (run / "run.json").write_text(json.dumps({"config": {"seed": 1},
                                              "schedule": [{"time": 0, "label": "kill n1"}]}))
    status, _, body = Browser(results).get(f"/diff?a={run.name}&b={run.name}")
    assert status == 200
    text = body.decode()
    assert "Same config." in text and "class='changed'" not in text


@pytest.mark.parametrize("argv", [["serve", "--port", "80"], ["serve", "--port", "70000"]])
def test_serve_refuses_a_bad_port(argv, capsys):
    from harness.cli import main
    assert main(argv) == 254
    assert "--port" in capsys.readouterr().err


def test_the_trend_reads_each_history_file_once_until_it_changes(tmp_path):
    import os

    from harness.results.dataset import DATASET_DIR, HISTORIES
    from tests.browser_results import two_nights
    two_nights(tmp_path)
    cid = "20261125T010000.000000Z-bbbbbb"
    cache = trend.NightCache()
    first = cache.night(tmp_path, cid)
    assert first == trend.read_night(tmp_path, cid)          # the same figures as uncached
    assert first is not None and first.runs == 20 and cache.files_read == 20
    assert cache.night(tmp_path, cid) == first and cache.files_read == 20   # nothing re-read
    histories = sorted((tmp_path / DATASET_DIR / HISTORIES).glob(f"campaign={cid}/*/*.parquet"))
    st = histories[0].stat()
    os.utime(histories[0], ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache.night(tmp_path, cid) == first and cache.files_read == 21   # that one again
    assert cache.night(tmp_path, "no-such-campaign") is None
