import json
import re
import threading
from datetime import UTC, datetime

import msgpack
import pytest

from checkers.history import HistoryError, Op
from checkers.rundir import RunDirError, iter_events, load_log_dump, load_run
from checkers.verdict_store import write_verdicts
from harness.results.store import (
    RUN_ID,
    RunIdClock,
    create_run_dir,
    list_runs,
    new_run_id,
    results_dir,
    run_id_time,
)
from harness.run.history import HistoryWriter


def test_run_id_format_and_time():
    clock = RunIdClock()
    rid = clock.next_id(datetime(2030, 1, 1, tzinfo=UTC))
    assert RUN_ID.fullmatch(rid) and rid.startswith("20300101T000000.000000Z-")
    assert run_id_time(rid) == datetime(2030, 1, 1, tzinfo=UTC)
    # a clock that steps back still gives increasing ids
    later = clock.next_id(datetime(2024, 6, 1, 12, 30, 5, 123456, tzinfo=UTC))
    assert later > rid and run_id_time(later) > run_id_time(rid)
    assert re.fullmatch(r"20300101T000000\.000001Z-[0-9a-f]{6}", later)


def test_ids_sort_by_creation_and_never_collide():
    ids: list[str] = []
    lock = threading.Lock()

    def make():
        mine = [new_run_id() for _ in range(2000)]
        assert mine == sorted(mine)
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 8000


def test_create_run_dir_is_exclusive(tmp_path):
    dirs = [create_run_dir(tmp_path / "results") for _ in range(50)]
    assert len(set(dirs)) == 50
    assert all(d.is_dir() and not any(d.iterdir()) for d in dirs)
    assert sorted(dirs) == dirs


def test_results_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("FAULTLINE_RESULTS", raising=False)
    assert str(results_dir()) == "results"
    monkeypatch.setenv("FAULTLINE_RESULTS", str(tmp_path))
    assert results_dir() == tmp_path
    assert results_dir("x") == tmp_path.__class__("x")


def write_run(results, config=None, valid=None, status="complete"):
    d = create_run_dir(results)
    run = {"run_id": d.name, "start_wall": "2024-06-01T12:00:00+00:00", "status": status,
           "config": config or {"db": "raft", "workload": "register",
                                "nemesis": ["partition", "kill"], "nodes": 3}}
    (d / "run.json").write_text(json.dumps(run))
    if valid is not None:
        with HistoryWriter(d / "history.msgpack") as w:
            w.append(Op(0, 1, 0, "invoke", "read"))
        write_verdicts(d, {"valid": valid, "checkers": {}})
    return d


def test_list_runs_newest_first_and_tolerant(tmp_path):
    old = write_run(tmp_path, valid=True)
    mid = write_run(tmp_path, valid=False)
    broken = write_run(tmp_path, valid="unknown")
    (broken / "run.json").write_text("{not json")
    missing = create_run_dir(tmp_path)
    bad_verdict = write_run(tmp_path)
    (bad_verdict / "verdicts.json").write_text("[1]")
    (tmp_path / "README.md").write_text("not a run")
    (tmp_path / "campaign-x").mkdir()

    runs = list_runs(tmp_path)
    assert [r.run_id for r in runs] == [bad_verdict.name, missing.name, broken.name,
                                        mid.name, old.name]
    by_id = {r.run_id: r for r in runs}
    assert (by_id[old.name].db, by_id[old.name].workload, by_id[old.name].nemesis,
            by_id[old.name].nodes, by_id[old.name].verdict) == (
        "raft", "register", "partition,kill", 3, "valid")
    assert by_id[mid.name].verdict == "invalid"
    assert by_id[broken.name].verdict == "broken"   # never the old verdict (finding 5)
    assert by_id[broken.name].problems[0].startswith("run.json unreadable")
    assert by_id[missing.name].problems == ["run.json missing"]
    assert by_id[missing.name].verdict == "none"
    assert by_id[missing.name].start.startswith(missing.name[:4])
    assert by_id[bad_verdict.name].verdict == "broken"
    assert by_id[bad_verdict.name].problems
    # Verdicts of another history: shown as unchecked, saying how to re-check.
    (old / "history.msgpack").write_bytes(b"garbage")
    (stale,) = [r for r in list_runs(tmp_path) if r.run_id == old.name]
    assert stale.verdict == "unchecked" and "re-check with" in stale.problems[0]


def test_a_running_run_whose_harness_died_is_crashed(tmp_path):
    import subprocess
    import sys
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    d = write_run(tmp_path, status="running")
    doc = json.loads((d / "run.json").read_text())
    doc["harness"] = {"pid": gone.pid, "start_time": 1.0}
    (d / "run.json").write_text(json.dumps(doc))
    (r,) = list_runs(tmp_path)
    assert r.status == "crashed"


def test_list_runs_of_missing_dir(tmp_path):
    assert list_runs(tmp_path / "nope") == []


# --- checkers.rundir ----------------------------------------------------------


def make_full_run(tmp_path):
    d = write_run(tmp_path)
    with HistoryWriter(d / "history.msgpack") as w:
        w.append(Op(0, 1, 0, "invoke", "write", 1))
        w.append(Op(0, 2, 0, "ok", "write", 1))
    n1 = d / "nodes" / "n1"
    n1.mkdir(parents=True)
    dump = {"node": "n1", "log_start_offset": 0, "log_end_offset": 1, "high_watermark": 1,
            "epoch": 2, "epochs": [[1, 0]],
            "entries": [{"offset": 0, "epoch": 1, "committed": True, "digest": "ab",
                         "payload": {"op": "put", "key": "k", "value": 1, "rid": 7}}]}
    (n1 / "log.msgpack").write_bytes(msgpack.packb(dump))
    (n1 / "stdout.log").write_text(
        'starting up\n{"t": 5, "node": "n1", "event": "role", "role": "Leader", "epoch": 2}\n'
        '{"t": 6, "node": "n1", "event": "hw", "hw": 1\n'          # torn: ignored
        '[1, 2]\n{"no_event": 1}\n'
        '{"t": 7, "node": "n1", "event": "hw", "hw": 1, "epoch": 2}\n')
    (d / "nodes" / "n2").mkdir()
    return d, dump


def test_load_run(tmp_path):
    d, dump = make_full_run(tmp_path)
    run = load_run(d)
    assert run.run["config"]["db"] == "raft"
    assert [o.type for o in run.history.ops] == ["invoke", "ok"] and run.warnings == []
    assert run.dumps == {"n1": dump}
    assert [e["event"] for e in run.events["n1"]] == ["role", "hw"]
    assert "n2" not in run.events and "n2" not in run.dumps


def test_load_run_torn_history_is_a_warning(tmp_path):
    d, _ = make_full_run(tmp_path)
    with open(d / "history.msgpack", "ab") as f:
        f.write(b"\x85\xa5index")
    run = load_run(d)
    assert len(run.history.ops) == 2 and "torn tail" in run.warnings[0]


@pytest.mark.parametrize("damage", ["run.json", "history", "dump", "dump-list", "nodir"])
def test_load_run_errors_are_history_errors(tmp_path, damage):
    d, _ = make_full_run(tmp_path)
    if damage == "run.json":
        (d / "run.json").write_text("[]")
    elif damage == "history":
        (d / "history.msgpack").unlink()
    elif damage == "dump":
        (d / "nodes" / "n1" / "log.msgpack").write_bytes(b"\xc1\x00")
    elif damage == "dump-list":
        (d / "nodes" / "n1" / "log.msgpack").write_bytes(msgpack.packb({"entries": 5}))
    else:
        d = d / "missing"
    with pytest.raises(HistoryError):
        load_run(d)


def test_huge_dump_claim_is_refused(tmp_path):
    path = tmp_path / "log.msgpack"
    path.write_bytes(b"\xdd\xff\xff\xff\xff")
    with pytest.raises(RunDirError, match="corrupt"):
        load_log_dump(path)


def test_overlong_event_line_is_skipped(tmp_path):
    path = tmp_path / "stdout.log"
    path.write_bytes(b"{" + b"x" * (2 * 1024 * 1024) + b"\n"
                     + b'{"event": "start", "t": 1}\n')
    assert list(iter_events(path)) == [{"event": "start", "t": 1}]


def test_event_lines_parse_as_json_loads_would(tmp_path):
    lines = [b'{"event": "a"}\n', b'  \t{"event": "b", "n": [1, {"k": null}]}  \r\n',
             b'{"event": "c"} trailing\n', b'{"event": "d"}{"event": "e"}\n',
             b'{"event": "\xff"}\n', b'{"event": "f", "s": "\xc3\xa9"}\n',
             b'{"no-event": 1}\n', b'["event"]\n', b'\x0b{"event": "g"}\n',
             b'{"event": "h"', b'{"event": "i"}']
    path = tmp_path / "stdout.log"
    path.write_bytes(b"".join(lines[:-2]) + lines[-2] + b"\n" + lines[-1])
    expected = []
    for line in b"".join(lines[:-2]).splitlines(keepends=True) + [lines[-2], lines[-1]]:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and "event" in e:
            expected.append(e)
    assert [e["event"] for e in expected] == ["a", "b", "f", "i"]
    assert list(iter_events(path)) == expected


def test_replicas_equal_entries_are_one_object(tmp_path):
    from checkers import divergence
    from checkers.rundir import load_dumps

    def entry(offset, epoch, digest):
        return {"offset": offset, "epoch": epoch, "committed": True, "digest": digest,
                "payload": {"op": "write", "value": [offset]}}

    logs = {"n1": [entry(0, 1, "a"), entry(1, 1, "b"), entry(2, 1, "c"), "junk",
                   entry(4, 1, "d")],
            "n2": [entry(0, 1, "a"), entry(1, 2, "x"), entry(2, 1, "c"), {"offset": "3"},
                   entry(4, True, "d")],
            "n3": [entry(1, 1, "b"), entry(2, 1, "c")]}
    for name, entries in logs.items():
        (tmp_path / "nodes" / name).mkdir(parents=True)
        (tmp_path / "nodes" / name / "log.msgpack").write_bytes(
            msgpack.packb({"high_watermark": 3, "entries": entries}))
    dumps = load_dumps(tmp_path)
    n1, n2, n3 = (dumps[n]["entries"] for n in ("n1", "n2", "n3"))
    assert n1 == logs["n1"] and n2 == logs["n2"] and n3 == logs["n3"]
    assert n2[0] is n1[0] and n2[2] is n1[2] and n3[0] is n1[1] and n3[1] is n1[2]
    assert n2[1] is not n1[1]
    # Equal (True == 1) but malformed: kept apart, so divergence still skips it.
    assert n2[4] is not n1[4] and n2[4]["epoch"] is True
    v = divergence.check(dumps)
    assert v["valid"] is False
    assert [(a["nodes"], a["offsets"]) for a in v["anomalies"] if a["type"] == "divergence"] == [
        (["n1", "n2"], [1, 1]), (["n2", "n3"], [1, 1])]
