"""The verdict shape and how checker verdicts combine into a run's."""

import pytest

from checkers.verdict import combine, judged_on_events, merge, verdict


def test_verdict_fills_in_empty_anomalies_and_stats_and_refuses_other_validities():
    assert verdict(True) == {"valid": True, "anomalies": [], "stats": {}}
    with pytest.raises(ValueError, match="valid must be True, False or 'unknown', not 'yes'"):
        verdict("yes")


@pytest.mark.parametrize("validities, expected", [
    ([True, True], True),
    ([True, "unknown"], "unknown"),
    (["unknown", False, True], False),   # invalid wins over unknown
    ([False, True], False),
    ([], True),
])
def test_combine(validities, expected):
    assert combine(validities) == expected


def test_merge_keeps_each_checker_and_combines_their_validity():
    checkers = {"linearizability": verdict(True), "stats": verdict("unknown")}
    assert merge(checkers) == {"valid": "unknown", "checkers": checkers}


def test_judged_on_events_is_invalid_unknown_or_valid():

    bad = [{"kind": "x"}]
    assert judged_on_events(bad, {"n": 1}, {"n1": []})["valid"] is False
    unknown = judged_on_events([], {"n": 1}, {"n1": [], "n2": []})
    assert unknown["valid"] == "unknown" and unknown["stats"]["reason"] == "no node event lines"
    assert judged_on_events([], {"n": 1}, {"n1": [{"event": "start"}]}) == \
        {"valid": True, "anomalies": [], "stats": {"n": 1}}
