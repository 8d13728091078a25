"""An embedded (or remote) Spark session with settings for this machine size
and with Spark's console noise kept out of the user's way."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

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


class SparkUnavailable(Exception):
    """Spark cannot start here; the message is one sentence saying why and what to do."""


def java_missing() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return None
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
        "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
        "spark.default.parallelism": str(max(2, 2 * cores)),
    }


def spark_session(master: str | None = None, app: str = "faultline") -> Any:
    missing = java_missing()
    if missing:
        raise SparkUnavailable(missing)
    # Spark's Python workers must be this interpreter, which has faultline and
    # pandas installed, not whatever `python3` is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    log_conf = Path(tempfile.gettempdir()) / "faultline-log4j2.properties"
    if not log_conf.exists() or log_conf.read_text() != LOG4J2:
        log_conf.write_text(LOG4J2)
    builder = (SparkSession.builder.appName(app)
               .master(master or "local[*]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.driver.extraJavaOptions",
                       f"-Dlog4j2.configurationFile=file:{log_conf}")
               .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"]))
    if master is None or master.startswith("local"):
        for k, v in local_settings().items():
            builder = builder.config(k, v)
    try:
        session = builder.getOrCreate()
    except Exception as e:  # py4j surfaces JVM start failures as bare exceptions
        raise SparkUnavailable(f"Spark did not start ({type(e).__name__}: {e}).") from None
    session.sparkContext.setLogLevel("ERROR")
    return session
