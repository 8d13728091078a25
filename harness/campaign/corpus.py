"""A campaign's corpus of hunted states, as a fuzzer keeps its corpus.

Each run of a campaign that hunts (nemesis.hunter) records, per decision,
the coverage signature it reached and whether it was new. After a run, the
decisions that reached a state no earlier run of the campaign had are
appended to `corpus.jsonl` in the campaign dir, each with the run, its seed
and the faults that decision fired (so the schedule that got there is kept
with it). Before a run, the corpus's signatures go into its config
(`hunt_corpus`), where the hunt counts them as reached: it steers toward
states the campaign, not only the run, has not seen. The config records
them, so a replay or a re-check reads what the run knew.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from checkers.faults import HUNT

CORPUS = "corpus.jsonl"
_LOCK = threading.Lock()   # runs of one campaign finish on several threads


def hunting(config: dict[str, Any]) -> bool:
    return HUNT.name in (config.get("nemesis") or [])


def hunt_record(run_doc: dict[str, Any]) -> dict[str, Any] | None:
    """The hunt's heal value in a run.json's executed schedule (its decisions)."""
    for e in run_doc.get("schedule") or []:
        value = e.get("value")
        if e.get("fault") == HUNT.name and isinstance(value, dict) and "decisions" in value:
            return value
    return None


def new_states(run_doc: dict[str, Any], known: list[list[Any]]) -> list[dict[str, Any]]:
    """Pure: the run's decisions that reached a signature not in `known`,
    each with the faults it fired (from its note to the next decision's)."""
    record = hunt_record(run_doc)
    if record is None:
        return []
    fired: dict[int, list[dict[str, Any]]] = {}
    current = None
    for e in run_doc.get("schedule") or []:
        note = e.get("note") or {}
        if isinstance(note.get(HUNT.name), int):
            current = note[HUNT.name]
        if current is not None and e.get("fired"):
            value = e.get("value") if isinstance(e.get("value"), dict) else {}
            fired.setdefault(current, []).append(
                {"f": e.get("f"), "fault": e.get("fault"),
                 **{k: value[k] for k in ("nodes", "cut") if k in value}})
    seen = {tuple(k) for k in known}
    out = []
    for d in record.get("decisions") or []:
        sig = d.get("signature")
        if not isinstance(sig, list) or tuple(sig) in seen:
            continue
        seen.add(tuple(sig))
        out.append({"signature": sig, "move": d.get("move"), "run_id": run_doc.get("run_id"),
                    "seed": (run_doc.get("config") or {}).get("seed"),
                    "decision": d.get("decision"), "faults": fired.get(d.get("decision"), [])})
    return out


def read_corpus(cdir: Path) -> list[dict[str, Any]]:
    path = cdir / CORPUS
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue   # a torn last line (a campaign killed mid-write)
        if isinstance(entry, dict) and isinstance(entry.get("signature"), list):
            out.append(entry)
    return out


def signatures(cdir: Path) -> list[list[Any]]:
    return [e["signature"] for e in read_corpus(cdir)]


def config_with_corpus(cdir: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The run's config, told what the campaign's runs reached so far."""
    if not hunting(config):
        return config
    with _LOCK:
        return {**config, "hunt_corpus": signatures(cdir)}


def add_run(cdir: Path, run_dir: str | None) -> int:
    """Append what a finished run reached first; how many states it added."""
    if not run_dir:
        return 0
    try:
        doc = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return 0
    with _LOCK:
        entries = new_states(doc, signatures(cdir))
        with open(cdir / CORPUS, "a") as f:
            for entry in entries:
                f.write(json.dumps(entry) + "\n")
    return len(entries)
