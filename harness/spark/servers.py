"""Spark's own long-running services, started from the PySpark install: a
standalone master and its workers (a real cluster on one machine), and a
Spark Connect server (a warm session that many `faultline check`s share).

Each runs in its own process group, so stopping it stops what it forked too
(a worker's executors and their Python workers), and binds to loopback only.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from checkers.spark.connect_token import TOKEN_ENV, forget_token, new_token
from checkers.spark.session import (
    DEFAULT_CONNECT_PORT,
    LOOPBACK,
    WORKER_ENV,
    job_settings,
    local_settings,
    loopback_env,
)
from nemesis.netns import die_with_parent

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0


class ServiceError(Exception):
    """A Spark service did not come up; the message says which and where its log is."""


def spark_home() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def master_argv(port: int) -> list[str]:
    # webui-port 0: the UI still starts (the master has no switch for it),
    # on a free loopback port instead of 8080.
    return [str(spark_home() / "bin" / "spark-class"), MASTER_CLASS,
            "--host", LOOPBACK, "--port", str(port), "--webui-port", "0"]


def worker_argv(master_url: str, work_dir: Path, port: int, cores: int = 1,
                memory: str = "2g") -> list[str]:
    return [str(spark_home() / "bin" / "spark-class"), WORKER_CLASS, master_url,
            "--host", LOOPBACK, "--port", str(port), "--cores", str(cores), "--memory", memory,
            "--work-dir", str(work_dir), "--webui-port", "0"]


def connect_argv(port: int, master: str = "local[*]") -> list[str]:
    conf = {"spark.connect.grpc.binding.address": LOOPBACK,
            "spark.connect.grpc.binding.port": str(port),
            "spark.ui.enabled": "false",
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.executorEnv.PYSPARK_PYTHON": loopback_env()["PYSPARK_PYTHON"],
            **{f"spark.executorEnv.{k}": v for k, v in WORKER_ENV.items()}} | job_settings()
    if master.startswith("local"):
        conf |= local_settings()
    argv = [str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_CLASS,
            "--name", "faultline Spark Connect", "--master", master]
    for k, v in conf.items():
        argv += ["--conf", f"{k}={v}"]
    return argv


@dataclass
class Service:
    """One started Spark JVM (and whatever it forks), with its log file."""

    name: str
    argv: list[str]
    log: Path
    port: int
    proc: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)
    # Whether clients must show a token (new_token's, written for them).
    token: bool = False

    def start(self) -> Service:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        if self.token:
            self.env[TOKEN_ENV] = new_token(self.port)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=os.environ | loopback_env() | WORKER_ENV | self.env, start_new_session=True,
                preexec_fn=die_with_parent)
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> Service:
        """Until something accepts connections on the service's port."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServiceError(f"{self.name} exited with status {self.proc.returncode} "
                                   f"before it listened on {self.port}; its log is {self.log}")
            try:
                with socket.create_connection((LOOPBACK, self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise ServiceError(f"{self.name} did not listen on {self.port} within {timeout:.0f} s; "
                           f"its log is {self.log}")

    def stop(self) -> None:
        """SIGTERM the process group (the JVM shuts down its children), then
        SIGKILL; its token is forgotten."""
        if TOKEN_ENV in self.env:
            forget_token(self.port, self.env[TOKEN_ENV])
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # Executors and Python workers the JVM forked share its group; any left
        # after the JVM went get the same end.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# A worker's log line once the master has accepted it: until then a job
# submitted to the master would run on fewer workers than asked for.
REGISTERED_LINE = b"Successfully registered with master"


def wait_for_line(service: Service, line: bytes, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if line in service.log.read_bytes():
            return
        if service.proc is not None and service.proc.poll() is not None:
            break
        time.sleep(0.2)
    raise ServiceError(f"{service.name} never logged {line.decode()!r}; its log is {service.log}")


@dataclass
class StandaloneCluster:
    """A master and `workers` workers of one core each, every one with its own work dir."""

    root: Path
    workers: int = 2
    services: list[Service] = field(default_factory=list)
    master_port: int = 0

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    def start(self) -> StandaloneCluster:
        self.master_port = free_port()
        try:
            master = Service("Spark master", master_argv(self.master_port),
                             self.root / "master.log", self.master_port).start()
            self.services.append(master)
            master.wait_ready()
            for i in range(self.workers):
                work = self.root / f"worker-{i}"
                work.mkdir(parents=True, exist_ok=True)
                # The worker's RPC port, known in advance so readiness is a connect.
                port = free_port()
                w = Service(f"Spark worker {i}", worker_argv(self.url, work, port),
                            self.root / f"worker-{i}.log", port).start()
                self.services.append(w)
                w.wait_ready()
                wait_for_line(w, REGISTERED_LINE)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for s in reversed(self.services):
            s.stop()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def connect_server(log: Path, port: int | None = None, master: str = "local[*]") -> Service:
    """A Spark Connect server that refuses clients without its fresh token
    (checkers.spark.connect_token), which it gets in its environment."""
    port = port or DEFAULT_CONNECT_PORT
    return Service("Spark Connect server", connect_argv(port, master), log, port,
                   token=True)
