"""docs/contracts.md's generated tables are what the code's tables make: the
committed page must not drift from nodes.raft.events, the workloads, the
client options, the fault rows and the adapter abilities."""

from __future__ import annotations

import pytest

from harness.docs import contracts
from nodes.raft.events import EVENT_KINDS
from workloads.registry import WORKLOADS


def test_the_committed_page_is_what_the_code_makes():
    page = contracts.PAGE.read_text()
    assert contracts.render(page) == page, \
        "docs/contracts.md drifted from the code: run python -m harness.docs.contracts"
    assert contracts.main(["--check"]) == 0


def test_a_hand_edited_table_line_is_drift():
    page = contracts.PAGE.read_text()
    edited = page.replace("| `vote` | `epoch`, `candidate`,", "| `vote` | `epoch`,")
    assert edited != page
    assert contracts.render(edited) == page


def test_every_event_kind_and_workload_op_is_on_the_page():
    page = contracts.PAGE.read_text()
    for kind in EVENT_KINDS:
        assert f"| `{kind.name}` | " in page
    for name, workload in WORKLOADS.items():
        for shape in workload.VALUES:
            assert f"| `{name}` | `{shape.f}` |" in page


@pytest.mark.parametrize("page, problem", [
    ("no sections at all", "missing"),
    ("<!-- generated:nonsense -->\nx\n<!-- end generated:nonsense -->", "unknown"),
])
def test_a_page_without_its_sections_or_with_unknown_ones_is_refused(page, problem):
    with pytest.raises(ValueError, match=problem):
        contracts.render(page)
