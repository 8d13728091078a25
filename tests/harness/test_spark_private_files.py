"""Issue 28, finding 2: what Spark needs outside the results dir (its log4j2
settings, the JVM's log, `spark serve`'s log) lives in a fresh private
directory, never at a fixed name in the shared temp dir where another local
user could plant a file or a symlink for root to use or write through."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from checkers.spark import session
from checkers.spark.session import java_missing

# The names faultline used in the shared temp dir before.
OLD_LOG4J2 = "faultline-log4j2.properties"
OLD_JVM_LOG = "faultline-spark.log"

as_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to plant files as nobody")


@pytest.fixture
def base():
    """A directory nobody can reach (pytest's tmp_path sits under a 0700 one)."""
    d = Path(tempfile.mkdtemp(prefix="faultline-test-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def shared_tmp(base: Path) -> Path:
    """A temp dir shared as /tmp is: world-writable and sticky."""
    shared = base / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def as_user_nobody(code: str, *args: str) -> None:
    subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                    sys.executable, "-c", code, *args], check=True, timeout=60)


PLANT = """\
import os, sys
shared, target, hijacked = sys.argv[1:]
# A log4j2 config whose appender writes a line of the attacker's choosing.
open(os.path.join(shared, "faultline-log4j2.properties"), "w").write(
    "rootLogger.level = info\\n"
    "rootLogger.appenderRef.f.ref = f\\n"
    "appender.f.type = File\\n"
    "appender.f.name = f\\n"
    f"appender.f.fileName = {hijacked}\\n"
    "appender.f.layout.type = PatternLayout\\n"
    "appender.f.layout.pattern = attacker %m%n\\n")
os.symlink(target, os.path.join(shared, "faultline-spark.log"))
"""


def plant(shared: Path, base: Path) -> tuple[Path, Path]:
    """As nobody: the old fixed names, one a config, one a symlink to a root file."""
    root_only = base / "root-only"
    root_only.mkdir(mode=0o700)
    target = root_only / "precious"
    target.write_text("root's data\n")
    hijacked = root_only / "written-by-log4j"
    # nobody must reach root-only's names to aim at them, not write there itself.
    root_only.chmod(0o711)
    as_user_nobody(PLANT, str(shared), str(target), str(hijacked))
    planted = shared / OLD_LOG4J2
    assert planted.stat().st_uid != 0 and (shared / OLD_JVM_LOG).is_symlink()
    return target, hijacked


def test_scratch_dir_is_fresh_and_private(base, monkeypatch):
    shared = shared_tmp(base)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(session, "_scratch", None)
    d = session.scratch_dir()
    assert d.parent == shared and d.name not in (OLD_LOG4J2, OLD_JVM_LOG)
    assert stat.S_IMODE(d.stat().st_mode) == 0o700 and d.stat().st_uid == os.geteuid()
    assert session.scratch_dir() == d        # one per process
    monkeypatch.setattr(session, "_scratch", None)
    assert session.scratch_dir() != d        # never a name reused


@pytest.mark.slow
@as_nobody
@pytest.mark.skipif(java_missing() is not None, reason="Java is not installed")
def test_an_embedded_session_uses_nothing_planted_in_the_shared_temp_dir(base, tmp_path):
    shared = shared_tmp(base)
    target, hijacked = plant(shared, base)
    planted = (shared / OLD_LOG4J2).read_text()
    # Run from a directory holding a booby-trapped msgpack.py too: Spark's
    # Python workers must not import it (the JVM starts them in this cwd).
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = tmp_path / "msgpack-imported"
    (cwd / "msgpack.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    code = ("from checkers.spark.session import spark_session, end_session\n"
            "s = spark_session()\n"
            "print(s.sparkContext.parallelize([1], 1)"
            ".map(lambda _: __import__('msgpack').__file__).collect()[0])\n"
            "end_session(s)\n")
    done = subprocess.run([sys.executable, "-P", "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TMPDIR": str(shared)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert target.read_text() == "root's data\n"             # not written through the link
    assert not hijacked.exists()                               # the planted config unused
    assert (shared / OLD_LOG4J2).read_text() == planted        # nor rewritten
    assert "site-packages" in done.stdout and not marker.exists()
    # The session's own private dir is gone at exit; nothing else was left.
    assert sorted(p.name for p in shared.iterdir()) == sorted([OLD_LOG4J2, OLD_JVM_LOG])


@as_nobody
def test_spark_serve_log_is_not_opened_through_a_planted_symlink(base, monkeypatch):
    """`spark serve`'s default log: a fresh private dir, not the old fixed name
    (no Java needed: the log is chosen and opened before the JVM starts)."""
    from harness.commands import spark as spark_command
    shared = shared_tmp(base)
    target = base / "precious"
    target.write_text("root's data\n")
    as_user_nobody("import os, sys; os.symlink(sys.argv[1], sys.argv[2])",
                   str(target), str(shared / "faultline-spark-connect.log"))
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    chosen: list[Path] = []

    class Opened(Exception):
        pass

    def connect_server(log: Path, port: int, master: str) -> None:
        chosen.append(log)
        raise Opened

    monkeypatch.setattr("harness.spark.servers.connect_server", connect_server)
    monkeypatch.setattr("checkers.spark.session.java_missing", lambda: None)
    with pytest.raises(Opened):
        spark_command.run_serve(type("Args", (), {"log": None, "port": 15999, "master": "local"})())
    (log,) = chosen
    assert log.parent.parent == shared and log.parent.name.startswith("faultline-spark-connect-")
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert target.read_text() == "root's data\n"
