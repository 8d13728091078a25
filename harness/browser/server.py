"""The results browser's HTTP server: loopback only, GET only, and no file
outside a run dir of the results dir it was given."""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from harness.browser import catalog, diff, pages, trend
from harness.results.store import RUN_ID, list_runs, summarize_run

LOOPBACK = "127.0.0.1"
# What a run dir may hand out, by suffix: anything else (a node's data file, a
# socket) is not the browser's to serve.
SERVED = {".html": "text/html; charset=utf-8", ".json": "application/json",
          ".svg": "image/svg+xml", ".png": "image/png", ".txt": "text/plain; charset=utf-8",
          ".log": "text/plain; charset=utf-8", ".jsonl": "text/plain; charset=utf-8",
          ".msgpack": "application/octet-stream", ".parquet": "application/octet-stream"}


def inside(root: Path, run_id: str, relative: str) -> Path | None:
    """The regular file `relative` names in run dir `run_id` of `root`, or None
    when it is not one: a bad run id, `..`, a symlink leading out, a suffix not
    served."""
    if not RUN_ID.fullmatch(run_id) or "\x00" in relative:
        return None
    base = (root / run_id).resolve()
    try:
        target = (base / relative).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target if target.suffix in SERVED else None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class Browser:
    """What each path shows, as (status, content type, body)."""

    def __init__(self, results: Path) -> None:
        self.results = results.resolve()
        self.nights = trend.NightCache()

    def get(self, target: str) -> tuple[int, str, bytes]:
        url = urlsplit(target)
        path = unquote(url.path)
        params = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if path == "/":
            return self._html(self.index(params))
        if path.startswith("/campaign/"):
            return self.campaign(path.removeprefix("/campaign/"))
        if path == "/diff":
            return self.diff(params.get("a", ""), params.get("b", ""))
        if path.startswith("/run/"):
            run_id, _, rel = path.removeprefix("/run/").partition("/")
            file = inside(self.results, run_id, rel or "report.html")
            if file is None:
                return self._missing("no such file in a run dir of this results dir")
            return HTTPStatus.OK, SERVED[file.suffix], file.read_bytes()
        return self._missing("no such page")

    def index(self, params: dict[str, str]) -> str:
        runs = list_runs(self.results)
        filters = {k: params.get(k, "") for k in catalog.FILTERS}
        return pages.index_page(catalog.read_campaigns(self.results),
                                catalog.filter_runs(runs, filters), filters,
                                catalog.choices(runs), len(runs))

    def campaign(self, campaign_id: str) -> tuple[int, str, bytes]:
        campaigns = catalog.read_campaigns(self.results)
        found = [c for c in campaigns if c.id == campaign_id]
        if not found:
            return self._missing("no such campaign")
        c = found[0]
        same_name = sorted((x for x in campaigns if x.name == c.name), key=lambda x: x.created)
        nights = [n for x in same_name if (n := self.nights.night(self.results, x.id))]
        # Only this campaign's runs are read, not every run of the results dir.
        ids = [e["run_id"] for e in c.entries if isinstance(e.get("run_id"), str)
               and RUN_ID.fullmatch(e["run_id"]) and (self.results / e["run_id"]).is_dir()]
        runs = {i: summarize_run(self.results / i) for i in ids}
        return self._html(pages.campaign_page(c, runs, nights))

    def diff(self, a: str, b: str) -> tuple[int, str, bytes]:
        if not (RUN_ID.fullmatch(a) and RUN_ID.fullmatch(b)):
            return self._missing("pick two runs (a and b) to compare")
        ra, rb = (_read_json(self.results / x / "run.json") for x in (a, b))
        if ra is None or rb is None:
            return self._missing("no such run")
        va, vb = (_read_json(self.results / x / "verdicts.json") for x in (a, b))
        return self._html(pages.diff_page(a, b, diff.config_diff(ra, rb),
                                          diff.schedule_diff(ra, rb), diff.verdict_diff(va, vb)))

    @staticmethod
    def _html(text: str) -> tuple[int, str, bytes]:
        return HTTPStatus.OK, SERVED[".html"], text.encode()

    @staticmethod
    def _missing(why: str) -> tuple[int, str, bytes]:
        return HTTPStatus.NOT_FOUND, SERVED[".html"], pages.page("not found", f"<p>{why}</p>") \
            .encode()


def handler(browser: Browser, port: int) -> type[BaseHTTPRequestHandler]:
    # Only names of this server: a page elsewhere that rebinds its own name to
    # 127.0.0.1 must not read the results through the user's browser.
    hosts = {f"{LOOPBACK}:{port}", f"localhost:{port}"}

    class Handler(BaseHTTPRequestHandler):
        server_version = "faultline"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.headers.get("Host") not in hosts:
                self._send(HTTPStatus.MISDIRECTED_REQUEST, SERVED[".txt"],
                           b"this server answers to 127.0.0.1 and localhost only\n")
                return
            status, kind, body = browser.get(self.path)
            self._send(status, kind, body)

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass   # a line per request would drown the one that says where it serves

    return Handler


class Server:
    """A running browser on 127.0.0.1 (port 0: any free one)."""

    def __init__(self, results: Path, port: int = 0) -> None:
        browser = Browser(results)
        self.httpd = ThreadingHTTPServer((LOOPBACK, port), handler(browser, 0))
        self.port = self.httpd.server_address[1]
        self.httpd.RequestHandlerClass = handler(browser, self.port)
        self.url = f"http://{LOOPBACK}:{self.port}/"
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> Server:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

