"""How often a saved run's failure comes back: N replays of it, each in its
own worker process (a run owns namespaces and signal handlers), compared with
the original's verdict and anomaly kinds, and the rate stored beside it.

A replay reproduces the original when its overall verdict is the same and its
invalid checkers name the same anomaly kinds ("linearizability:nonlinearizable",
"elle:G1c", ...): a replay that fails for another reason is a different bug.
The rate lives in the original run dir's reproduction.json, which `gate`
reads to call a failure solid (every replay reproduced it) or flaky.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.rundir import RUN_JSON, VERDICTS_JSON, load_json

REPRODUCTION_JSON = "reproduction.json"
REPLAYS_DIR = "replays"      # the workers' specs, outcomes and logs, in the original run dir
SOLID, FLAKY, NOT_REPRODUCED = "solid", "flaky", "not reproduced"
WORDS = {True: "valid", False: "invalid", "unknown": "unknown", None: "unchecked"}

Say = Callable[[str], None]


def anomaly_kinds(document: dict[str, Any] | None) -> list[str]:
    """Pure: "checker:type" of every anomaly of every invalid checker, sorted, once each."""
    kinds: set[str] = set()
    for name, v in ((document or {}).get("checkers") or {}).items():
        if isinstance(v, dict) and v.get("valid") is False:
            kinds.update(f"{name}:{a.get('type')}" for a in v.get("anomalies") or ()
                         if isinstance(a, dict))
    return sorted(kinds)


def same_failure(original: dict[str, Any] | None, replay: dict[str, Any] | None) -> bool:
    """Pure: the replay came back with the original's verdict and anomaly kinds."""
    if original is None or replay is None:
        return False
    return original.get("valid") == replay.get("valid") and \
        anomaly_kinds(original) == anomaly_kinds(replay)


def shows_failure(original: dict[str, Any] | None, replay: dict[str, Any] | None) -> bool:
    """Pure: the replay is invalid with every anomaly kind the original had
    (and perhaps more): looser than `same_failure`, for schedule shrinking,
    where a smaller schedule need only keep the bug showing."""
    if original is None or replay is None or replay.get("valid") is not False:
        return False
    kinds = anomaly_kinds(original)
    return bool(kinds) and set(kinds) <= set(anomaly_kinds(replay))


def rate_document(run_dir: str, original: dict[str, Any] | None,
                  replays: list[dict[str, Any]], when: str) -> dict[str, Any]:
    """Pure: the stored result. Each replay is {"run_dir", "verdicts" (or None),
    "error" (or None)}; a replay that did not finish reproduced nothing."""
    rows = []
    for r in replays:
        doc = r.get("verdicts")
        rows.append({"run_dir": r.get("run_dir"),
                     "verdict": WORDS.get((doc or {}).get("valid"), "unknown") if doc
                     else "error",
                     "anomaly_kinds": anomaly_kinds(doc),
                     "same_verdict": doc is not None and original is not None
                     and doc.get("valid") == original.get("valid"),
                     "reproduced": same_failure(original, doc),
                     "error": r.get("error")})
    k = sum(1 for r in rows if r["reproduced"] is True)
    return {"run_dir": run_dir, "date": when,
            "original": {"verdict": WORDS.get((original or {}).get("valid"), "unchecked"),
                         "anomaly_kinds": anomaly_kinds(original)},
            "count": len(rows), "reproduced": k,
            "same_verdict": sum(r["same_verdict"] for r in rows),
            "label": label(k, len(rows)), "replays": rows}


def label(reproduced: int, count: int) -> str:
    """Pure: solid when every replay reproduced the failure, flaky when some did."""
    if count and reproduced == count:
        return SOLID
    return FLAKY if reproduced else NOT_REPRODUCED


def rate_line(doc: dict[str, Any]) -> str:
    """Pure: "reproduced K of N (solid)", and the looser same-verdict count when it differs."""
    line = f"reproduced {doc['reproduced']} of {doc['count']} ({doc['label']})"
    if doc.get("same_verdict", doc["reproduced"]) != doc["reproduced"]:
        line += (f"; the same verdict {doc['same_verdict']} of {doc['count']} (some with "
                 "other anomaly kinds)")
    return line


def report_lines(doc: dict[str, Any]) -> list[str]:
    o = doc["original"]
    lines = [f"original: {o['verdict'].upper()} {', '.join(o['anomaly_kinds']) or ''}".rstrip()]
    for i, r in enumerate(doc["replays"], 1):
        mark = "reproduced" if r["reproduced"] else "NOT reproduced"
        kinds = ", ".join(r["anomaly_kinds"])
        err = f" ({r['error']})" if r.get("error") else ""
        lines.append(f"  replay {i}: {r['verdict'].upper():<8} {mark:<15} "
                     f"{r['run_dir'] or '-'}{' ' + kinds if kinds else ''}{err}")
    lines.append(rate_line(doc))
    return lines


def read_reproduction(run_dir: Path) -> dict[str, Any] | None:
    """The run's stored reproduction rate, or None (never replayed, or unreadable)."""
    try:
        doc = load_json(run_dir / REPRODUCTION_JSON)
    except Exception:  # absent or damaged: the run simply has no rate
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("count"), int) \
        and isinstance(doc.get("reproduced"), int)
    return doc if ok else None


def _verdicts(run_dir: str | None) -> dict[str, Any] | None:
    if not run_dir:
        return None
    try:
        return load_json(Path(run_dir) / VERDICTS_JSON)
    except Exception:  # the replay never got checked: it reproduced nothing
        return None


def replay_many(run_dir: Path, results: Path, count: int, parallel: int,
                say: Say, live_triggers: bool = False) -> dict[str, Any]:
    """Replay `run_dir` `count` times, `parallel` at once, each in a worker
    process; store and return the rate document."""
    import json

    from harness.run.replay import old_verdict, replay_config
    run = load_json(run_dir / RUN_JSON)
    replays = run_replays(run_dir, replay_config(run, live_triggers).to_json(), results,
                          count, parallel, say)
    doc = rate_document(str(run_dir.resolve()), old_verdict(run_dir), replays,
                        datetime.now(UTC).isoformat(timespec="seconds"))
    doc["live_triggers"] = live_triggers
    (run_dir / REPRODUCTION_JSON).write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def run_replays(run_dir: Path, config: dict[str, Any], results: Path, count: int,
                parallel: int, say: Say, extra: dict[str, Any] | None = None
                ) -> list[dict[str, Any]]:
    """`count` runs of `config` (a replay of `run_dir`, perhaps with its
    schedule changed), `parallel` at once, each in a worker process whose
    run.json links back to `run_dir`. Each: {"run_dir", "verdicts", "error"}."""
    import json

    from nodes.child_python import module_argv
    run = load_json(run_dir / RUN_JSON)
    work = run_dir / REPLAYS_DIR
    work.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%f")
    link = {"run_id": run.get("run_id", run_dir.name), "run_dir": str(run_dir.resolve())}
    done = [0]
    lock = threading.Lock()

    def one(i: int) -> dict[str, Any]:
        spec, outcome = work / f"{stamp}-{i}.spec.json", work / f"{stamp}-{i}.outcome.json"
        spec.write_text(json.dumps({"config": config, "results": str(results.resolve()),
                                    "outcome": str(outcome),
                                    "extra_doc": {"replay_of": link,
                                                  "replay_batch": {"of": count, "index": i,
                                                                   "started": stamp},
                                                  **(extra or {})}}))
        say(f"replay {i} of {count} started")
        with open(work / f"{stamp}-{i}.log", "w") as log:
            code = subprocess.run(module_argv("harness.campaign.worker", str(spec)),
                                  stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, check=False).returncode
        try:
            out = load_json(outcome)
        except Exception:
            out = {"run_dir": None, "error": f"the worker exited {code} and left no outcome "
                                             f"(see {work / f'{stamp}-{i}.log'})"}
        verdicts = _verdicts(out.get("run_dir"))
        with lock:
            done[0] += 1
            say(f"replay {i} of {count} ended ({done[0]}/{count} done): "
                f"{WORDS.get((verdicts or {}).get('valid'), 'error')} -> "
                f"{out.get('run_dir') or 'no run dir'}")
        return {"run_dir": out.get("run_dir"), "verdicts": verdicts, "error": out.get("error")}

    pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="replay")
    try:
        replays = list(pool.map(one, range(1, count + 1)))
    except BaseException:
        # Ctrl-C reaches the workers too (same process group): let them tear
        # their runs down, start no more, and store no rate of a cut batch.
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return replays
