"""An embedded (or remote) Spark session with settings for this machine size
and with Spark's console noise kept out of the user's way."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from checkers.spark.connect_token import TOKEN_ENV, read_token, token_file

JAVA_INSTALL = "apt-get install -y openjdk-17-jre-headless"

# Only errors from Spark's own logging: its startup warnings (native-hadoop,
# hostname, ...) mean nothing to a faultline user.
LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
"""

# The JVM's own stderr (its module warnings, anything that bypasses log4j, the
# Python workers' stderr) goes to this file of scratch_dir() instead of the
# user's terminal.
JVM_LOG_NAME = "spark.log"
LOG4J2_NAME = "log4j2.properties"

_scratch: Path | None = None
# Set once a message has pointed the user at the JVM's log: then it stays.
_keep_scratch = False


def scratch_dir() -> Path:
    """This process's private directory (a fresh name, 0700) for what Spark
    needs outside the results dir: its log4j2 settings and the JVM's log. A
    fixed name in the shared temp dir could be a file or a symlink another
    local user planted there; mkdtemp's never is. Removed at exit unless a
    message named the log in it."""
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="faultline-spark-"))
        atexit.register(_remove_scratch, _scratch)
    return _scratch


def keep_scratch() -> None:
    """Leave scratch_dir() at exit: a message names a file in it."""
    global _keep_scratch
    _keep_scratch = True


def _remove_scratch(path: Path) -> None:
    if not _keep_scratch:
        shutil.rmtree(path, ignore_errors=True)


class SparkUnavailable(Exception):
    """Spark cannot start here; the message is one sentence saying why and what to do."""


def java_missing() -> str | None:
    """Why Spark's launcher would find no Java (it looks where this does), or None."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if (Path(java_home) / "bin" / "java").exists():
            return None
        return (f"JAVA_HOME is {java_home} but has no bin/java, and Spark needs Java: "
                f"point JAVA_HOME at a Java install or unset it.")
    if shutil.which("java"):
        return None
    return f"Java is missing, and Spark needs it: install it with `{JAVA_INSTALL}`."


def local_settings(cores: int | None = None) -> dict[str, str]:
    """Memory and parallelism for local mode on a small machine (2 cores, 24 GiB):
    the driver is the executor, and Spark's default 200 shuffle partitions would
    be 200 tiny tasks per stage."""
    cores = cores or os.cpu_count() or 2
    return {
        "spark.driver.memory": "4g",
        # A checker's cost has nothing to do with its group's bytes (230 ops can
        # take a minute), so several tasks per core let a free core pick up the
        # rest while one grinds on a hard key.
        "spark.sql.shuffle.partitions": str(8 * cores),
        "spark.default.parallelism": str(max(2, 2 * cores)),
        # C1 only: a check is a few short queries, and C2 compiling Catalyst
        # competes with the Python workers for the cores.
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    }


def job_settings() -> dict[str, str]:
    """Settings for any master, for jobs whose cost is in the Python checkers."""
    return {
        # AQE would merge the shuffle's small partitions into one task, one
        # Python worker checking every group in turn while the other cores idle.
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        # Many runs' files are listed in the driver, not by a Spark job.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
        "spark.python.worker.reuse": "true",
    }


@contextmanager
def _stderr_to(path: Path, fresh: bool) -> Iterator[None]:
    """Point fd 2 at `path` while the JVM starts, so it and its children inherit it."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "wb" if fresh else "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# Where a Spark Connect server is, if `--remote` is not given.
REMOTE_ENV = "FAULTLINE_SPARK_REMOTE"
# Every Spark service and the driver bind to loopback only (Spark's own
# default is the host's first address, and its web UIs bind to all of them).
LOOPBACK = "127.0.0.1"
# The shuffle width the session was made with, kept so that `size_shuffle`
# never widens past it once an earlier check in the same session narrowed it.
SHUFFLE_LIMIT_KEY = "spark.faultline.shuffleLimit"


def loopback_env() -> dict[str, str]:
    """Environment for the JVMs we start: bound to loopback, workers are this Python."""
    return {"SPARK_LOCAL_IP": LOOPBACK, "SPARK_LOCAL_HOSTNAME": "localhost",
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}


# The JVM starts its Python workers with `-m pyspark.daemon` in the directory
# `faultline check` was typed in; as nodes.child_python's `-P`, this keeps
# that directory off their sys.path (set as each worker's environment, not
# this process's).
WORKER_ENV = {"PYTHONSAFEPATH": "1"}


def spark_session(master: str | None = None, app: str = "faultline",
                  remote: str | None = None) -> Any:
    """A session on `master` (default: embedded local[*]) or, with `remote`
    (`sc://host:port`), on a running Spark Connect server, which pays the
    JVM start once for many checks. With neither, $FAULTLINE_SPARK_REMOTE
    names the server, if set."""
    if remote is None and master is None:
        remote = os.environ.get(REMOTE_ENV) or None
    if remote is not None:
        if master is not None:
            raise SparkUnavailable("give a Spark master or a Spark Connect remote, not both.")
        return remote_session(remote)
    missing = java_missing()
    if missing:
        raise SparkUnavailable(missing)
    os.environ.update({k: v for k, v in loopback_env().items() if k not in os.environ})
    # Spark's Python workers must be this interpreter, which has faultline and
    # pandas installed, not whatever `python3` is first on PATH.
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    log_conf = scratch_dir() / LOG4J2_NAME
    log_conf.write_text(LOG4J2)
    jvm_log = scratch_dir() / JVM_LOG_NAME
    builder = (SparkSession.builder.appName(app)
               .master(master or "local[*]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"]))
    for k, v in WORKER_ENV.items():
        builder = builder.config(f"spark.executorEnv.{k}", v)
    settings = job_settings()
    java_opts = f"-Dlog4j2.configurationFile=file:{log_conf}"
    if master is None or master.startswith("local"):
        settings |= local_settings()
        java_opts += " " + settings.pop("spark.driver.extraJavaOptions")
    for k, v in settings.items():
        builder = builder.config(k, v)
    builder = builder.config("spark.driver.extraJavaOptions", java_opts)
    try:
        # A JVM left from an earlier session in this process still writes to the log.
        with _stderr_to(jvm_log, fresh=SparkContext._gateway is None):
            session = builder.getOrCreate()
    except Exception as e:  # py4j surfaces JVM start failures as bare exceptions
        keep_scratch()
        raise SparkUnavailable(f"Spark did not start ({type(e).__name__}: {e}); "
                               f"its log is {jvm_log}.") from None
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set(SHUFFLE_LIMIT_KEY, str(session.conf.get("spark.sql.shuffle.partitions")))
    return session


CONNECT_PROBE_S = 5.0
DEFAULT_CONNECT_PORT = 15002


def parse_remote(url: str) -> tuple[str, int]:
    """`sc://host[:port][/;params]` -> (host, port), as Spark Connect reads it."""
    if not url.startswith("sc://"):
        raise SparkUnavailable(f"a Spark Connect remote is sc://HOST:PORT, not {url!r}.")
    netloc = url[len("sc://"):].split("/", 1)[0]
    host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    if not host or (port and not port.isdigit()):
        raise SparkUnavailable(f"a Spark Connect remote is sc://HOST:PORT, not {url!r}.")
    return host, int(port) if port else DEFAULT_CONNECT_PORT


# What PySpark sets in os.environ when it makes a Spark Connect session.
CONNECT_MODE_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
_env_before_remote: dict[str, str] = {}


def shared_session_url(url: str) -> str:
    """`url` with a session id every faultline check of that server shares,
    unless it names one. A server session keeps its Python workers, with
    faultline's checkers imported, from one check to the next; a fresh
    session per check would start them again each time (measured: 8-10 s
    for a first check against 1-2 s for the next, under load 8-15)."""
    if ";session_id=" in url:
        return url
    sid = uuid.uuid5(uuid.NAMESPACE_URL, f"faultline-check:{url}")
    return f"{url}{'' if '/' in url[len('sc://'):] else '/'};session_id={sid}"


def end_session(session: Any) -> None:
    """Done with a session: an embedded one stops (and its JVM with it); a
    Spark Connect one only closes this client's channel, leaving the shared
    server session warm for the next check."""
    if is_remote(session):
        session.client.close()
        _unmark_connect_mode()
    else:
        session.stop()


def _unmark_connect_mode() -> None:
    """PySpark marks the whole process as Spark Connect once it tries to make a
    remote session (made or refused); unmarked, a later embedded session here
    (a test, a bench) is classic again."""
    for k in CONNECT_MODE_ENV:
        if k in _env_before_remote:
            os.environ[k] = _env_before_remote[k]
        else:
            os.environ.pop(k, None)


def is_remote(session: Any) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


LOOPBACK_HOSTS = (LOOPBACK, "localhost")


def authenticated_url(url: str) -> str:
    """`url` with the token of the `faultline spark serve` on that loopback
    port, when there is one of ours and neither the URL nor the environment
    gives one. PySpark sends a token over plain loopback only to a host
    spelled `localhost` (to any other, only over TLS)."""
    host, port = parse_remote(url)
    if host not in LOOPBACK_HOSTS or ";token=" in url or os.environ.get(TOKEN_ENV):
        return url
    token = read_token(port)
    if token is None:
        return url
    rest = url[len("sc://"):].split("/", 1)
    params = rest[1] if len(rest) > 1 else ""
    return f"sc://localhost:{port}/{params};token={token}"


def remote_session(url: str) -> Any:
    """A Spark Connect session; the server's own settings stand, except the
    job settings, which are per session."""
    host, port = parse_remote(url)
    # Spark Connect's client retries a refused connection for minutes; one
    # plain connect tells at once whether anything listens there.
    try:
        socket.create_connection((host, port), timeout=CONNECT_PROBE_S).close()
    except OSError as e:
        raise SparkUnavailable(f"no Spark Connect server answered at {url} ({e.strerror or e}); "
                               "start one with `faultline spark serve`.") from None
    try:
        from pyspark.sql import SparkSession
        _env_before_remote.clear()
        _env_before_remote.update({k: os.environ[k] for k in CONNECT_MODE_ENV
                                   if k in os.environ})
        session = SparkSession.builder.remote(
            authenticated_url(shared_session_url(url))).getOrCreate()
        for k, v in job_settings().items():
            if k.startswith("spark.sql."):
                session.conf.set(k, v)
        # Set once per server session: a later check finds it narrowed by an earlier one.
        if session.conf.get(SHUFFLE_LIMIT_KEY, None) is None:
            session.conf.set(SHUFFLE_LIMIT_KEY,
                             str(session.conf.get("spark.sql.shuffle.partitions")))
    except ImportError as e:
        _unmark_connect_mode()
        raise SparkUnavailable(f"Spark Connect's client is missing ({e}): install "
                               "`pyspark[connect]`.") from None
    except Exception as e:  # gRPC errors: nothing listening, wrong port, TLS...
        _unmark_connect_mode()
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        if "UNAUTHENTICATED" in str(e) or "authentication token" in str(e):
            raise SparkUnavailable(
                f"the Spark Connect server at {url} refused this client: it needs the "
                f"server's token, which `faultline spark serve` keeps in {token_file(port)} "
                "(readable by the server's owner only).") from None
        raise SparkUnavailable(f"no Spark Connect server answered at {url} "
                               f"({type(e).__name__}: {first}); start one with "
                               "`faultline spark serve`.") from None
    return session
