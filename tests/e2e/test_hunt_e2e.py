"""The default nemesis end to end: `faultline run` with no --nemesis hunts
(decisions, leader-aimed faults, elections, all in run.json), the correct
build stays valid, and `faultline replay` plays the faults the hunt chose,
with the nodes it chose, without deciding again."""

import json
import os

import pytest
from replay_timing import assert_replayed_in_time

from harness.cli import main
from harness.run.replay import executed_action
from nemesis.base import REPLAYS_LIVE_FAULTS, TRIGGER_FAULTS
from nemesis.compose import COMPOSITIONS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

TIME_LIMIT_S = 30


def timeline(run_dir):
    doc = json.loads((run_dir / "run.json").read_text())
    out = []
    for e in doc["schedule"]:
        value = e["value"] if isinstance(e["value"], dict) else {}
        if e.get("fired") and (e.get("params") or {}).get("trigger") in REPLAYS_LIVE_FAULTS:
            # fast-failover's own steps: a replay arms it again and it plays
            # them out at the replay's own moments, not the recorded times.
            continue
        # A trigger's arming compares by name only: a replay injects a
        # silent one `armed: false`.
        what = (value.get("nodes"), value.get("cut")) if executed_action(e) == "inject" \
            and "decisions" not in value and "armed" not in value \
            and e["fault"] not in TRIGGER_FAULTS else None
        out.append(((e["time"] - doc["schedule_offset_ns"]) / 1e9, e.get("late_s"), e["f"],
                    e["fault"], what))
    return doc, out


def test_default_run_hunts_and_its_replay_plays_the_same_faults(tmp_path, capsys):
    results = tmp_path / "results"
    # 30 s: a 16 s run made one decision on a loaded CI machine (its first
    # move held the rest of the run); about 4 moves fit in 30 s
    # (docs/hunt.md, "Lagging voters and moves that fit").
    code = main(["run", "--db", "raft", "--workload", "register", "--nodes", "3",
                 "--time-limit", str(TIME_LIMIT_S), "--recovery-time", "3", "--seed", "3",
                 "--results", str(results)])
    (original,) = list(results.iterdir())
    capsys.readouterr()
    doc, old = timeline(original)
    verdicts = json.loads((original / "verdicts.json").read_text())
    assert code == 0 and verdicts["valid"] is True, verdicts

    config = doc["config"]
    assert config["nemesis"][0] == "hunt" and set(COMPOSITIONS) <= set(config["nemesis"])
    (hunt,) = [e["value"] for e in doc["schedule"]
               if isinstance(e["value"], dict) and "decisions" in e["value"]]
    decided = [d for d in hunt["decisions"] if "signature" in d]
    assert len(decided) >= 2, hunt
    assert hunt["coverage"] and all(d["move"] in hunt["moves"] for d in hunt["decisions"])
    # Each decision's first fault carries its note, with what was seen before it.
    notes = [e["note"] for e in doc["schedule"] if "hunt" in (e.get("note") or {})]
    assert [n["hunt"] for n in notes] == sorted({n["hunt"] for n in notes})
    assert all("leader" in n["before"] for n in notes)
    # The faults acted on leaders, and leaders changed.
    assert any(d["observed"]["target"] == "leader" for d in decided), decided
    assert verdicts["checkers"]["elections"]["stats"]["elections"] >= 2

    code = main(["replay", str(original), "--yes", "--results", str(tmp_path / "replays")])
    (replayed,) = list((tmp_path / "replays").iterdir())
    new_doc, new = timeline(replayed)
    # Certain: the same faults on the same nodes in the same order.
    assert [e[2:] for e in new] == [e[2:] for e in old]
    assert_replayed_in_time(old, new, TIME_LIMIT_S)
    (replayed_hunt,) = [e["value"] for e in new_doc["schedule"]
                        if isinstance(e["value"], dict) and "decisions" in e["value"]]
    assert replayed_hunt["decisions"] == []      # it decided nothing: it replayed
