"""Choosing a Spark Connect server (`--remote`, $FAULTLINE_SPARK_REMOTE), and
what a user sees when none answers: no JVM, no Java needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers.history import Op
from checkers.spark.session import REMOTE_ENV, SparkUnavailable, parse_remote, shared_session_url
from harness.cli import main
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter
from harness.spark.servers import free_port


def one_run(results: Path) -> Path:
    run = create_run_dir(results)
    with HistoryWriter(run / "history.msgpack") as w:
        w.append(Op(0, 0, 0, "invoke", "write", 1))
        w.append(Op(1, 1, 0, "ok", "write", 1))
    (run / "run.json").write_text(json.dumps(
        {"run_id": run.name, "status": "complete", "config": {"checkers": ["linearizability"]}}))
    return run


@pytest.mark.parametrize("url,expected", [
    ("sc://127.0.0.1:15002", ("127.0.0.1", 15002)),
    ("sc://localhost", ("localhost", 15002)),
    ("sc://10.0.0.5:443/;use_ssl=true;token=x", ("10.0.0.5", 443)),
])
def test_remote_urls_are_read_as_spark_connect_reads_them(url, expected):
    assert parse_remote(url) == expected


@pytest.mark.parametrize("url", ["spark://127.0.0.1:7077", "sc://:15002", "sc://h:port", "h:1"])
def test_a_url_that_is_not_spark_connect_is_refused(url):
    with pytest.raises(SparkUnavailable, match="sc://HOST:PORT"):
        parse_remote(url)


def test_an_absent_server_is_one_clear_line_at_once(tmp_path, capfd):
    run = one_run(tmp_path / "results")
    url = f"sc://127.0.0.1:{free_port()}"
    assert main(["check", str(run), "--remote", url]) == 254
    out, err = capfd.readouterr()
    lines = err.strip().splitlines()
    assert lines == [f"faultline: no Spark Connect server answered at {url} "
                     "(Connection refused); start one with `faultline spark serve`."]
    assert not (run / "verdicts.json").exists()


def test_the_environment_names_the_server_unless_a_master_is_given(tmp_path, capfd,
                                                                    monkeypatch):
    run = one_run(tmp_path / "results")
    url = f"sc://127.0.0.1:{free_port()}"
    monkeypatch.setenv(REMOTE_ENV, url)
    assert main(["check", str(run)]) == 254
    assert url in capfd.readouterr().err
    # --in-process starts no Spark at all, whatever the environment says.
    assert main(["check", str(run), "--in-process"]) == 0


@pytest.mark.parametrize("args", [["--in-process", "--remote", "sc://127.0.0.1:1"],
                                  ["--master", "local[1]", "--remote", "sc://127.0.0.1:1"]])
def test_contradictory_choices_are_bad_arguments(tmp_path, capfd, args):
    run = one_run(tmp_path / "results")
    assert main(["check", str(run), *args]) == 254
    assert capfd.readouterr().err.startswith("faultline: ")


def test_every_check_of_one_server_shares_one_server_session():
    a = shared_session_url("sc://127.0.0.1:15002")
    assert a == shared_session_url("sc://127.0.0.1:15002")
    assert a.startswith("sc://127.0.0.1:15002/;session_id=")
    assert parse_remote(a) == ("127.0.0.1", 15002)
    assert shared_session_url("sc://127.0.0.1:15003") != a
    # Parameters are kept; a session id given by the user wins.
    assert shared_session_url("sc://h:1/;token=x").startswith("sc://h:1/;token=x;session_id=")
    mine = "sc://h:1/;session_id=6a1c6f50-0000-4000-8000-00000000fa17"
    assert shared_session_url(mine) == mine
