"""`faultline serve`: browse the results dir in a web browser (loopback only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.run.errors import UserError

DEFAULT_PORT = 8080


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve", help="browse runs and campaigns in a web browser",
        description="Serve a results browser on 127.0.0.1: campaigns and runs with their "
                    "verdicts (filter by system, workload, fault, bug switch, verdict, date), "
                    "each run's report and counterexample, a campaign's trend over nights "
                    "from the Parquet dataset, and two runs side by side. Ctrl-C stops it "
                    "(exit 0).")
    p.add_argument("--results", metavar="DIR", default=None,
                   help="results directory (default: $FAULTLINE_RESULTS or ./results)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.browser.server import Server
    from harness.results.store import results_dir
    from harness.run.bounds import PORT
    if args.port != 0 and (problem := PORT.problem("--port", args.port)) is not None:
        raise UserError(problem)
    results = Path(results_dir(args.results))
    if not results.is_dir():
        raise UserError(f"no results dir at {results}")
    try:
        server = Server(results, args.port)
    except OSError as e:
        raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror}") from None
    print(f"serve: {results} at {server.url} (Ctrl-C stops it)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0
