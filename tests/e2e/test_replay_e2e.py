"""`faultline replay` end to end: a real run, then its replay executes the same
nemesis events (faults, nodes, order, times) into a new linked run dir."""

import json
import os

import pytest
from replay_timing import assert_replayed_in_time

from harness.cli import main
from harness.run.replay import executed_action

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

TIME_LIMIT_S = 8


def executed_timeline(run_dir):
    """(seconds since schedule start, late_s, f, fault, nodes/cut) of each executed event."""
    doc = json.loads((run_dir / "run.json").read_text())
    out = []
    for e in doc["schedule"]:
        value = e["value"] if isinstance(e["value"], dict) else {}
        what = (value.get("nodes"), value.get("cut")) if executed_action(e) == "inject" \
            else None
        out.append(((e["time"] - doc["schedule_offset_ns"]) / 1e9, e.get("late_s"), e["f"],
                    e["fault"], what))
    return doc, out


def test_replay_executes_the_original_schedule(tmp_path, capsys):
    results = tmp_path / "results"
    main(["run", "--db", "raft", "--workload", "register", "--nemesis", "partition,kill,pause",
          "--nodes", "3", "--concurrency", "3", "--rate", "50", "--time-limit", str(TIME_LIMIT_S),
          "--nemesis-interval", "1", "--recovery-time", "2", "--seed", "42",
          "--results", str(results)])
    (original,) = list(results.iterdir())
    capsys.readouterr()

    code = main(["replay", str(original), "--yes", "--results", str(tmp_path / "replays")])
    out = capsys.readouterr().out
    (replayed,) = list((tmp_path / "replays").iterdir())

    old_doc, old = executed_timeline(original)
    new_doc, new = executed_timeline(replayed)
    assert len(old) >= 4, old                     # the seed gives a real schedule
    assert [e[2:] for e in new] == [e[2:] for e in old]
    assert_replayed_in_time(old, new, TIME_LIMIT_S)

    assert new_doc["replay_of"] == {"run_id": original.name, "run_dir": str(original.resolve())}
    assert new_doc["config"]["seed"] == 42 and new_doc["status"] == "complete"
    verdicts = json.loads((replayed / "verdicts.json").read_text())
    assert code == {True: 0, False: 1, "unknown": 2}[verdicts["valid"]]
    assert "original:" in out and "replay:" in out
    assert ("-> reproduced" in out) == (json.loads((original / "verdicts.json").read_text())
                                         ["valid"] == verdicts["valid"])
