"""Issue 28, finding 1: a Spark Connect server of `faultline spark serve`
refuses a client without its token (a UDF would run as root), and
faultline's own clients find the token where only the server's owner can
read it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from checkers.spark import connect_token
from checkers.spark.connect_token import (
    TOKEN_DIR_ENV,
    UnsafeTokenDir,
    forget_token,
    new_token,
    read_token,
    token_file,
)
from checkers.spark.session import (
    CONNECT_MODE_ENV,
    SparkUnavailable,
    authenticated_url,
    end_session,
    java_missing,
    remote_session,
)

as_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to try the server as nobody")


@pytest.fixture
def tokens(tmp_path, monkeypatch):
    d = tmp_path / "tokens"
    monkeypatch.setenv(TOKEN_DIR_ENV, str(d))
    monkeypatch.delenv(connect_token.TOKEN_ENV, raising=False)
    return d


def test_a_new_token_is_private_and_read_back(tokens):
    token = new_token(15002)
    assert len(token) >= 40 and read_token(15002) == token
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o700
    assert stat.S_IMODE(token_file(15002).stat().st_mode) == 0o600
    assert new_token(15002) != token                     # fresh per server
    assert read_token(15003) is None
    assert [p.name for p in tokens.iterdir()] == ["15002.token"]   # no tmp left


def test_forget_removes_only_its_own_token(tokens):
    old = new_token(1)
    new = new_token(1)
    forget_token(1, old)                 # a newer server's token stays
    assert read_token(1) == new
    forget_token(1, new)
    assert not token_file(1).exists()


@pytest.mark.parametrize("spoil", ["file-mode", "dir-mode", "symlink"])
def test_a_token_file_others_could_touch_is_never_trusted(tokens, tmp_path, spoil):
    new_token(7)
    if spoil == "file-mode":
        token_file(7).chmod(0o644)
    elif spoil == "dir-mode":
        tokens.chmod(0o755)
    else:
        elsewhere = tmp_path / "planted"
        elsewhere.write_text("planted\n")
        elsewhere.chmod(0o600)
        token_file(7).unlink()
        token_file(7).symlink_to(elsewhere)
    assert read_token(7) is None


@as_nobody
def test_a_token_file_of_another_user_is_never_trusted(tokens):
    new_token(8)
    os.chown(token_file(8), 65534, 65534)
    assert read_token(8) is None


def test_a_token_dir_open_to_others_is_refused(tokens):
    tokens.mkdir(mode=0o755)
    tokens.chmod(0o755)
    with pytest.raises(UnsafeTokenDir, match="0700"):
        new_token(9)


def test_authenticated_url_adds_our_token_for_a_loopback_server(tokens, monkeypatch):
    assert authenticated_url("sc://127.0.0.1:4000") == "sc://127.0.0.1:4000"   # no token
    token = new_token(4000)
    # PySpark sends a token over plain loopback only to a host called localhost.
    assert authenticated_url("sc://127.0.0.1:4000/;session_id=s") == \
        f"sc://localhost:4000/;session_id=s;token={token}"
    assert authenticated_url("sc://localhost:4000") == f"sc://localhost:4000/;token={token}"
    # A token given by the user, or another host, is left alone.
    assert authenticated_url("sc://127.0.0.1:4000/;token=mine") == \
        "sc://127.0.0.1:4000/;token=mine"
    assert authenticated_url("sc://10.0.0.5:4000") == "sc://10.0.0.5:4000"
    monkeypatch.setenv(connect_token.TOKEN_ENV, "from-env")
    assert authenticated_url("sc://127.0.0.1:4000") == "sc://127.0.0.1:4000"


# A client as nobody, who has no token: it asks the server to run `id`.
INTRUDER = """\
import sys
from pyspark.sql import SparkSession
s = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print(s.range(1).selectExpr("reflect('java.lang.System', 'getProperty', 'user.name')")
      .collect())
"""


@pytest.mark.slow
@as_nobody
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_the_server_refuses_a_client_without_its_token_and_serves_ours(tokens, tmp_path):
    from harness.spark.servers import connect_server, free_port
    port = free_port()
    # nobody must reach the venv's Python and its libraries, not the token.
    shared = Path(tempfile.mkdtemp(prefix="faultline-test-", dir="/tmp"))
    shared.chmod(0o755)
    server = connect_server(tmp_path / "connect.log", port).start()
    try:
        server.wait_ready()
        assert stat.S_IMODE(token_file(port).stat().st_mode) == 0o600
        assert token_file(port).stat().st_uid == 0
        # Not on the JVM's command line, where `ps` would show it to anyone.
        assert read_token(port) not in " ".join(server.argv)
        script = shared / "intruder.py"
        script.write_text(INTRUDER)
        script.chmod(0o644)
        for url in (f"sc://127.0.0.1:{port}", f"sc://localhost:{port}/;token=guess"):
            intruder = subprocess.run(
                ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                 sys.executable, str(script), url],
                capture_output=True, text=True, timeout=180, cwd=shared,
                env={"PATH": os.environ["PATH"], "HOME": str(shared)})
            assert intruder.returncode != 0, intruder.stdout
            assert "UNAUTHENTICATED" in intruder.stderr or "authentication" in \
                intruder.stderr.lower(), intruder.stderr[-2000:]
            assert "root" not in intruder.stdout
        # nobody cannot read the token where faultline keeps it.
        reader = subprocess.run(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
             "cat", str(token_file(port))], capture_output=True, text=True, timeout=30)
        assert reader.returncode != 0 and reader.stdout == ""

        # faultline's own client reads the token and is served.
        session = remote_session(f"sc://127.0.0.1:{port}")
        try:
            assert session.range(3).count() == 3
        finally:
            end_session(session)
    finally:
        server.stop()
        shutil.rmtree(shared, ignore_errors=True)
    assert not token_file(port).exists()


@pytest.mark.slow
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_our_client_without_the_token_is_told_why(tokens, tmp_path, monkeypatch):
    from harness.spark.servers import connect_server, free_port
    port = free_port()
    before = {k for k in CONNECT_MODE_ENV if k in os.environ}
    server = connect_server(tmp_path / "connect.log", port).start()
    try:
        server.wait_ready()
        monkeypatch.setenv(TOKEN_DIR_ENV, str(tmp_path / "elsewhere"))
        with pytest.raises(SparkUnavailable, match="refused this client: it needs the "
                                                   "server's token"):
            remote_session(f"sc://127.0.0.1:{port}")
        # A refused session leaves the process classic: an embedded session
        # made after it (another test in this worker) must not need a remote.
        assert not {k for k in CONNECT_MODE_ENV if k in os.environ} - before
    finally:
        server.stop()
