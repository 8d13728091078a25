"""The run's watchdog: a small process that outlives the harness and removes
what the harness could not.

The harness holds the write end of a pipe whose read end is the watchdog's
stdin. However the harness ends — SIGKILL included, which runs no `finally` —
the kernel closes that end and the watchdog reads EOF. It then waits for the
harness to be gone and sweeps whatever the run's journal still holds (node
processes, mounts, namespaces, temp dirs), marks a run.json left `running` as
`crashed`, drops the run's index entry and exits. A harness that tore down
normally leaves an empty journal, so the watchdog has nothing to do.

Run as `python -m harness.run.watchdog JOURNAL`; started by `start_watchdog`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from checkers.durable import write_atomic
from harness.run.resources import read_journal, state_dir, sweep_journal
from nodes.child_python import module_argv

# How long to wait for a harness that closed the pipe to finish exiting.
OWNER_EXIT_WAIT_S = 30.0
POLL_S = 0.02


# How long a harness that tore down cleanly waits for its watchdog to see the
# empty journal and exit, so that a finished run leaves no process behind.
RELEASE_WAIT_S = 10.0


class Watchdog:
    """The harness's side of a running watchdog: the pipe's write end, kept
    open (non-inheritable: no child of ours holds it) until teardown is done."""

    def __init__(self, proc: subprocess.Popen[bytes], write_end: int) -> None:
        self._proc = proc
        self._write_end: int | None = write_end

    def release(self, wait_s: float = RELEASE_WAIT_S) -> None:
        """Teardown is done: close the pipe and wait for the watchdog to exit."""
        if self._write_end is None:
            return
        os.close(self._write_end)
        self._write_end = None
        try:
            self._proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            # It is sweeping a journal we left non-empty; it outlives us by design.
            pass


def start_watchdog(journal: Path, index_dir: Path | None = None) -> Watchdog:
    """Start the watchdog of `journal`."""
    read_end, write_end = os.pipe()
    env = dict(os.environ)
    env["FAULTLINE_STATE_DIR"] = str(index_dir or state_dir())
    try:
        proc = subprocess.Popen(module_argv("harness.run.watchdog", str(journal)),
                                stdin=read_end, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                close_fds=True, env=env,
                                cwd=str(Path(__file__).resolve().parent.parent))
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return Watchdog(proc, write_end)


def mark_crashed(run_json: Path, pid: int | None) -> None:
    """A run.json still saying `running` after its harness died says `crashed`."""
    try:
        doc = json.loads(run_json.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(doc, dict) or doc.get("status") != "running":
        return
    doc["status"] = "crashed"
    doc.setdefault("error", f"the harness (pid {pid}) died without tearing down; "
                            "its watchdog swept what the run left")
    write_atomic(run_json, json.dumps(doc, indent=2))


def watch(journal_path: Path) -> int:
    # Our stdin is the pipe: block until the harness is gone (EOF), whatever
    # signal it died of. Terminal signals are not ours (new session).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    journal = read_journal(journal_path)
    if not journal.live:
        return 0
    deadline = time.monotonic() + OWNER_EXIT_WAIT_S
    while journal.owner_alive() and time.monotonic() < deadline:
        time.sleep(POLL_S)
        journal = read_journal(journal_path)
        if not journal.live:
            return 0
    report = sweep_journal(journal_path, force=True)
    mark_crashed(journal_path.parent / "run.json", journal.owner_pid)
    if not report.errors and journal.run_id:
        (state_dir() / f"{journal.run_id}.jsonl").unlink(missing_ok=True)
    return 0 if not report.errors else 1


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m harness.run.watchdog JOURNAL", file=sys.stderr)
        return 254
    return watch(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
