"""Durable epochs: a node's epoch never goes down unless the node said it
lost its state.

- `epoch-regression`: a node's epoch went down without the node reporting a
  `data_loss` in between or in the same incarnation. A restart (`start`) alone
  does not excuse it: the epoch lives in the quorum-state file, which must
  survive restarts. A node re-formatted for another cluster (a `start` line
  with another `cluster_id`) is another node of another quorum: its epochs
  are compared with its own in that cluster only.

The generic elections checker (checkers.elections) judges one leader per
epoch; this rule needs the store's own `data_loss` lines, so it is the
store's (registered in nodes.raft.checkers.registered).
"""

from __future__ import annotations

from typing import Any

from checkers.verdict import Verdict, judged_on_events
from nodes.raft.events import DATA_LOSS, START


def check(events: dict[str, list[dict]]) -> Verdict:
    anomalies = _epoch_regressions(events)
    stats = {
        "nodes": sorted(events),
        "data_loss_events": sum(1 for evs in events.values() for ev in evs
                                if ev.get("event") == DATA_LOSS.name),
    }
    return judged_on_events(anomalies, stats, events)


def _epoch_regressions(events: dict[str, list[dict]]) -> list[dict[str, Any]]:
    anomalies = []
    for node, evs in sorted(events.items()):
        incarnation = 0
        lossy_incarnations = set()
        for ev in evs:
            if ev.get("event") == START.name:
                incarnation += 1
            elif ev.get("event") == DATA_LOSS.name:
                lossy_incarnations.add(incarnation)
        # A node may report its lost quorum state just before or just after
        # its start line: either way that incarnation is excused.
        incarnation = 0
        last_in: dict[Any, dict] = {}     # cluster id -> its last line with an epoch
        cluster = None
        last: dict | None = None
        last_incarnation = 0
        loss_since_last = False
        for ev in evs:
            kind = ev.get("event")
            if kind == START.name:
                incarnation += 1
                if ev.get("cluster_id") != cluster:
                    if last is not None:
                        last_in[cluster] = last
                    cluster = ev.get("cluster_id")
                    last = last_in.get(cluster)
            if kind == DATA_LOSS.name:
                loss_since_last = True
                continue
            if type(ev.get("epoch")) is not int:
                continue
            if last is not None and ev["epoch"] < last["epoch"]:
                excused = loss_since_last or incarnation in lossy_incarnations
                if not excused:
                    anomalies.append({
                        "type": "epoch-regression", "node": node,
                        "from_epoch": last["epoch"], "to_epoch": ev["epoch"],
                        "before": last, "after": ev,
                        "restarted_between": incarnation != last_incarnation,
                    })
            last = ev
            last_incarnation = incarnation
            loss_since_last = False
    return anomalies

