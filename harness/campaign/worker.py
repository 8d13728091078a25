"""One campaign run in its own process: `python -m harness.campaign.worker SPEC.json`.

A process per run because a run installs signal handlers (main thread only)
and owns namespaces and children: a crash, or K runs at once, stays contained.
The spec names the config, the results dir, fields to add to run.json and
where to write the outcome; the outcome is written whatever happens, so the
campaign learns the run dir even of a run that failed. A provisional outcome
naming the run dir is written as soon as it exists: a worker killed outright
still leaves its run findable, not lost. The spec's `lock_fd` is the run's
lock (`harness.campaign.locks`), inherited and held until this process exits.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from harness.campaign.store import read_json, write_json
from harness.run.config import RunConfig
from harness.run.errors import EXIT_BAD_INPUT, EXIT_HARNESS_ERROR

VERDICT_WORDS = {True: "valid", False: "invalid", "unknown": "unknown"}


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    from harness.run.errors import UserError
    from harness.run.lifecycle import HARNESS_ERROR, Run
    started = time.monotonic()
    outcome: dict[str, Any] = {"run_dir": None, "exit_code": HARNESS_ERROR, "verdict": None,
                               "error": None}
    run = None

    def provisional(run_dir: Path) -> None:
        write_json(Path(spec["outcome"]), {
            **outcome, "run_dir": str(run_dir.resolve()), "provisional": True,
            "error": "the run's worker died before the run ended"})

    try:
        run = Run(RunConfig.from_json(spec["config"]), Path(spec["results"]), sys.stderr,
                  spec.get("extra_doc"), on_run_dir=provisional)
        result = run.execute()
        outcome["exit_code"] = result.exit_code
        outcome["verdict"] = VERDICT_WORDS.get((result.verdicts or {}).get("valid"), "unknown")
    except UserError as e:
        outcome["error"] = str(e)
    except BaseException as e:  # a crashed run is an entry with an error, not a lost entry
        outcome["error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    finally:
        if run is not None and run.run_dir is not None:
            outcome["run_dir"] = str(run.run_dir.resolve())
        outcome["seconds"] = round(time.monotonic() - started, 1)
        write_json(Path(spec["outcome"]), outcome)
    return outcome


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m harness.campaign.worker SPEC.json", file=sys.stderr)
        return EXIT_BAD_INPUT
    spec = read_json(Path(argv[0]))
    if spec.get("lock_fd") is not None:
        # Held by this process alone: a node or tool it starts must not keep
        # the run "alive" after this process is gone.
        os.set_inheritable(spec["lock_fd"], False)
    outcome = run_spec(spec)
    print(json.dumps(outcome), file=sys.stderr)
    return 0 if outcome["error"] is None else EXIT_HARNESS_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
