"""Issue 28, finding 10: the gate, its JUnit report and a campaign's
summary.txt show anomalies as human sentences (the first few, then "and N
more"), never as JSON cut mid-field; verdicts.json keeps the JSON. One
function reads every kind, from a registry, with a readable fallback."""

from __future__ import annotations

import ast
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checkers.anomaly_text import FIRST, MAX_CHARS, SENTENCES, generic, sentence, sentences
from checkers.registry import SENTENCES as CONTRIBUTED
from harness.campaign.report import summarize, summary_text
from harness.cli import main
from tests.harness.test_gate_cli import run_dir

REPO = Path(__file__).resolve().parents[2]
# The core's sentences and those the systems bring with their checkers (the
# raft store's: nodes/raft/checkers/sentences.py).
ALL_SENTENCES = {**SENTENCES, **CONTRIBUTED}

# A durability verdict as a buggy run writes it: long values and op refs, the
# shape that was shown as `{"type": "lost-write", "value": 1234, "key": ...` cut
# at 300 characters.
LOST = [{"type": "lost-write", "value": 1000 + i, "key": f"k{i}", "evidence": "final-read",
         "write": {"index": 10 * i, "process": 3, "type": "invoke", "f": "write",
                   "value": 1000 + i, "time": 123456789},
         "ack": {"index": 10 * i + 1, "process": 3, "type": "ok", "f": "write",
                 "value": 1000 + i, "time": 123456999},
         "final_read": {"index": 999, "process": 0, "type": "ok", "f": "read",
                        "value": list(range(200)), "time": 9_999_999_999}}
        for i in range(7)]
DURABILITY = {"valid": False, "checkers": {
    "durability": {"valid": False, "anomalies": LOST, "stats": {}}}}


def looks_like_json(text: str) -> bool:
    return '{"' in text or '":' in text


def test_gate_prints_sentences_not_json(tmp_path, capsys):
    d = run_dir(tmp_path, "r1", DURABILITY)
    assert main(["gate", str(d)]) == 1
    out = capsys.readouterr().out
    assert not looks_like_json(out), out
    for i in range(FIRST):
        assert f"Lost write (key k{i}): {1000 + i} was acknowledged" in out
    assert f"Lost write (key k{FIRST})" not in out
    assert f"and {len(LOST) - FIRST} more anomalies" in out
    # verdicts.json keeps every anomaly whole.
    kept = json.loads((d / "verdicts.json").read_text())
    assert kept["checkers"]["durability"]["anomalies"] == LOST


def test_junit_failure_text_is_sentences(tmp_path):
    d = run_dir(tmp_path, "r1", DURABILITY)
    junit = tmp_path / "gate.xml"
    assert main(["gate", str(d), "--junit", str(junit)]) == 1
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure.get("message").startswith("Lost write (key k0): 1000 was acknowledged")
    lines = failure.text.split("\n")
    assert len(lines) == FIRST + 1 and lines[-1].startswith("and 4 more anomalies")
    assert not looks_like_json(failure.text)


def test_summary_txt_lists_sentences():
    entries = [{"index": 0, "label": "raft kill", "status": "complete", "run_id": "r0",
                "run_dir": "/x/r0", "verdict": "invalid"}]
    s = summarize({"id": "c1", "name": "nightly"}, entries, {0: DURABILITY})
    text = summary_text(s, entries)
    assert not looks_like_json(text), text
    assert "durability (7 anomalies):" in text
    assert "- Lost write (key k2): 1002 was acknowledged" in text
    assert "- and 4 more anomalies (verdicts.json has them all)" in text
    # The JSON summary still carries the first anomaly as data.
    assert s["invalid_runs"][0]["anomaly"] == LOST[0]


def test_an_explanation_is_used_as_is():
    assert sentence({"type": "G1c", "explanation": "A cycle of two txns."}) == \
        "A cycle of two txns."


def test_unknown_kind_is_a_readable_sentence_of_whole_fields():
    huge = {"type": "brand-new-kind", "node": "n2", "offsets": list(range(10_000)),
            "blob": "word " * 5000, **{f"field_{i}": {"deep": [[i] * 50]} for i in range(40)}}
    text = sentence(huge)
    assert text.startswith("A brand new kind anomaly: node n2, offsets [0, 1, 2, 3, … 9996 "
                           "more], blob word word")
    assert text.endswith(" more fields.") and len(text) <= MAX_CHARS
    assert not looks_like_json(text)
    assert sentence({"odd": 1}) == "An anomaly of no named kind: odd 1."
    assert sentence(["not", "a", "dict"]) == "An anomaly: [not, a, dict]."


def test_a_known_kind_of_another_shape_falls_back_to_fields():
    assert sentence({"type": "divergence", "offsets": 3}) == "A divergence anomaly: offsets 3."


def test_sentences_of_few_anomalies_has_no_and_more():
    assert sentences(LOST[:2]) == [sentence(LOST[0]), sentence(LOST[1])]
    assert sentences(LOST[:4])[-1] == "and 1 more anomaly (verdicts.json has them all)"


def reported_kinds() -> dict[str, bool]:
    """Every anomaly kind a checker writes as a literal: {"type": "kind", ...},
    and whether that dict carries its own "explanation"."""
    kinds: dict[str, bool] = {}
    # The generic checkers and each system's own (nodes/<system>/checkers).
    roots = [REPO / "checkers", *sorted(REPO.glob("nodes/*/checkers"))]
    for path in (p for root in roots for p in root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Dict):
                continue
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if "type" not in keys or not {"key", "node", "value", "reason", "count",
                                          "epoch", "log", "explanation",
                                          "omitted"} & set(keys):
                continue
            value = node.values[keys.index("type")] if None not in node.keys else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                kinds[value.value] = kinds.get(value.value, True) and "explanation" in keys
    return kinds


def test_every_kind_a_checker_reports_reads_as_a_sentence():
    kinds = reported_kinds()
    assert {"lost-write", "double-vote", "nonlinearizable", "G1a"} <= set(kinds)
    missing = sorted(k for k, explained in kinds.items()
                     if not explained and k not in ALL_SENTENCES)
    assert missing == []


@pytest.mark.parametrize("kind", sorted(ALL_SENTENCES))
def test_every_registered_kind_survives_a_bare_anomaly(kind):
    """A foreign or old anomaly of a known kind with none of its fields still
    reads as a sentence, not a traceback."""
    text = sentence({"type": kind})
    assert text.endswith(".") and not looks_like_json(text)
    assert generic({"type": kind}).startswith(("A ", "An "))


def test_a_system_brings_the_sentences_of_its_own_kinds():
    assert "double-vote" not in SENTENCES and "double-vote" in CONTRIBUTED
    text = sentence({"type": "double-vote", "node": "n1", "epoch": 3, "candidates": ["n2", "n3"]})
    assert text == "Node n1 voted twice in epoch 3, for n2 and n3."
