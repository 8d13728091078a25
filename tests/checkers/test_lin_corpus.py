"""Every file of Porcupine's test corpus gets the verdict its MANIFEST.tsv expects:
etcd logs with the etcd cas-register model, kv logs with the kv model."""

import csv

import pytest
from shared_corpus import MISSING_REASON, PORCUPINE

from checkers.formats.porcupine import read_etcd_log, read_kv_log
from checkers.linearizability import check

CORPUS = PORCUPINE
MANIFEST = CORPUS / "MANIFEST.tsv"


def rows():
    if not MANIFEST.exists():
        return []
    with open(MANIFEST, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


ROWS = rows()
pytestmark = pytest.mark.skipif(not ROWS, reason=MISSING_REASON)


def load(row):
    if row["subdir"] == "jepsen":
        return read_etcd_log(CORPUS / "jepsen" / row["file"]), "cas-register"
    return read_kv_log(CORPUS / "kv" / row["file"]), "kv"


def test_manifest_is_complete():
    assert len(ROWS) == 108
    assert sum(r["expected"] == "ok" for r in ROWS) == 26


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_corpus_verdict(row):
    history, model = load(row)
    v = check(history, model=model, time_limit=60, stop_on_first_failure=True)
    assert v["valid"] is (row["expected"] == "ok"), v["anomalies"][:1]
    if v["valid"] is False:
        a = next(a for a in v["anomalies"] if a["type"] == "nonlinearizable")
        assert a["op"] is not None
