"""Knossos's own test histories (its `data/` directory, placed as
`<corpus>/knossos/data/`) get Knossos's verdicts: cas-register files with the
Knossos-flavour register starting at 0 as Knossos's harness does, the
multi-register file with x = y = 0. Skips when that corpus is not there."""

import os

import pytest
from shared_corpus import find_corpus, missing_reason

from checkers.formats import read_any
from checkers.linearizability import check

DATA = find_corpus("knossos/data")
MODELS = {"cas-register": ("cas-register-knossos", {"initial": 0}),
          "multi-register": ("multi-register", {"initial": {"x": 0, "y": 0}}),
          "mutex": ("mutex", None)}
FILES = sorted(p for p in DATA.glob("*/*/*.edn") if p.parts[-3] in MODELS) if DATA else []
pytestmark = pytest.mark.skipif(not FILES, reason=missing_reason("knossos/data"))


@pytest.mark.parametrize("path", FILES, ids=[os.sep.join(p.parts[-3:]) for p in FILES])
def test_knossos_verdict(path):
    model, options = MODELS[path.parts[-3]]
    v = check(read_any(path).ops, model=model, model_options=options, time_limit=60)
    assert v["valid"] is (path.parts[-2] == "good"), v["anomalies"][:1]
