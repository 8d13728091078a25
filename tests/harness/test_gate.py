import xml.etree.ElementTree as ET

from harness.results.gate import GateCase, cases_from_verdicts, decide, junit_xml

VALID = {"valid": True, "checkers": {"linearizability": {"valid": True, "anomalies": [],
                                                         "stats": {"seconds": 0.5}}}}
INVALID = {"valid": False, "checkers": {
    "linearizability": {"valid": False, "anomalies": [{"type": "nonlinearizable",
                                                       "explanation": "read 3 after 4"}],
                        "stats": {}},
    "elle": {"valid": "unknown", "anomalies": [], "stats": {"reason": "budget"}}}}


def test_all_valid_passes():
    assert decide(cases_from_verdicts("r1", VALID)) == 0


def test_any_invalid_fails_even_with_unknowns():
    cases = cases_from_verdicts("r1", VALID) + cases_from_verdicts("r2", INVALID)
    assert decide(cases) == 1
    assert decide(cases, allow_unknown=True) == 1


def test_unknown_without_invalid_is_2_unless_allowed():
    cases = [GateCase("r", "elle", "unknown", "budget")] + cases_from_verdicts("r1", VALID)
    assert decide(cases) == 2
    assert decide(cases, allow_unknown=True) == 0


def test_run_without_verdicts_never_passes():
    (case,) = cases_from_verdicts("r9", None)
    assert case.valid == "error" and "check it first" in case.detail
    assert decide([case], allow_unknown=True) == 2


def test_junit_has_one_testcase_per_run_and_checker():
    cases = cases_from_verdicts("r1", VALID) + cases_from_verdicts("r2", INVALID)
    root = ET.fromstring(junit_xml(cases))
    suite = root.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    tcs = suite.findall("testcase")
    assert [(t.get("classname"), t.get("name")) for t in tcs] == [
        ("r1", "linearizability"), ("r2", "linearizability"), ("r2", "elle")]
    assert "read 3 after 4" in tcs[1].find("failure").text
    assert tcs[2].find("skipped") is not None
