"""`faultline spark serve`: a warm Spark Connect server for many checks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.run.errors import HarnessError, UserError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "spark", help="run Spark services for `faultline check`",
        description="Spark services started from the PySpark install.")
    sub = p.add_subparsers(dest="spark_command", metavar="SPARK_COMMAND")
    sub.required = True
    serve = sub.add_parser(
        "serve", help="a Spark Connect server: checks pay the JVM start once",
        description="Start a Spark Connect server on loopback, refusing clients without "
                    "its fresh token (kept where only its owner can read it), and keep it "
                    "in the foreground until Ctrl-C. Then `faultline check --remote "
                    "sc://127.0.0.1:PORT` (or FAULTLINE_SPARK_REMOTE=sc://127.0.0.1:PORT) "
                    "checks through it, with no JVM to start.")
    from harness.spark.servers import DEFAULT_CONNECT_PORT
    serve.add_argument("--port", type=int, default=DEFAULT_CONNECT_PORT,
                       help=f"gRPC port on 127.0.0.1 (default {DEFAULT_CONNECT_PORT})")
    serve.add_argument("--master", default="local[*]",
                       help="the server's Spark master (default: local[*]); a "
                            "spark://HOST:PORT standalone master spreads checks over its workers")
    serve.add_argument("--log", type=Path, default=None,
                       help="the server's log file (default: server.log in a new "
                            "private directory of the temp dir)")
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import tempfile

    from checkers.spark.connect_token import UnsafeTokenDir, token_file
    from checkers.spark.session import java_missing
    from harness.run.bounds import PORT
    from harness.spark.servers import ServiceError, connect_server
    problem = PORT.problem("--port", args.port)
    if problem is not None:
        raise UserError(problem)
    missing = java_missing()
    if missing:
        raise HarnessError(missing)
    # A fresh private directory: a fixed name in the shared temp dir could be a
    # symlink another local user planted, which root's append would follow.
    log = args.log or Path(tempfile.mkdtemp(prefix="faultline-spark-connect-")) / "server.log"
    server = connect_server(log, args.port, args.master)
    print(f"spark: starting a Spark Connect server on 127.0.0.1:{args.port} "
          f"(master {args.master}); log {log}", file=sys.stderr, flush=True)
    try:
        server.start()
        print(f"spark: clients need its token, in {token_file(args.port)} (faultline's own "
              "clients read it there)", file=sys.stderr, flush=True)
        server.wait_ready()
    except UnsafeTokenDir as e:
        server.stop()
        raise UserError(str(e)) from None
    except ServiceError as e:
        server.stop()
        raise HarnessError(str(e)) from None
    print(f"spark: serving; check with `faultline check --remote sc://127.0.0.1:{args.port} ...`"
          " (Ctrl-C stops it)", file=sys.stderr, flush=True)
    assert server.proc is not None   # started above
    try:
        code = server.proc.wait()
    finally:
        server.stop()
    raise HarnessError(f"the Spark Connect server exited with status {code}; its log is {log}")
