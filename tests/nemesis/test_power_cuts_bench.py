"""bench/power_cuts.py charges each lost acknowledged write to the first
triggered power cut that ended after its ack."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from checkers.history import NEMESIS, Op, pack_op

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import power_cuts  # noqa: E402


def cut(index: int, start: int, end: int, **after) -> list[Op]:
    value = {"nodes": ["n1", "n2", "n3"], "trigger": "power-cut-after-commit", "after": after}
    return [Op(index, start, NEMESIS, "invoke", "lose-unsynced", value),
            Op(index + 1, end, NEMESIS, "info", "lose-unsynced", {"lost": {}})]


def lost(ack_time: int) -> dict:
    return {"type": "lost-write", "value": 1, "key": "r0",
            "ack": {"index": 0, "process": 1, "type": "ok", "f": "write", "time": ack_time}}


def test_lost_writes_are_charged_to_the_cut_that_ended_after_their_ack(tmp_path: Path) -> None:
    ops = (cut(0, 100, 200, young=True, age_ms=3.0, frozen_after_ms=1.0, dirty_left_ms=46.0)
           + [Op(2, 250, 1, "invoke", "write", 5), Op(3, 260, 1, "ok", "write", 5)]
           + cut(4, 300, 400, young=False, age_ms=70.0, frozen_after_ms=1.0)
           + cut(6, 500, 600, young=True, age_ms=2.0, frozen_after_ms=1.0, dirty_left_ms=47.0))
    (tmp_path / "history.msgpack").write_bytes(b"".join(pack_op(o) for o in ops))
    (tmp_path / "verdicts.json").write_text(json.dumps({"checkers": {"durability": {
        "anomalies": [lost(150), lost(190), lost(450), {"type": "phantom-read"}]}}}))
    (tmp_path / "run.json").write_text("{}")
    found = power_cuts.cuts(tmp_path)
    assert [(c["young"], c["lost_acked"]) for c in found] == [(True, 2), (False, 0), (True, 1)]
    assert found[0]["dirty_left_ms"] == 46.0
    assert power_cuts.run_dirs([tmp_path]) == [tmp_path]
