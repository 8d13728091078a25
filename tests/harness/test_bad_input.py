"""Bounds and bad input (issue 28, findings 8 and 9), each as it was found:
`campaign --dry-run` with `repeats = 100000000` grew past 4 GB and
`time_limit = 1e308` was accepted; `faultline report /` wrote /report.html;
a FIFO named as a history hung `check-lin` and `report`; EDN's `1e400` was
read as infinity, so a write of 1e400 and a read of 2e400 were judged valid.
Each is now 254 (one sentence) before anything is built or written."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from checkers.formats.edn import EdnError, Parser, loads
from checkers.history import HistoryError, Op, pack_op, read_history
from checkers.rundir import not_a_run_dir
from harness.campaign.spec import CampaignError, parse_campaign
from harness.cli import main

REPO = Path(__file__).resolve().parents[2]


def err_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


# -- campaign spec values and run options: bounded, finite ------------------------

def campaign(tmp_path: Path, extra: str, matrix: str = "") -> Path:
    path = tmp_path / "c.toml"
    seeds = "" if "seeds" in matrix else "seeds = [1]\n"
    path.write_text(f'name = "t"\n[defaults]\n{extra}\n[[matrix]]\ndb = ["raft"]\n'
                    f'workload = ["register"]\n{seeds}{matrix}\n')
    return path


@pytest.mark.parametrize("defaults, matrix, words", [
    ("", "repeats = 100000000", "repeats must be at most 10000"),
    ("", "seeds = [" + ", ".join(map(str, range(400))) + "]\nrepeats = 300",
     "the matrix makes 120000 runs"),
    ("time_limit = 1e308", "", "--time-limit must be at most 604800"),
    ("time_limit = inf", "", "--time-limit must be a finite number"),
    ("rate = nan", "", "--rate must be a finite number"),
    ("op_timeout = 1e9", "", "--op-timeout must be at most 86400"),
    ("recovery_time = -inf", "", "--recovery-time must be a finite number"),
    ("", "seeds = [99999999999999999999]", "--seed must be at most"),
    ("thresholds = {gap_s = nan}", "", "--threshold gap_s must be finite"),
    ("lin_options = {time_limit = inf}", "", "--lin-option time_limit must be finite"),
    ("lin_options = {memory_limit_mb = 1e12}", "",
     "linearizability option memory_limit_mb must be at most"),
    ("", "node_options = [{tick_ms = 1e400}]", "--node-option tick_ms must be finite"),
    ("", "node_options = [{tick_ms = 100000000000000000000}]",
     "--node-option tick_ms must be a positive integer up to"),
])
def test_campaign_values_are_bounded_before_anything_is_built(defaults, matrix, words,
                                                               tmp_path, capsys):
    path = campaign(tmp_path, defaults, matrix)
    assert main(["campaign", "--dry-run", str(path), "--results", str(tmp_path / "r")]) == 254
    assert words in err_line(capsys)
    assert not (tmp_path / "r").exists()


def test_a_huge_repeat_count_is_refused_before_the_runs_are_made(monkeypatch):
    import harness.campaign.spec as spec
    made = []
    monkeypatch.setattr(spec, "validate", lambda c: made.append(c) or c)
    doc = {"name": "t", "matrix": [{"db": ["raft"], "workload": ["register"],
                                    "seeds": list(range(1000)), "repeats": 10_000}]}
    with pytest.raises(CampaignError, match="makes 10000000 runs"):
        parse_campaign(doc)
    assert made == []
    # Its twin, at the limit: planned.
    doc["matrix"][0].update(seeds=list(range(10)), repeats=10_000)
    assert len(parse_campaign(doc).runs) == 100_000


@pytest.mark.parametrize("argv, words", [
    (["--time-limit", "1e308"], "--time-limit must be at most"),
    (["--rate", "1e12"], "--rate must be at most"),
    (["--seed", str(2**64)], "--seed must be at most"),
    (["--node-option", "tick_ms=1e400"], "--node-option tick_ms: 1e400 is not a finite"),
    (["--node-option", "tick_ms=NaN"], "--node-option tick_ms: NaN is not a finite"),
    (["--lin-option", "time_limit=Infinity"], "Infinity is not a finite number"),
    (["--threshold", "gap_s=-Infinity"], "-Infinity is not a finite number"),
    (["--client-option", "keys=[1, 1e999]"], "1e999 is not a finite number"),
])
def test_run_options_are_bounded_and_finite(argv, words, tmp_path, capsys):
    results = tmp_path / "results"
    assert main(["run", "--results", str(results), *argv]) == 254
    assert words in err_line(capsys)
    assert not results.exists()


def test_campaign_parallel_is_bounded(tmp_path, capsys):
    path = campaign(tmp_path, "")
    assert main(["campaign", "--dry-run", "--parallel", "100000", str(path)]) == 254
    assert "--parallel must be from 1 to 64" in err_line(capsys)


@pytest.mark.parametrize("argv, words", [
    (["--time-limit", "nan"], "--time-limit must be a finite number"),
    (["--time-limit", "inf"], "--time-limit must be a finite number"),
    (["--memory-limit", "0"], "--memory-limit must be positive"),
    (["--model-option", "initial=1e400"], "1e400 is not a finite number"),
])
def test_check_lin_options_are_bounded(argv, words, tmp_path, capsys):
    path = tmp_path / "h.msgpack"
    path.write_bytes(pack_op(Op(0, 1, 0, "invoke", "read", None)))
    assert main(["check-lin", str(path), *argv]) == 254
    assert words in err_line(capsys)


# -- non-finite numbers in histories ----------------------------------------------

EDN_WRITE_READ = ("{:type :invoke, :f :write, :value 1, :process 0, :index 0}\n"
                  "{:type :ok, :f :write, :value 1, :process 0, :index 1}\n"
                  "{:type :invoke, :f :write, :value 1e400, :process 0, :index 2}\n"
                  "{:type :ok, :f :write, :value 1e400, :process 0, :index 3}\n"
                  "{:type :invoke, :f :read, :value nil, :process 1, :index 4}\n"
                  "{:type :ok, :f :read, :value 2e400, :process 1, :index 5}\n")


def test_write_1e400_read_2e400_is_refused_not_judged_valid(tmp_path, capsys):
    path = tmp_path / "history.edn"
    path.write_text(EDN_WRITE_READ)
    assert main(["check-lin", str(path)]) == 254
    line = err_line(capsys)
    assert "line 3" in line and "1e400 is past a float's range" in line
    # Its twin, finite: judged (a write of 1 then a read of 2 is not linearizable).
    path.write_text(EDN_WRITE_READ.replace("1e400", "1e300").replace("2e400", "2e300"))
    assert main(["check-lin", str(path)]) == 1


@pytest.mark.parametrize("text, offset", [("1e400", 0), ("[1 -1e400]", 3), ("{:a 1E999M}", 4),
                                          ("##Inf", 0), ("[##-Inf]", 1), ("#{##NaN}", 2)])
def test_both_edn_readers_refuse_non_finite_numbers(text, offset):
    for read in (lambda: loads(text), lambda: Parser(text).read_or_discard_slow()):
        with pytest.raises(EdnError) as e:
            read()
        assert e.value.offset == offset
        assert "finite" in str(e.value) or "range" in str(e.value)
    assert loads("[1e300 -2.5]") == [1e300, -2.5]


PLACEHOLDER = 1.25   # stands for a non-finite float msgpack-python will not pack as float 32


def _msgpack_history(path: Path, value: object, single_float: bool = False,
                     padding: int = 0) -> Path:
    ops = [Op(0, 1, 0, "invoke", "write", "x" * padding)]
    if single_float:
        finite = json.loads(json.dumps(value).replace("-Infinity", "1.25")
                            .replace("Infinity", "1.25").replace("NaN", "1.25"))
        body = msgpack.packb({"index": 1, "time": 2, "process": 0, "type": "ok", "f": "write",
                              "value": finite}, use_single_float=True)
        wanted = json.dumps(value)
        as_f32 = b"\xca" + struct.pack(">f", PLACEHOLDER)
        for word in ("-Infinity", "Infinity", "NaN"):
            while word in wanted:
                wanted = wanted.replace(word, "", 1)
                bits = struct.pack(">f", float(word.lower().replace("infinity", "inf")))
                body = body.replace(as_f32, b"\xca" + bits, 1)
    else:
        body = msgpack.packb({"index": 1, "time": 2, "process": 0, "type": "ok", "f": "write",
                              "value": value})
    path.write_bytes(b"".join(pack_op(op) for op in ops) + body)
    return path


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"),
                                   [1, {"k": [float("inf")]}]])
@pytest.mark.parametrize("single_float", [False, True])
def test_msgpack_histories_refuse_non_finite_floats(value, single_float, tmp_path):
    path = _msgpack_history(tmp_path / "h.msgpack", value, single_float)
    with pytest.raises(HistoryError, match="not finite") as e:
        read_history(path)
    assert e.value.index == 1 and e.value.offset > 0
    # Its twin: a finite float reads as itself.
    path = _msgpack_history(tmp_path / "ok.msgpack", [1.5, -2.0], single_float)
    assert read_history(path).ops[1].value[0] == 1.5


@pytest.mark.parametrize("cut", range(0, 12))
def test_a_non_finite_float_across_a_chunk_boundary_is_found(cut, tmp_path, monkeypatch):
    import checkers.history as history
    monkeypatch.setattr(history, "READ_CHUNK", 64)
    first = len(pack_op(Op(0, 1, 0, "invoke", "write", "")))
    # The float's 9 bytes sit across the 64-byte boundary, cut at every place.
    prefix = len(msgpack.packb({"index": 1, "time": 2, "process": 0, "type": "ok",
                                "f": "write", "value": [1.0]})) - 9
    padding = max(0, 64 * 2 - cut - first - prefix - 2)
    path = _msgpack_history(tmp_path / "h.msgpack", [float("inf")], padding=padding)
    with pytest.raises(HistoryError, match="not finite"):
        read_history(path)


def test_check_lin_refuses_a_msgpack_infinity_with_254(tmp_path, capsys):
    path = _msgpack_history(tmp_path / "h.msgpack", float("inf"))
    assert main(["check-lin", str(path)]) == 254
    assert "op 1: a number that is not finite (inf)" in err_line(capsys)


def test_run_json_with_nan_is_not_a_usable_run_dir(tmp_path, capsys):
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "run.json").write_text('{"config": {"time_limit": NaN}}')
    assert main(["report", str(rd)]) == 254
    assert "NaN is not a finite number" in err_line(capsys)


# -- run dirs and regular files ------------------------------------------------------

def test_report_refuses_a_directory_that_is_not_a_run_dir(tmp_path, capsys):
    other = tmp_path / "photos"
    other.mkdir()
    (other / "report.html").write_text("mine")
    assert main(["report", str(other)]) == 254
    assert "is not a run dir (it has neither run.json nor history.msgpack)" in err_line(capsys)
    assert (other / "report.html").read_text() == "mine"
    assert not_a_run_dir("/") is not None   # `faultline report /` wrote /report.html
    # Its twin: a run dir (an imported one: a history alone) gets its report.
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.msgpack").write_bytes(pack_op(Op(0, 1, 0, "invoke", "read", None)))
    assert main(["report", str(run)]) == 0
    assert (run / "report.html").exists()


def test_check_refuses_a_directory_that_is_not_a_run_dir(tmp_path, capsys):
    other = tmp_path / "photos"
    other.mkdir()
    assert main(["check", "--in-process", str(other)]) == 254
    assert "is not a run dir" in err_line(capsys)
    (other / "run.json").mkdir()    # named like one, but a directory
    assert main(["check", "--in-process", str(other)]) == 254
    assert "its run.json is not a regular file" in err_line(capsys)


def _faultline(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a child: a hang (what a FIFO did) fails the test instead of
    hanging the suite."""
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=REPO, text=True,
                          capture_output=True, timeout=timeout)


@pytest.mark.parametrize("command", [["check-lin"], ["check-elle"], ["history", "show"],
                                     ["history", "validate"]])
def test_a_fifo_named_as_a_history_is_refused_not_waited_on(command, tmp_path):
    fifo = tmp_path / "history.msgpack"
    os.mkfifo(fifo)
    done = _faultline(*command, str(fifo))
    assert done.returncode == 254, done.stderr
    assert "not a regular file (a FIFO)" in done.stderr or "is not a file" in done.stderr


def test_report_and_check_of_a_run_dir_with_a_fifo_history(tmp_path):
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "run.json").write_text(json.dumps({"run_id": "r", "config": {}}))
    os.mkfifo(rd / "history.msgpack")
    for argv in (["report", str(rd)], ["check", "--in-process", str(rd)]):
        done = _faultline(*argv)
        assert done.returncode == 254, done.stderr
        assert "history.msgpack is not a regular file" in done.stderr
    assert not (rd / "report.html").exists()


def test_a_symlink_to_a_regular_file_is_still_read(tmp_path):
    real = tmp_path / "real.msgpack"
    real.write_bytes(pack_op(Op(0, 1, 0, "invoke", "read", None)))
    link = tmp_path / "link.msgpack"
    link.symlink_to(real)
    assert len(read_history(link).ops) == 1


def test_a_fifo_named_verdicts_json_is_unreadable_not_waited_on(tmp_path):
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "history.msgpack").write_bytes(pack_op(Op(0, 1, 0, "invoke", "read", None)))
    os.mkfifo(rd / "verdicts.json")
    done = _faultline("report", str(rd))
    assert done.returncode == 0, done.stderr
    assert "verdicts.json is unreadable" in (rd / "report.html").read_text()


def test_spark_serve_port_is_bounded_before_anything_starts(capsys):
    assert main(["spark", "serve", "--port", "80"]) == 254
    assert "--port must be at least 1024" in err_line(capsys)
    assert main(["spark", "serve", "--port", "70000"]) == 254
    assert "--port must be at most 65535" in err_line(capsys)


def test_check_split_from_is_bounded(tmp_path, capsys):
    assert main(["check", "--split-from", "-1", "--results", str(tmp_path)]) == 254
    assert "--split-from must not be negative" in err_line(capsys)


@pytest.mark.parametrize("stored", [100000, 0, "8", 2.5, True])
def test_a_resume_refuses_a_stored_parallel_out_of_range(stored, tmp_path, capsys):
    """campaign.json comes from disk: a resume does not trust its `parallel`."""
    from harness.campaign.runner import resume_campaign
    from harness.campaign.store import CAMPAIGN_JSON, RUNS_JSON, campaign_dir
    from harness.run.errors import UserError
    cdir = campaign_dir(tmp_path, "c1")
    cdir.mkdir(parents=True)
    (cdir / CAMPAIGN_JSON).write_text(json.dumps({"id": "c1", "name": "t", "parallel": stored}))
    (cdir / RUNS_JSON).write_text("[]")
    with pytest.raises(UserError, match="a resume runs 1 to 64 at once"):
        resume_campaign("c1", tmp_path, None, None, lambda s: None)
    # Its twin: --parallel given on the command line stands in for the stored one.
    result = resume_campaign("c1", tmp_path, 2, None, lambda s: None)
    assert result.campaign_dir == cdir and result.summary["runs"] == 0
