import csv

import pytest
from shared_corpus import MISSING_REASON, PORCUPINE

from checkers.formats import detect_format, read_any
from checkers.formats.porcupine import read_etcd_log, read_kv_log
from checkers.history import HistoryError, Op, validate

CORPUS = PORCUPINE


def manifest():
    if not (CORPUS / "MANIFEST.tsv").exists():
        return []
    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


ROWS = manifest()


def test_corpus_is_complete():
    if not ROWS:
        pytest.skip(MISSING_REASON)
    assert len(ROWS) == 108


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_every_corpus_file_parses_with_the_manifest_counts(row):
    path = CORPUS / row["subdir"] / row["file"]
    reader = read_etcd_log if row["subdir"] == "jepsen" else read_kv_log
    ops = reader(path)
    assert sum(op.type == "invoke" for op in ops) == int(row["ops"])
    assert sum(op.type == "ok" for op in ops) == int(row["n_ok"])
    assert sum(op.type == "fail" for op in ops) == int(row["n_fail"])
    assert sum(op.type == "info" for op in ops) == int(row["n_info"])
    assert len({op.process for op in ops}) == int(row["processes"])
    assert [op.index for op in ops] == list(range(len(ops)))
    assert validate(ops) == []
    expected_fmt = "porcupine-etcd" if row["subdir"] == "jepsen" else "porcupine-kv"
    assert detect_format(path) == expected_fmt
    assert [o.to_map() for o in read_any(path).ops] == [o.to_map() for o in ops]


def test_etcd_lines(tmp_path):
    path = tmp_path / "etcd.log"
    path.write_text(
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
        "INFO  jepsen.util - 1   :invoke   :cas   [3 4]\n"
        "INFO  jepsen.util - 0\t:ok\t:read\tnil\n"
        "INFO  jepsen.util - 2\t:invoke\t:write\t7\n"
        "INFO  jepsen.util - 1\t:info\t:cas\t:timed-out\n"
        "\n"
        "INFO  jepsen.util - 3\t:invoke\t:read\tnil\n"
        "INFO  jepsen.util - 3\t:fail\t:read\t:timed-out\n"
        "INFO  jepsen.util - 2\t:ok\t:write\t7\n")
    ops = read_etcd_log(path)
    assert ops == [
        Op(0, 1, 0, "invoke", "read", None),
        Op(1, 2, 1, "invoke", "cas", [3, 4]),
        Op(2, 3, 0, "ok", "read", None),
        Op(3, 4, 2, "invoke", "write", 7),
        Op(4, 5, 1, "info", "cas", [3, 4], error="timed-out"),
        Op(5, 7, 3, "invoke", "read", None),
        Op(6, 8, 3, "fail", "read", None, error="timed-out"),
        Op(7, 9, 2, "ok", "write", 7),
    ]


def test_kv_lines_keep_f_key_and_raw_strings(tmp_path):
    path = tmp_path / "kv.txt"
    path.write_text('{:process 4, :type :invoke, :f :put, :key "3", :value "x 4 0 y"}\n'
                    '{:process 4, :type :ok, :f :put, :key "3", :value "x 4 0 y"}\n'
                    '{:process 1, :type :invoke, :f :get, :key "3", :value nil}\n'
                    '{:process 1, :type :ok, :f :get, :key "3", :value "x 4 0 y"}\n')
    ops = read_kv_log(path)
    assert ops[0] == Op(0, 1, 4, "invoke", "put", "x 4 0 y", key="3")
    assert ops[3] == Op(3, 4, 1, "ok", "get", "x 4 0 y", key="3")
    assert [type(o.value) for o in ops] == [str, str, type(None), str]
    assert type(ops[0].f) is str and type(ops[0].key) is str


@pytest.mark.parametrize("line, where", [
    ("INFO  jepsen.util - 0\t:invoke\t:read\n", "line 2"),
    ("INFO  jepsen.util - x\t:invoke\t:read\tnil\n", "line 2"),
    ("INFO  jepsen.util - 0\t:started\t:read\tnil\n", "unknown op type"),
    ("INFO  jepsen.util - 0\t:invoke\t:cas\t[1 2\n", "bad value"),
    ("WARN something else\n", "line 2"),
])
def test_etcd_bad_lines_name_the_line(tmp_path, line, where):
    path = tmp_path / "etcd.log"
    path.write_text("INFO  jepsen.util - 0\t:invoke\t:read\tnil\n" + line)
    with pytest.raises(HistoryError) as e:
        read_etcd_log(path)
    assert where in str(e.value) and str(path) in str(e.value)
    assert e.value.index == 1


def test_kv_bad_line_names_the_line(tmp_path):
    path = tmp_path / "kv.txt"
    path.write_text('{:process 4, :type :invoke, :f :put, :key "3", :value "a"}\n'
                    '{:process 4, :type :ok, :f :put, :value "a"}\n')
    with pytest.raises(HistoryError, match="line 2"):
        read_kv_log(path)
