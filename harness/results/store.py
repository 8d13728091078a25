"""The results store: run ids, run directories, and listing past runs.

A run id is `YYYYMMDDTHHMMSS.ffffffZ-<6 hex>` (UTC): ids sort by start time as
plain strings, and the random suffix keeps two harnesses starting in the same
microsecond apart. A run directory is made with an exclusive mkdir, so no run
ever writes into another's directory.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from checkers.history import HistoryError
from checkers.rundir import RUN_JSON, VERDICTS_JSON, load_json

RESULTS_ENV = "FAULTLINE_RESULTS"
DEFAULT_RESULTS_DIR = "results"
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-[0-9a-f]{6}")


class RunIdClock:
    """Hands out run ids that strictly increase within one process."""

    def __init__(self) -> None:
        self._last: datetime | None = None
        self._lock = threading.Lock()

    def next_id(self, now: datetime | None = None) -> str:
        with self._lock:
            t = now or datetime.now(UTC)
            # The wall clock can stand still or step back; ids must still sort
            # by creation order within this process.
            if self._last is not None and t <= self._last:
                t = self._last + timedelta(microseconds=1)
            self._last = t
        return t.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + secrets.token_hex(3)


_CLOCK = RunIdClock()


def results_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The results directory: `explicit`, else $FAULTLINE_RESULTS, else ./results."""
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get(RESULTS_ENV) or DEFAULT_RESULTS_DIR)


def check_results_dir(results: str | os.PathLike[str], what: str = "results dir") -> None:
    """Refuse a results dir (or a run dir: `what`) that is not a writable
    directory (or cannot become one) before anything starts, in one sentence."""
    from harness.run.errors import UserError
    path = Path(results)
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            raise UserError(f"{what} {path}: {probe} is a dangling symlink")
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"{what} {path}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"{what} {path}: {probe} is not writable by this user")
    if probe == path:
        # os.access says yes for root on a read-only mount: try it.
        try:
            fd, tmp = tempfile.mkstemp(dir=path, prefix=".faultline-probe-")
        except OSError as e:
            raise UserError(f"{what} {path} is not writable: {e.strerror}") from None
        os.close(fd)
        os.unlink(tmp)
    else:
        if os.statvfs(probe).f_flag & os.ST_RDONLY:
            raise UserError(f"{what} {path}: {probe} is on a read-only file system")


def new_run_id() -> str:
    """A fresh run id; successive ids from one process strictly increase."""
    return _CLOCK.next_id()


def run_id_time(run_id: str) -> datetime:
    return datetime.strptime(run_id[:23], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)


def create_run_dir(results: str | os.PathLike[str]) -> Path:
    """Make a new, empty run directory under `results` and return it."""
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        path = results / new_run_id()
        try:
            path.mkdir()  # exclusive: fails rather than reuse an existing directory
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{results}: could not create a fresh run directory")


@dataclass
class RunSummary:
    """One line of `faultline ls`; `problems` says what could not be read."""

    run_id: str
    path: Path
    start: str | None = None
    status: str | None = None
    db: str | None = None
    workload: str | None = None
    nemesis: str | None = None
    nodes: int | None = None
    seed: int | None = None
    bugs: list[str] = field(default_factory=list)            # the system's bug switches on
    node_options: dict[str, Any] = field(default_factory=dict)
    campaign: str | None = None                             # "ID#3": the campaign's 3rd run
    # valid / invalid / unknown / none (not checked) / unchecked (verdicts of
    # another history) / broken
    verdict: str = "none"
    problems: list[str] = field(default_factory=list)


def _describe_nemesis(nemesis: Any) -> str | None:
    if nemesis is None:
        return None
    if isinstance(nemesis, str):
        return nemesis
    if isinstance(nemesis, list):
        return ",".join(str(n) for n in nemesis) or "none"
    if isinstance(nemesis, dict):
        faults = nemesis.get("faults")
        if isinstance(faults, list):
            return ",".join(str(n) for n in faults) or "none"
        return ",".join(str(k) for k in nemesis) or "none"
    return str(nemesis)


def _node_count(nodes: Any) -> int | None:
    if isinstance(nodes, bool):
        return None
    if isinstance(nodes, int):
        return nodes
    if isinstance(nodes, (list, dict)):
        return len(nodes)
    return None


def _campaign_of(campaign: Any) -> str | None:
    """"ID#n" for the n-th run of a campaign (run.json's "campaign" field)."""
    if not isinstance(campaign, dict) or campaign.get("id") is None:
        return None
    index = campaign.get("index")
    return f"{campaign['id']}#{index + 1}" if type(index) is int else str(campaign["id"])


def _verdict_word(valid: Any) -> str:
    if valid is True:
        return "valid"
    if valid is False:
        return "invalid"
    if valid == "unknown":
        return "unknown"
    return "broken"


def summarize_run(path: Path) -> RunSummary:
    summary = RunSummary(path.name, path)
    run_json = path / RUN_JSON
    if run_json.exists():
        try:
            run = load_json(run_json)
        except HistoryError as e:
            summary.problems.append(f"run.json unreadable: {e.reason}")
            # A run dir whose run.json is garbage shows no verdict: nothing says
            # the verdicts beside it are of this run.
            summary.verdict = "broken"
            return summary
        else:
            config = c if isinstance(c := run.get("config"), dict) else {}
            summary.start = str(run["start_wall"]) if run.get("start_wall") else None
            from harness.run.state import effective_status
            summary.status = effective_status(run)
            summary.db = str(config["db"]) if config.get("db") is not None else None
            summary.workload = (str(config["workload"]) if config.get("workload") is not None
                                else None)
            summary.nemesis = _describe_nemesis(config.get("nemesis"))
            summary.nodes = _node_count(config.get("nodes", run.get("nodes")))
            seed = config.get("seed")
            summary.seed = seed if type(seed) is int else None
            bugs = config.get("bugs")
            summary.bugs = [str(b) for b in bugs] if isinstance(bugs, list) else []
            options = config.get("node_options")
            summary.node_options = dict(options) if isinstance(options, dict) else {}
            summary.campaign = _campaign_of(run.get("campaign"))
    else:
        summary.problems.append("run.json missing")
    if summary.start is None and RUN_ID.fullmatch(path.name):
        summary.start = run_id_time(path.name).isoformat()
    if (path / VERDICTS_JSON).exists():
        from checkers.verdict_store import read_verdicts
        stored = read_verdicts(path, quick=True)
        if stored.document is None:
            summary.verdict = "broken" if stored.broken else "unchecked"
            summary.problems.append(str(stored.problem))
        else:
            summary.verdict = _verdict_word(stored.document.get("valid"))
            if summary.verdict == "broken":
                summary.problems.append("verdicts.json has no valid/invalid/unknown 'valid'")
    return summary


def list_runs(results: str | os.PathLike[str]) -> list[RunSummary]:
    """Every run under `results`, newest first; unreadable files become `problems`."""
    results = Path(results)
    if not results.is_dir():
        return []
    runs = [p for p in results.iterdir() if RUN_ID.fullmatch(p.name) and p.is_dir()]
    runs.sort(key=lambda p: p.name, reverse=True)
    return [summarize_run(p) for p in runs]
