"""The checker keeps its answers while it gets faster: on generated histories
with planted faults (tests/elle_mutants.py) it must give exactly the verdict,
anomaly counts, edge counts and cycles the reference checker gave."""

import json

import pytest

from tests.elle_mutants import CASES, FINGERPRINTS, MODELS, fingerprint, mutant

EXPECTED = json.loads(FINGERPRINTS.read_text())


def test_corpus_has_both_verdicts_and_many_anomalies() -> None:
    assert len(EXPECTED) == CASES
    assert {f["valid"] for f in EXPECTED} == {True, False}
    kinds = {k for f in EXPECTED for k in f["anomaly_counts"]}
    assert {"G0", "G1a", "G1b", "G1c", "G-single-item", "G2-item", "internal",
            "incompatible-order", "duplicate-elements"} <= kinds


@pytest.mark.parametrize("seed", range(CASES))
def test_same_answer_as_reference(seed: int) -> None:
    assert fingerprint(mutant(seed), MODELS[seed % len(MODELS)]) == EXPECTED[seed]
