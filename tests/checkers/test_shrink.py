"""Shrinking an invalid history (checkers.shrink, `faultline shrink`): it keeps
the anomaly and what the anomaly needs, and refuses a history that is valid."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from checkers import elle
from checkers.elle.simulate import serial_history
from checkers.history import Op, pack_op, read_history
from checkers.linearizability import check
from checkers.models import get_model
from checkers.shrink import (
    ShrinkRefused,
    Target,
    ddmin,
    groups,
    lin_provenance,
    shows,
    shrink,
)
from harness.cli import main

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.checkers.test_elle_anomalies import g1c  # noqa: E402

MODEL = "register-kv"


def lin_judge(ops: list[Op]) -> dict:
    return check(ops, model=MODEL, time_limit=30)


def register_history(n: int, stale_at: int | None, seed: int = 1) -> list[Op]:
    """`n` sequential-ish ops by 4 processes on keys 0-2: each write a fresh
    value, each read the key's latest; with `stale_at`, that read of key 0
    returns key 0's first value instead (a stale read)."""
    rng = random.Random(seed)
    ops: list[Op] = []
    latest: dict[int, int] = {}
    first: dict[int, int] = {}
    value = 0
    for i in range(n):
        p, k = i % 4, rng.randrange(3)
        if i == stale_at:
            k = 0
        if i == stale_at or (k in latest and rng.random() < 0.5):
            got = first[k] if i == stale_at else latest[k]
            ops += [Op(len(ops), len(ops), p, "invoke", "read", None, k),
                    Op(len(ops) + 1, len(ops) + 1, p, "ok", "read", got, k)]
        else:
            value += 1
            latest[k] = value
            first.setdefault(k, value)
            ops += [Op(len(ops), len(ops), p, "invoke", "write", value, k),
                    Op(len(ops) + 1, len(ops) + 1, p, "ok", "write", value, k)]
    return ops


def test_a_stale_read_shrinks_to_the_read_and_the_writes_it_needs() -> None:
    ops = register_history(400, stale_at=300)
    v = lin_judge(ops)
    assert v["valid"] is False
    s = shrink(ops, lin_judge, v, provenance=lin_provenance(get_model(MODEL)))
    assert s.verdict["valid"] is False and lin_judge(s.ops)["valid"] is False
    assert s.ops_before == 400 and s.ops_after <= 40          # at most 10% of the ops
    # the stale read itself is still the op that cannot be placed
    stale = [op for op in s.ops if op.f == "read" and op.type == "ok"]
    assert [ops[s.origin[op.index]].index for op in stale][-1] == 601
    a = s.verdict["anomalies"][0]
    assert s.origin[a["op"]["index"]] == s.target.op == 600
    # one key, its first write (what the read returned) and a later one
    assert {op.key for op in s.ops} == {0}
    written = [op.value for op in s.ops if op.f == "write" and op.type == "ok"]
    assert stale[-1].value in written and len(written) >= 2


def test_a_valid_history_is_refused_with_the_reason() -> None:
    ops = register_history(200, stale_at=None)
    assert lin_judge(ops)["valid"] is True
    with pytest.raises(ShrinkRefused, match="the history is valid"):
        shrink(ops, lin_judge)


def test_an_unknown_verdict_is_refused_too() -> None:
    ops = register_history(50, stale_at=None)
    with pytest.raises(ShrinkRefused, match="unknown"):
        shrink(ops, lambda o: {"valid": "unknown", "anomalies": [],
                               "stats": {"reason": "budget"}})


def test_the_write_a_read_returned_is_kept_with_provenance_and_lost_without() -> None:
    # Without provenance the smallest nonlinearizable history is the stale
    # read alone (a read of a value nothing wrote): another reason.
    ops = register_history(120, stale_at=100, seed=3)
    v = lin_judge(ops)
    bare = shrink(ops, lin_judge, v)
    kept = shrink(ops, lin_judge, v, provenance=lin_provenance(get_model(MODEL)))
    read = next(op for op in reversed(kept.ops) if op.f == "read" and op.type == "ok")

    def writes(s):
        return {op.value for op in s.ops if op.f == "write" and op.type == "ok"}
    assert read.value in writes(kept)
    assert read.value not in writes(bare) and bare.ops_after < kept.ops_after


def test_an_elle_cycle_keeps_its_txns() -> None:
    ops = serial_history(300, keys=5, p_stale=0.02, rng=random.Random(0))
    v = elle.check(ops)
    assert v["valid"] is False and v["anomalies"][0]["type"] == "G-single-item"
    s = shrink(ops, elle.check, v)
    assert s.ops_after <= 30 and s.target.kind == "G-single-item"
    cycle = next(a for a in s.verdict["anomalies"] if a["type"] == "G-single-item")
    assert {s.origin[t["invoke"]] for t in cycle["cycle"]} & s.target.cycle
    assert elle.check(s.ops)["valid"] is False


def test_a_cycle_that_needs_every_txn_keeps_every_txn() -> None:
    ops = g1c(False).ops
    s = shrink(ops, elle.check)
    assert s.ops_after == s.ops_before == 2 and s.target.kind == "G1c"


def test_shows_wants_the_same_failing_op_and_no_new_kind() -> None:
    t = Target("nonlinearizable", 0, True, frozenset({"nonlinearizable"}), op=7)
    bad = {"valid": False, "anomalies": [{"type": "nonlinearizable", "key": 0,
                                          "op": {"index": 1}}]}
    assert shows(bad, t, origin=[3, 7])
    assert not shows(bad, t, origin=[3, 9])                    # another op fails
    assert not shows({**bad, "valid": True}, t, origin=[3, 7])
    other = {"valid": False, "anomalies": [*bad["anomalies"], {"type": "G1c"}]}
    assert not shows(other, t, origin=[3, 7])                  # a new kind of anomaly


def test_ddmin_finds_a_one_minimal_subset() -> None:
    need = {3, 17, 42}
    got, hit = ddmin(list(range(60)), lambda xs: need <= set(xs), 10_000, lambda s: None)
    assert sorted(got) == sorted(need) and not hit
    _, hit = ddmin(list(range(60)), lambda xs: need <= set(xs), 3, lambda s: None)
    assert hit


def test_groups_pair_invokes_with_completions() -> None:
    ops = [Op(0, 0, 1, "invoke", "read"), Op(1, 1, 2, "invoke", "write", 1),
           Op(2, 2, "nemesis", "info", "kill"), Op(3, 3, 1, "ok", "read", 1),
           Op(4, 4, 3, "ok", "read", 1)]
    assert groups(ops) == [[0, 3], [1], [4]]


def _write(path: Path, ops: list[Op]) -> Path:
    path.write_bytes(b"".join(pack_op(op) for op in ops))
    return path


def test_cli_writes_a_run_dir_that_checks_invalid_alone(tmp_path: Path, capsys) -> None:
    src = _write(tmp_path / "h.msgpack", register_history(400, stale_at=300))
    out = tmp_path / "small"
    assert main(["shrink", str(src), "--out", str(out)]) == 1
    said = capsys.readouterr().out
    assert "400 ->" in said and "faultline check-lin" in said
    doc = json.loads((out / "shrink.json").read_text())
    assert doc["ops_before"] == 400 and doc["ops_after"] <= 40
    assert len(read_history(out / "history.msgpack").ops) == doc["events_after"]
    assert (out / "linearizability.html").is_file()
    assert json.loads((out / "verdicts.json").read_text())["valid"] is False
    assert main(["check-lin", str(out / "history.msgpack")]) == 1
    # shrinking again replaces the shrunk dir; another dir is never overwritten
    assert main(["shrink", str(src), "--out", str(out)]) == 1
    assert main(["shrink", str(src), "--out", str(tmp_path)]) == 254


def test_cli_refuses_a_valid_history(tmp_path: Path, capsys) -> None:
    src = _write(tmp_path / "h.msgpack", register_history(100, stale_at=None))
    assert main(["shrink", str(src), "--out", str(tmp_path / "o")]) == 254
    assert "the history is valid" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_shrinks_an_elle_history(tmp_path: Path, capsys) -> None:
    ops = serial_history(300, keys=5, p_stale=0.02, rng=random.Random(0))
    src = _write(tmp_path / "h.msgpack", ops)
    out = tmp_path / "small"
    assert main(["shrink", str(src), "--checker", "elle", "--out", str(out)]) == 1
    assert "faultline check-elle" in capsys.readouterr().out
    assert main(["check-elle", str(out / "history.msgpack")]) == 1


def test_a_run_failed_only_by_a_node_checker_is_refused_with_why(tmp_path: Path,
                                                                  capsys) -> None:
    from checkers.verdict_store import write_verdicts
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "run", "status": "complete",
                                              "config": {"workload": "register"}}))
    _write(run / "history.msgpack", register_history(50, stale_at=None))
    write_verdicts(run, {"valid": False, "checkers": {
        "linearizability": {"valid": True, "anomalies": []},
        "divergence": {"valid": False, "anomalies": [{"type": "committed-truncated"}]}}})
    assert main(["shrink", str(run)]) == 254
    assert "its invalid verdicts (divergence) judge the nodes" in capsys.readouterr().err
    assert not (run / "shrunk").exists()
    # the same run, found invalid by linearizability too, shrinks
    _write(run / "history.msgpack", register_history(400, stale_at=300))
    write_verdicts(run, {"valid": False, "checkers": {
        "linearizability": {"valid": False, "anomalies": [{"type": "nonlinearizable"}]},
        "divergence": {"valid": False, "anomalies": [{"type": "committed-truncated"}]}}})
    assert main(["shrink", str(run)]) == 1
    assert json.loads((run / "shrunk" / "shrink.json").read_text())["ops_after"] <= 40
