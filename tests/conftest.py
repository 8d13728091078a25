"""Per-test time limits (pytest-timeout).

A fast test gets the pyproject default (seconds); an end-to-end test marked
`slow` starts real processes and may wait out elections and heals, so it gets
minutes. Either way a hang fails that one test with a stack, instead of
stalling the whole suite. The `signal` method raises inside the test, so the
fixtures' teardown still removes the namespaces and processes it made."""

import pytest
from hypothesis import settings

# `make mutate` runs the tests once to see which reach each function, then
# again per mutant: with this profile (pyproject's [tool.mutmut]) property
# tests draw the same examples every time and replay nothing saved by an
# earlier run, so a mutant is judged on the examples the baseline passed.
settings.register_profile("mutation", database=None, derandomize=True)

SLOW_TEST_TIMEOUT_S = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TEST_TIMEOUT_S))
