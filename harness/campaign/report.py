"""A campaign's summary: counts by verdict and every invalid run with its first
anomalies in sentences, as a JSON document and as text. Pure: entries and
verdict documents in."""

from __future__ import annotations

from typing import Any

from checkers.anomaly_text import sentence, sentences

VERDICTS = ("valid", "invalid", "unknown", "error")
# Replays a summary offers per invalid run: enough to tell a solid failure from a flaky one.
REPLAY_COUNT = 5
WORD = {True: "valid", False: "invalid", "unknown": "unknown"}


def entry_verdict(entry: dict[str, Any], document: dict[str, Any] | None) -> str:
    """valid / invalid / unknown from the checked verdicts; error if the run failed."""
    if document is not None and "valid" in document:
        return WORD.get(document["valid"], "unknown")
    if entry.get("status") != "complete":
        return "error"
    return "unknown"


def first_anomaly(document: dict[str, Any]) -> dict[str, Any] | None:
    """The first anomaly of the first invalid checker, named."""
    for name, v in (document.get("checkers") or {}).items():
        if v.get("valid") is False:
            anomalies = v.get("anomalies") or []
            return {"checker": name, "anomaly_count": len(anomalies),
                    "anomaly": anomalies[0] if anomalies else None,
                    "sentences": sentences(anomalies)}
    return None


def replay_command(run_dir: str | None) -> str | None:
    """The command that measures how often an invalid run's failure comes back."""
    if not run_dir:
        return None
    import shlex
    return f"faultline replay {shlex.quote(run_dir)} --count {REPLAY_COUNT} --yes"


def summarize(campaign: dict[str, Any], entries: list[dict[str, Any]],
              documents: dict[int, dict[str, Any] | None]) -> dict[str, Any]:
    counts = dict.fromkeys(VERDICTS, 0)
    invalid, failed = [], []
    for e in entries:
        doc = documents.get(e["index"])
        word = entry_verdict(e, doc)
        counts[word] += 1
        where = {"index": e["index"], "label": e["label"], "run_id": e.get("run_id"),
                 "run_dir": e.get("run_dir")}
        if word == "invalid" and doc is not None:
            invalid.append({**where, **(first_anomaly(doc) or {}),
                            "replay_command": replay_command(e.get("run_dir"))})
        elif word == "error":
            failed.append({**where, "error": e.get("error") or f"status {e.get('status')}"})
    return {"campaign_id": campaign["id"], "name": campaign["name"], "runs": len(entries),
            "counts": counts, "invalid_runs": invalid, "failed_runs": failed}


def summary_text(summary: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    counts = summary["counts"]
    lines = [f"campaign {summary['name']} ({summary['campaign_id']}): {summary['runs']} runs",
             "  " + "  ".join(f"{k} {counts[k]}" for k in VERDICTS), ""]
    for e in entries:
        lines.append(f"  {e['index'] + 1:>4}  {(e.get('verdict') or 'error'):<8} "
                     f"{e['label']:<48} {e.get('run_id') or '-'}")
    if summary["invalid_runs"]:
        lines += ["", "invalid runs (first anomalies; verdicts.json has them all):"]
        for r in summary["invalid_runs"]:
            # A summary written before sentences existed has only the first anomaly.
            said = r.get("sentences") or ([sentence(r["anomaly"])] if r.get("anomaly")
                                          else ["(the checker listed no anomaly)"])
            lines.append(f"  {r['label']}  {r['run_dir']}")
            lines.append(f"    {r.get('checker', '?')} ({r.get('anomaly_count', 0)} anomalies):")
            lines += [f"      - {s}" for s in said]
            command = r.get("replay_command") or replay_command(r.get("run_dir"))
            if command:
                lines.append(f"    how often it comes back: {command}")
    if summary["failed_runs"]:
        lines += ["", "runs that failed (harness error; resume re-runs them):"]
        for r in summary["failed_runs"]:
            lines.append(f"  {r['label']}: {r['error']}")
    return "\n".join(lines) + "\n"
