"""A real failing run (the leader-ack-as-quorum bug switch with its designed
fault; calibration caught it by linearizability 10/10, so its history shrinks,
where commit-dirty's 200 ms fsyncs leave linearizability a read of the loss in
9 of 14 runs only): `replay --count 2 --parallel 2` measures how often it comes back, links the
replays and stores the rate gate reads; `shrink` cuts its history to a small
run dir that `check-lin` calls invalid on its own."""

import json
import os
import re

import pytest

from harness.cli import main
from nodes.raft.bugs import CALIBRATION, LEADER_ACK_AS_QUORUM

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


# The calibration's run length (bench/detection.py's default): at 15 s seed 1
# armed the trigger twice, for a second each, early, and on a loaded CI
# machine the leader acked too few writes in those seconds for it to fire.
CALIBRATED_TIME_LIMIT_S = "30"


def test_a_bug_switch_run_replays_with_a_rate_and_shrinks(tmp_path, capsys):
    plan = CALIBRATION[LEADER_ACK_AS_QUORUM]
    results = tmp_path / "results"
    code = main(["run", "--db", "raft", "--workload", "register", "--nodes", "3",
                 "--nemesis", ",".join(plan["nemesis"]),
                 "--nemesis-interval", str(plan["nemesis_interval"]), "--rate", "200",
                 "--time-limit", CALIBRATED_TIME_LIMIT_S, "--seed", "1",
                 "--bug", LEADER_ACK_AS_QUORUM, "--results", str(results)])
    (original,) = list(results.iterdir())
    assert code == 1, "the switch's designed fault caught it 10/10 in calibration"
    capsys.readouterr()

    code = main(["replay", str(original), "--count", "2", "--parallel", "2", "--yes",
                 "--results", str(tmp_path / "replays")])
    out = capsys.readouterr().out
    rate = json.loads((original / "reproduction.json").read_text())
    k = rate["reproduced"]
    assert rate["count"] == 2 and f"reproduced {k} of 2" in out
    assert code == (1 if k else 0)
    replays = sorted((tmp_path / "replays").iterdir())
    assert sorted(r["run_dir"] for r in rate["replays"]) == [str(p.resolve()) for p in replays]
    for p in replays:
        doc = json.loads((p / "run.json").read_text())
        assert doc["replay_of"]["run_dir"] == str(original.resolve())
        assert doc["replay_batch"]["of"] == 2
    assert main(["gate", str(original)]) == 1
    assert re.search(rf"reproduced {k} of 2 \((solid|flaky|not reproduced)\)",
                     capsys.readouterr().out)

    verdicts = json.loads((original / "verdicts.json").read_text())["checkers"]
    if verdicts.get("linearizability", {}).get("valid") is not False:
        # Caught only by checkers of the nodes or the whole run (divergence,
        # durability's log): no history of its own to shrink, said, not guessed.
        assert main(["shrink", str(original)]) == 254
        err = capsys.readouterr().err
        flagged = [n for n, v in verdicts.items() if v.get("valid") is False]
        assert "judge the nodes or the whole run" in err and all(n in err for n in flagged)
        pytest.skip("this seed's run was caught, but not by linearizability: nothing to shrink")
    assert main(["shrink", str(original)]) == 1
    shrunk = json.loads((original / "shrunk" / "shrink.json").read_text())
    assert shrunk["checker"] == "linearizability"
    assert shrunk["ops_after"] <= shrunk["ops_before"] // 10
    assert (original / "shrunk" / "linearizability.html").is_file()
    capsys.readouterr()
    assert main(["check-lin", str(original / "shrunk" / "history.msgpack")]) == 1

    # The schedule's skeleton on real processes: one replay a candidate, a
    # budget of 3 replays; the same command goes on from what it stored.
    code = main(["shrink", str(original), "--schedule", "--replays", "1", "--budget", "3",
                 "--yes", "--results", str(tmp_path / "schedule")])
    state = json.loads((original / "schedule-shrink.json").read_text())
    first = dict(state["tried"])
    assert 1 <= len(first) <= 3 and all(t["count"] == 1 for t in first.values())
    assert code in (1, 2) and "result" in state
    whole = next(iter(first.values()))
    assert len(whole["kept"]) == len(state["episodes"])      # the full schedule comes first
    if code == 1:
        r = state["result"]
        assert r["faults_after"] <= r["faults_before"] and r["reproduced"] >= 1
        assert (tmp_path / "schedule").is_dir()
    before = len(list((tmp_path / "schedule").iterdir()))
    main(["shrink", str(original), "--schedule", "--replays", "1", "--budget", "3", "--yes",
          "--results", str(tmp_path / "schedule")])
    again = json.loads((original / "schedule-shrink.json").read_text())["tried"]
    assert {k: v for k, v in again.items() if k in first} == first    # never re-run
    assert len(list((tmp_path / "schedule").iterdir())) - before == len(again) - len(first)
