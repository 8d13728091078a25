"""One rule for a history with nothing to judge (issue 29): check-lin and
check-elle give the same verdict, unknown, with the same reason, for a
history with no client op that may have happened, and judge one that has;
a history whose ops do not fit the checker's model is 254."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers.history import Op
from checkers.nothing_to_judge import nothing_to_judge
from harness.cli import main
from harness.run.history import HistoryWriter

NEMESIS_ONLY = [Op(0, 1, "nemesis", "info", "start", "cut n1-n2"),
                Op(1, 2, "nemesis", "info", "stop", None)]


def txn(process: int, kind: str, value: list) -> Op:
    return Op(0, 0, process, kind, "txn", value)


def written(path: Path, ops: list[Op]) -> Path:
    with HistoryWriter(path) as w:
        for i, op in enumerate(ops):
            w.append(Op(i, i + 1, op.process, op.type, op.f, op.value))
    return path


ALL_FAILED_REGISTER = [Op(0, 0, 0, "invoke", "write", 1), Op(0, 0, 0, "fail", "write", 1)]
ALL_FAILED_TXNS = [txn(0, "invoke", [["append", "x", 1]]), txn(0, "fail", [["append", "x", 1]])]


def test_nothing_to_judge_without_client_ops_or_with_all_failed():
    assert "no client operations" in nothing_to_judge([])
    assert "no client operations" in nothing_to_judge(NEMESIS_ONLY)
    assert "every one of the 1 client operations failed" in nothing_to_judge(
        NEMESIS_ONLY + ALL_FAILED_REGISTER)


@pytest.mark.parametrize("ops", [
    [Op(0, 0, 0, "invoke", "write", 1), Op(0, 0, 0, "ok", "write", 1)],
    [Op(0, 0, 0, "invoke", "write", 1), Op(0, 0, 0, "info", "write", 1)],
    [Op(0, 0, 0, "invoke", "write", 1)],                         # never completed
    [Op(0, 0, 0, "ok", "write", 1)],                             # a completion alone
    ALL_FAILED_REGISTER + [Op(0, 0, 1, "invoke", "read", None), Op(0, 0, 1, "ok", "read", None)],
], ids=["ok", "info", "open", "completion-alone", "one-of-two-failed"])
def test_something_to_judge_when_a_client_op_may_have_happened(ops):
    assert nothing_to_judge(ops) is None


@pytest.mark.parametrize("command,ops", [
    ("check-lin", NEMESIS_ONLY), ("check-lin", ALL_FAILED_REGISTER),
    ("check-elle", NEMESIS_ONLY), ("check-elle", ALL_FAILED_TXNS),
])
def test_both_checkers_say_unknown_with_the_shared_reason(command, ops, tmp_path, capsys):
    path = written(tmp_path / "h.msgpack", ops)
    assert main([command, str(path)]) == 2
    assert nothing_to_judge(ops) in capsys.readouterr().out


def test_both_checkers_judge_a_history_with_one_op_that_happened(tmp_path, capsys):
    register = written(tmp_path / "r.msgpack", ALL_FAILED_REGISTER + [
        Op(0, 0, 1, "invoke", "write", 2), Op(0, 0, 1, "ok", "write", 2)])
    assert main(["check-lin", str(register)]) == 0
    txns = written(tmp_path / "t.msgpack", ALL_FAILED_TXNS + [
        txn(1, "invoke", [["append", "x", 2]]), txn(1, "ok", [["append", "x", 2]]),
        txn(2, "invoke", [["r", "x", None]]), txn(2, "ok", [["r", "x", [2]]])])
    assert main(["check-elle", str(txns)]) == 0
    assert "nothing to judge" not in capsys.readouterr().out


def test_a_model_the_ops_do_not_fit_is_254(tmp_path, capsys):
    register = written(tmp_path / "r.msgpack", [
        Op(0, 0, 0, "invoke", "write", 1), Op(0, 0, 0, "ok", "write", 1)])
    assert main(["check-lin", "--model", "mutex", str(register)]) == 254
    err = capsys.readouterr().err
    assert "'write'" in err and "mutex" in err
    assert main(["check-elle", str(register)]) == 254
    assert "none a txn" in capsys.readouterr().err
    # The twin: the same history under a model it fits is judged.
    assert main(["check-lin", "--model", "register", str(register)]) == 0
