"""Running a campaign: its runs one after another or K at once, then one Spark
check over all of them, then the verdict table and the summary.

Each run is a `harness.campaign.worker` process (its own namespaces and
subnet world, its own signal handlers); its output goes to
`logs/<index>.log` in the campaign dir, and the campaign's own progress
(run i of N, each verdict as it finishes) to stderr. runs.json is rewritten
after every run, so a killed campaign resumes from what is on disk.

A campaign process holds the campaign's lock (`harness.campaign.locks`), and
each worker its run's lock: a resume of a killed campaign waits for the
workers still running and takes every run they finished into runs.json, so a
run is never lost, never run twice and never counted twice.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.durable import write_atomic
from checkers.spark.session import REMOTE_ENV
from harness.campaign.corpus import add_run, config_with_corpus, hunting
from harness.campaign.estimate import (
    check_seconds,
    duration_text,
    estimate,
    estimate_text,
    run_events,
    )
from harness.campaign.locks import (
    campaign_lock,
    holder_text,
    take_run_lock,
    wait_for_worker,
    worker_alive,
)
from harness.campaign.report import summarize, summary_text
from harness.campaign.spec import Campaign, load_campaign
from harness.campaign.store import (
    CAMPAIGN_JSON,
    RUNS_JSON,
    campaign_dir,
    create_campaign_dir,
    new_entry,
    plan_resume,
    read_json,
    read_run_state,
    redo_reason,
    write_json,
)
from harness.results.gate import load_verdicts
from harness.run.bounds import MAX_PARALLEL
from harness.run.errors import (
    EXIT_HARNESS_ERROR,
    EXIT_INVALID,
    EXIT_UNKNOWN,
    EXIT_VALID,
    HarnessError,
    UserError,
)
from harness.run.resources import process_start_time
from nodes.child_python import module_argv

Say = Callable[[str], None]

# A test hook: the campaign process SIGKILLs itself on reaching the named
# point (one of KILL_POINTS), so a test can kill it at every phase boundary
# and resume (tests/harness/test_campaign_kill.py).
KILL_AT_ENV = "FAULTLINE_TEST_CAMPAIGN_KILL_AT"
KILL_POINTS = ("created", "planned", "reset", "marked", "spawned", "ran", "recorded",
               "checked", "summarized")


def kill_point(name: str) -> None:
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class CampaignResult:
    campaign_dir: Path
    summary: dict[str, Any]
    exit_code: int


def start_campaign(path: Path, results: Path, parallel: int, master: str | None,
                   say: Say) -> CampaignResult:
    campaign = load_campaign(path)
    cdir = create_campaign_dir(results)
    with campaign_lock(cdir):
        kill_point("created")
        doc = {"id": cdir.name, "name": campaign.name, "description": campaign.description,
               "source": str(path.resolve()), "results": str(results.resolve()),
               "parallel": parallel, "created": datetime.now(UTC).isoformat(),
               "source_text": path.read_text()}
        write_json(cdir / CAMPAIGN_JSON, doc)
        entries = [new_entry(r.index, r.label, r.config.to_json()) for r in campaign.runs]
        write_json(cdir / RUNS_JSON, entries)
        kill_point("planned")
        say(f"campaign {campaign.name} ({cdir.name}): {len(entries)} runs, parallel "
            f"{parallel}, {estimate_text(estimate((r.config for r in campaign.runs), parallel))}"
            f"; {cdir}")
        return execute(cdir, doc, entries, [e["index"] for e in entries], results, parallel,
                       master, say)


def resume_campaign(campaign_id: str, results: Path, parallel: int | None,
                    master: str | None, say: Say) -> CampaignResult:
    cdir = campaign_dir(results, campaign_id)
    if not cdir.is_dir():
        raise UserError(f"there is no campaign {campaign_id!r} under {cdir.parent}")
    with campaign_lock(cdir):
        if not (cdir / RUNS_JSON).is_file():
            raise UserError(f"campaign {campaign_id!r} stopped before it planned its runs "
                            "(nothing ran); start it again from its file")
        return _resume_locked(cdir, results, parallel, master, say)


def _resume_locked(cdir: Path, results: Path, parallel: int | None, master: str | None,
                   say: Say) -> CampaignResult:
    doc = read_json(cdir / CAMPAIGN_JSON)
    parallel = parallel or doc.get("parallel", 1)
    if isinstance(parallel, bool) or not isinstance(parallel, int) \
            or not 1 <= parallel <= MAX_PARALLEL:
        raise UserError(f"{cdir / CAMPAIGN_JSON} says parallel {parallel!r}: a resume runs "
                        f"1 to {MAX_PARALLEL} at once (give --parallel)")
    entries = read_json(cdir / RUNS_JSON)
    _wait_for_orphans(cdir, entries, say)
    _collect_orphan_outcomes(cdir, entries)
    todo = plan_resume(entries, {e["index"]: read_run_state(e.get("run_dir"))
                                 for e in entries})
    say(f"campaign {doc['name']} ({cdir.name}): resuming, {len(entries) - len(todo)} of "
        f"{len(entries)} runs complete, {len(todo)} to run")
    for index, reason in sorted(todo.items()):
        e = entries[index]
        if e.get("run_dir"):
            e.setdefault("previous_attempts", []).append(
                {"run_dir": e["run_dir"], "status": e["status"], "error": e.get("error")})
        entries[index] = {**new_entry(index, e["label"], e["config"]),
                          "previous_attempts": e.get("previous_attempts", [])}
        say(f"  run {index + 1} of {len(entries)} again ({reason}): {e['label']}")
    doc["resumed"] = [*doc.get("resumed", []), datetime.now(UTC).isoformat()]
    write_json(cdir / CAMPAIGN_JSON, doc)
    write_json(cdir / RUNS_JSON, entries)
    kill_point("reset")
    return execute(cdir, doc, entries, sorted(todo), results, parallel, master, say)


def _wait_for_orphans(cdir: Path, entries: list[dict[str, Any]], say: Say) -> None:
    """Workers of a killed campaign run on: wait for each, rather than run
    its run again beside it (its run lock says it is alive, whatever its pid)."""
    work = cdir / "work"
    for e in entries:
        i = e["index"]
        if worker_alive(work, i):
            say(f"  run {i + 1} of {len(entries)} is still running in a worker of the killed "
                f"campaign ({holder_text(work / f'{i}.worker.json')}); waiting for it")
            wait_for_worker(work, i)


def _collect_orphan_outcomes(cdir: Path, entries: list[dict[str, Any]]) -> None:
    """A campaign killed while workers ran never recorded their outcomes; the
    workers still wrote them (they finish on their own, or leave a provisional
    outcome naming their run dir if they died too). A run dir already in the
    entry (current or a previous attempt) is never taken twice."""
    for e in entries:
        path = cdir / "work" / f"{e['index']}.outcome.json"
        if not path.is_file():
            continue
        try:
            outcome = read_json(path)
        except (OSError, ValueError):
            continue  # a torn outcome: the run is simply re-done
        run_dir = outcome.get("run_dir")
        known = {e.get("run_dir")} | {a.get("run_dir") for a in e.get("previous_attempts", [])}
        if run_dir is None and e.get("run_dir") is None:
            _apply_outcome(e, outcome)   # it failed before making a run dir: say why
        elif run_dir is not None and run_dir not in known:
            if e.get("run_dir"):
                e.setdefault("previous_attempts", []).append(
                    {"run_dir": e["run_dir"], "status": e["status"], "error": e.get("error")})
            _apply_outcome(e, outcome)


def _apply_outcome(entry: dict[str, Any], outcome: dict[str, Any]) -> None:
    run_dir = outcome.get("run_dir")
    state = read_run_state(run_dir)
    entry.update(run_dir=run_dir, run_id=Path(run_dir).name if run_dir else None,
                 status=state.status or "error", verdict=outcome.get("verdict"),
                 exit_code=outcome.get("exit_code"), error=outcome.get("error"),
                 seconds=outcome.get("seconds"))


def run_one(cdir: Path, campaign_id: str, entry: dict[str, Any], results: Path
            ) -> dict[str, Any]:
    """One run in a worker process; returns its outcome (never raises for a failed run)."""
    index = entry["index"]
    work, logs = cdir / "work", cdir / "logs"
    work.mkdir(exist_ok=True)
    logs.mkdir(exist_ok=True)
    spec_path, outcome_path = work / f"{index}.spec.json", work / f"{index}.outcome.json"
    # Held from before the worker exists until it exits (it inherits the fd),
    # whether or not this process lives that long.
    lock_fd = take_run_lock(work, index)
    try:
        outcome_path.unlink(missing_ok=True)
        (work / f"{index}.worker.json").unlink(missing_ok=True)
        write_json(spec_path, {
            "config": config_with_corpus(cdir, entry["config"]), "results": str(results.resolve()),
            "outcome": str(outcome_path), "lock_fd": lock_fd,
            "extra_doc": {"campaign": {"id": campaign_id, "index": index,
                                       "label": entry["label"]}}})
        with open(logs / f"{index}.log", "w") as log:
            proc = subprocess.Popen(
                module_argv("harness.campaign.worker", str(spec_path)),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(lock_fd,))
        write_json(work / f"{index}.worker.json", {
            "pid": proc.pid, "host": platform.node(),
            "start_time": process_start_time(proc.pid),
            "since": datetime.now(UTC).isoformat(timespec="seconds")})
        kill_point("spawned")
        returncode = proc.wait()
    finally:
        os.close(lock_fd)
    kill_point("ran")
    try:
        outcome = read_json(outcome_path)
        if hunting(entry["config"]):
            outcome["new_states"] = add_run(cdir, outcome.get("run_dir"))
        return outcome
    except (OSError, ValueError):
        return {"run_dir": None, "exit_code": EXIT_HARNESS_ERROR, "verdict": None,
                "error": f"the run's worker exited with status {returncode} and left no "
                         f"outcome (see {logs / f'{index}.log'})"}


def run_entries(cdir: Path, entries: list[dict[str, Any]], todo: list[int], results: Path,
                parallel: int, say: Say) -> None:
    n = len(entries)
    lock = threading.Lock()

    def task(entry: dict[str, Any]) -> dict[str, Any]:
        with lock:
            entry["status"] = "running"
            write_json(cdir / RUNS_JSON, entries)
            kill_point("marked")
        say(f"run {entry['index'] + 1} of {n} started: {entry['label']}")
        return run_one(cdir, cdir.name, entry, results)

    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="campaign-run")
    try:
        futures: dict[Future[dict[str, Any]], dict[str, Any]] = {
            pool.submit(task, entries[i]): entries[i] for i in todo}
        for done, future in enumerate(as_completed(futures), 1):
            entry = futures[future]
            with lock:
                _apply_outcome(entry, future.result())
                write_json(cdir / RUNS_JSON, entries)
                kill_point("recorded")
            word = (entry["verdict"] or "error").upper()
            detail = f": {entry['error']}" if entry["error"] else ""
            say(f"run {entry['index'] + 1} of {n} {word} in {entry['seconds'] or 0:.0f} s "
                f"({done}/{len(todo)} done) {entry['label']} -> "
                f"{entry['run_id'] or 'no run dir'}{detail}")
    except BaseException:
        # Ctrl-C reaches the workers too (same process group); wait for their
        # teardown rather than leave namespaces behind, but start nothing new.
        pool.shutdown(wait=True, cancel_futures=True)
        with lock:
            for e in entries:
                if e["status"] == "running":
                    e["status"] = "interrupted"
            write_json(cdir / RUNS_JSON, entries)
        raise
    pool.shutdown(wait=True)


def _run_json(run_dir: str) -> dict[str, Any]:
    """A complete run's run.json, or {} (the estimate then counts no events)."""
    from checkers.rundir import RUN_JSON, load_json
    try:
        return load_json(Path(run_dir) / RUN_JSON)
    except Exception:  # unreadable: only the estimate of the check's time is poorer
        return {}


def check_all(cdir: Path, entries: list[dict[str, Any]], master: str | None, say: Say
              ) -> dict[int, dict[str, Any] | None]:
    """One Spark job over every complete run; returns each run's verdicts document."""
    from checkers.spark.check_job import check_runs, update_table
    from checkers.spark.session import SparkUnavailable, end_session, spark_session
    from workloads.judging import plan_for
    checkable = [e for e in entries if redo_reason(read_run_state(e.get("run_dir"))) is None]
    if not checkable:
        say("no complete runs to check")
        return {}
    where = master or os.environ.get(REMOTE_ENV) or "local[*]"
    events = sum(run_events(_run_json(e["run_dir"])) for e in checkable)
    say(f"checking {len(checkable)} run(s) with Spark ({where}): {events} history events, "
        f"about {duration_text(check_seconds(len(checkable), events))}")
    try:
        spark = spark_session(master)
    except SparkUnavailable as e:
        # Runs have happened: not a bad argument (254) but a harness that cannot finish.
        raise HarnessError(f"{e} The runs are saved; `faultline campaign --resume {cdir.name}` "
                        f"checks them.") from None
    try:
        rows = check_runs(spark, [Path(e["run_dir"]) for e in checkable], plan_for, say)
    finally:
        end_session(spark)
    update_table(cdir, rows)
    from harness.results.dataset import publish_campaign
    dataset = publish_campaign(cdir.parent.parent, read_json(cdir / CAMPAIGN_JSON), entries, rows)
    say(f"dataset (every campaign, by campaign and date): {dataset}")
    return {e["index"]: load_verdicts(Path(e["run_dir"])) for e in checkable}


def exit_code_of(counts: dict[str, int]) -> int:
    if counts["invalid"]:
        return EXIT_INVALID
    if counts["error"]:
        return EXIT_HARNESS_ERROR
    if counts["unknown"]:
        return EXIT_UNKNOWN
    return EXIT_VALID


def execute(cdir: Path, doc: dict[str, Any], entries: list[dict[str, Any]], todo: list[int],
            results: Path, parallel: int, master: str | None, say: Say) -> CampaignResult:
    run_entries(cdir, entries, todo, results, parallel, say)
    documents = check_all(cdir, entries, master, say)
    kill_point("checked")
    for e in entries:
        document = documents.get(e["index"])
        if document is not None:
            valid = document.get("valid")
            e["verdict"] = "valid" if valid is True else "invalid" if valid is False else "unknown"
        elif e["status"] != "complete":
            e["verdict"] = None
    write_json(cdir / RUNS_JSON, entries)
    summary = summarize(doc, entries, documents)
    write_json(cdir / "summary.json", summary)
    write_atomic(cdir / "summary.txt", summary_text(summary, entries))
    kill_point("summarized")
    doc["finished"] = datetime.now(UTC).isoformat()
    write_json(cdir / CAMPAIGN_JSON, doc)
    return CampaignResult(cdir, summary, exit_code_of(summary["counts"]))


def planned(campaign: Campaign) -> list[str]:
    """The run labels of a campaign, for --dry-run."""
    return [f"{r.index + 1:>4}  {r.label}" for r in campaign.runs]
