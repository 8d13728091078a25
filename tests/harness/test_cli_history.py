import json

import pytest
from shared_corpus import MISSING_REASON, PORCUPINE

from checkers.formats.jepsen import write_edn_history
from checkers.history import Op, read_history
from checkers.verdict_store import write_verdicts
from harness.cli import main
from harness.results.store import create_run_dir
from harness.run.history import HistoryWriter

CORPUS = PORCUPINE


def ops():
    return [
        Op(0, 1_000_000, 0, "invoke", "write", 3, node="n1"),
        Op(1, 2_500_000, "nemesis", "invoke", "kill", {"nodes": ["n1"]}),
        Op(2, 3_000_000, 0, "ok", "write", 3, node="n1"),
        Op(3, 4_000_000, "nemesis", "info", "kill", {"nodes": ["n1"]}),
        Op(4, 5_000_000, 1, "invoke", "read", None, key="k"),
        Op(5, 6_000_000, 1, "info", "read", None, key="k", error="timeout"),
    ]


def write_msgpack(path, history):
    with HistoryWriter(path) as w:
        for op in history:
            w.append(op)
    return path


def one_sentence(err: str) -> bool:
    lines = err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("faultline: ") and "Traceback" not in err


def test_show_msgpack(tmp_path, capsys):
    path = write_msgpack(tmp_path / "history.msgpack", ops())
    assert main(["history", "show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6
    assert lines[0].split() == ["0", "0.001000s", "0", "invoke", "write", "3", "node=n1"]
    assert "nemesis" in lines[1] and '{"nodes":["n1"]}' in lines[1]
    assert lines[5].split()[-2:] == ['key="k"', "error=timeout"]


def test_show_porcupine_uses_line_clock(capsys):
    path = CORPUS / "jepsen" / "etcd_000.log"
    if not path.exists():
        pytest.skip(MISSING_REASON)
    assert main(["history", "show", str(path), "--format", "porcupine-etcd"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 170 and "line 1" in out[0]
    assert any("error=timed-out" in line for line in out)


def test_validate_good_and_bad(tmp_path, capsys):
    good = write_msgpack(tmp_path / "good.msgpack", ops())
    assert main(["history", "validate", str(good)]) == 0
    assert "6 ops, well-formed" in capsys.readouterr().out

    bad = write_msgpack(tmp_path / "bad.msgpack", ops()[:5])
    with open(bad, "ab") as f:
        f.write(b"\x86\xa5ind")  # a torn tail
    assert main(["history", "validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "warning:" in out and "torn tail" in out
    assert "op 4: process 1's invoke never completed" in out
    assert "5 ops, 2 problems" in out


def test_validate_edn(tmp_path, capsys):
    path = tmp_path / "history.edn"
    path.write_text("{:type :ok, :f :read, :process 0, :value 1}\n")
    assert main(["history", "validate", str(path)]) == 1
    assert "no open invoke" in capsys.readouterr().out


def test_convert_edn_to_msgpack(tmp_path, capsys):
    src = tmp_path / "history.edn"
    write_edn_history(ops(), src)
    out = tmp_path / "history.msgpack"
    assert main(["history", "convert", str(src), str(out)]) == 0
    assert "wrote 6 ops" in capsys.readouterr().out
    assert read_history(out).ops == ops()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_convert_independent(tmp_path, capsys):
    src = tmp_path / "history.edn"
    src.write_text("{:type :invoke, :f :write, :value [7 3], :process 0}\n"
                   "{:type :ok, :f :write, :value [7 3], :process 0}\n")
    out = tmp_path / "out.msgpack"
    assert main(["history", "convert", str(src), str(out), "--independent"]) == 0
    converted = read_history(out).ops
    assert [(o.key, o.value) for o in converted] == [(7, 3), (7, 3)]


def test_convert_porcupine_kv(tmp_path, capsys):
    src = CORPUS / "kv" / "c01-ok.txt"
    if not src.exists():
        pytest.skip(MISSING_REASON)
    out = tmp_path / "kv.msgpack"
    assert main(["history", "convert", str(src), str(out)]) == 0
    converted = read_history(out).ops
    assert len(converted) == 116 and converted[0].key is not None


def test_convert_refuses_to_overwrite(tmp_path, capsys):
    src = tmp_path / "history.edn"
    write_edn_history(ops(), src)
    out = tmp_path / "exists.msgpack"
    out.write_bytes(b"precious")
    assert main(["history", "convert", str(src), str(out)]) == 254
    err = capsys.readouterr().err
    assert one_sentence(err) and "refusing to overwrite" in err
    assert out.read_bytes() == b"precious"


@pytest.mark.parametrize("argv_tail, content, fragment", [
    (["show"], b"{:type :invoke, :f :read, :process 0", "never closed"),
    (["show", "--format", "msgpack"], b"\xc1garbage", "corrupt data"),
    (["validate"], b"INFO  jepsen.util - 0\t:invoke\n", "line 1"),
    (["show", "--format", "porcupine-kv"], b"not edn }", "line 1"),
])
def test_bad_input_is_one_sentence(tmp_path, capsys, argv_tail, content, fragment):
    path = tmp_path / "input"
    path.write_bytes(content)
    argv = ["history", argv_tail[0], str(path), *argv_tail[1:]]
    assert main(argv) == 254
    captured = capsys.readouterr()
    assert one_sentence(captured.err) and fragment in captured.err
    assert captured.out == ""


def test_missing_file(tmp_path, capsys):
    assert main(["history", "show", str(tmp_path / "nope")]) == 254
    assert one_sentence(capsys.readouterr().err)


def test_unknown_format_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x00\x01\x02hello")
    assert main(["history", "show", str(path)]) == 254
    err = capsys.readouterr().err
    assert one_sentence(err) and "unknown history format" in err


def test_ls(tmp_path, capsys):
    assert main(["ls", "--results", str(tmp_path)]) == 0
    assert "no runs" in capsys.readouterr().out
    old = create_run_dir(tmp_path)
    (old / "run.json").write_text(json.dumps({
        "start_wall": "2024-06-01T12:00:00+00:00", "status": "complete",
        "config": {"db": "raft", "workload": "kv", "nemesis": ["partition"], "nodes": 5}}))
    (old / "history.msgpack").write_bytes(b"")
    write_verdicts(old, {"valid": False})
    new = create_run_dir(tmp_path)
    (new / "run.json").write_text("{broken")
    assert main(["ls", "--results", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["RUN", "START", "CONFIG", "SEED", "BUGS", "NODE-OPTIONS",
                                "CAMPAIGN", "VERDICT", "NOTES"]
    assert lines[1].startswith(new.name) and "run.json unreadable" in lines[1]
    assert lines[2].startswith(old.name)
    assert "raft/kv/partition 5 nodes" in lines[2] and "invalid" in lines[2]


def test_ls_uses_env(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAULTLINE_RESULTS", str(tmp_path))
    run = create_run_dir(tmp_path)
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    assert run.name in out and "run.json missing" in out


def test_ls_tells_a_buggy_run_from_a_fixed_one(tmp_path, capsys):
    """Issue 28, finding 12: `ls` had no seed, bug switches, node options or
    campaign, so a buggy and a fixed run of one config printed the same line."""
    def run(bugs, options, campaign=None):
        d = create_run_dir(tmp_path)
        (d / "run.json").write_text(json.dumps({
            "status": "complete", "campaign": campaign,
            "config": {"db": "raft", "workload": "register", "nemesis": ["kill"], "nodes": 3,
                       "seed": 7, "bugs": bugs, "node_options": options}}))
        return d
    fixed = run([], {})
    buggy = run(["truncate-to-hw"], {"fsync": False, "election_timeout_ms": 150},
                {"id": "20250101-nightly", "index": 2, "label": "raft kill"})
    assert main(["ls", "--results", str(tmp_path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines[fixed.name].split()[5:9] == ["7", "-", "-", "-"]
    assert lines[buggy.name].split()[5:9] == [
        "7", "truncate-to-hw", "election_timeout_ms=150,fsync=false", "20250101-nightly#3"]
    strip = [line.replace(name, "") for name, line in lines.items()]
    assert strip[0] != strip[1]


def test_history_show_and_validate_accept_a_run_dir(tmp_path, capsys):
    """Issue 28, finding 12: `history show RUN_DIR` said the run dir is not a file."""
    run = create_run_dir(tmp_path)
    with HistoryWriter(run / "history.msgpack") as w:
        w.append(Op(0, 1_000, 0, "invoke", "write", 3))
        w.append(Op(1, 2_000, 0, "ok", "write", 3))
    assert main(["history", "show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "invoke" in out and "ok" in out and "write" in out
    assert main(["history", "validate", str(run)]) == 0
    # A directory with no history is not a run dir: one sentence, 254.
    assert main(["history", "show", str(tmp_path)]) == 254
    err = capsys.readouterr().err
    assert one_sentence(err) and "not a run dir" in err
