"""What detection benches share: run one `faultline run` in a subprocess and
read its verdicts, and count catches and false positives over many runs.

A run's exit status says what it found (0 valid, 1 invalid, 2 unknown); any
other (255, a crash) is a harness error: neither caught nor a false positive.
Used by bench/detection.py (bug switches) and bench/hunt.py (unplanted bugs).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

JUDGED = (0, 1, 2)


@dataclass
class Outcome:
    group: str                  # a bug's name, or "correct"
    label: str
    exit_code: int
    invalid_checkers: list[str] = field(default_factory=list)
    unknown_checkers: list[str] = field(default_factory=list)
    run_dir: str | None = None
    seconds: float = 0.0

    @property
    def judged(self) -> bool:
        return self.exit_code in JUDGED


def copy_first_env(tree: Path) -> dict[str, str]:
    """The environment for a run from `tree`: its PYTHONPATH starts with `tree`.
    The run's Python children start with `-P` (nodes.child_python), which keeps
    the working directory off their path, so without this a node run from a
    scratch copy would import the editable install's unpatched code."""
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    return env


def run_faultline(group: str, label: str, run_args: list[str], run_root: Path,
                  cwd: Path) -> Outcome:
    """`python -m harness run ARGS --results RUN_ROOT` from `cwd` (the repo,
    or a scratch copy of it); its output in RUN_ROOT/output.log."""
    run_root.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "harness", "run", *run_args, "--results", str(run_root)]
    started = time.monotonic()
    with open(run_root / "output.log", "wb") as log:
        code = subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                              env=copy_first_env(cwd), check=False).returncode
    outcome = Outcome(group, label, code, seconds=round(time.monotonic() - started, 1))
    dirs = sorted(d for d in run_root.iterdir() if (d / "run.json").exists())
    if dirs:
        outcome.run_dir = str(dirs[-1])
        verdicts = dirs[-1] / "verdicts.json"
        if verdicts.exists():
            doc = json.loads(verdicts.read_text())
            for name, v in (doc.get("checkers") or {}).items():
                if v.get("valid") is False:
                    outcome.invalid_checkers.append(name)
                elif v.get("valid") == "unknown":
                    outcome.unknown_checkers.append(name)
    return outcome


def stress_command() -> list[str] | None:
    """The extra load the benches add with --stress: two CPU hogs (the
    issue's `stress --cpu 2`), stress-ng where installed."""
    for tool in ("stress-ng", "stress"):
        if shutil.which(tool):
            return [tool, "--cpu", "2"]
    return None


@contextmanager
def stressed(command: list[str] | None) -> Iterator[None]:
    """Keep `command` running (in its own session) while the block runs; None: nothing."""
    if command is None:
        yield
        return
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()


def by_checker(outcomes: list[Outcome]) -> str:
    """'checker k, ...' over the invalid verdicts of these runs, most first."""
    counts = Counter(c for o in outcomes for c in o.invalid_checkers)
    return ", ".join(f"{c} {k}" for c, k in counts.most_common())


def caught_line(name: str, mine: list[Outcome]) -> str:
    """'NAME caught K/N by CHECKERS': N counts judged runs only."""
    judged = [o for o in mine if o.judged]
    caught = [o for o in judged if o.exit_code == 1]
    errors = len(mine) - len(judged)
    return (f"{name} caught {len(caught)}/{len(judged)} by {by_checker(caught) or '-'}"
            + (f" ({errors} harness errors)" if errors else ""))


def false_positive_line(correct: list[Outcome]) -> str:
    judged = [o for o in correct if o.judged]
    fps = [o for o in judged if o.exit_code == 1]
    unknown = [o for o in judged if o.exit_code == 2]
    text = f"correct false-positives {len(fps)}/{len(judged)}"
    if fps:
        text += " by " + by_checker(fps)
    if unknown:
        text += f" ({len(unknown)} unknown)"
    errors = len(correct) - len(judged)
    if errors:
        text += f" ({errors} harness errors)"
    return text


def markdown_rows(outcomes: list[Outcome]) -> list[str]:
    rows = ["| run | exit | invalid | unknown | s |", "|---|---|---|---|---|"]
    rows += [f"| {o.label} | {o.exit_code} | {', '.join(o.invalid_checkers) or '-'} | "
             f"{', '.join(o.unknown_checkers) or '-'} | {o.seconds:g} |" for o in outcomes]
    return rows
