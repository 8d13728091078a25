"""The unplanted bugs of bench/unplanted: each a patch that applies to the
repo as it is, each shown real by a scenario (tests/unplanted_evidence.py)
where the patched code misbehaves and the correct code does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
import nemesis.base  # noqa: E402, F401 (first: bench/nemesis.py would shadow the package)

sys.path.append(str(ROOT / "bench"))

import unplanted_evidence as evidence  # noqa: E402
from scratch import CATEGORIES, parse_header, scratch_copy, unplanted_bugs  # noqa: E402

BUGS = unplanted_bugs()


def test_the_set_has_twelve_bugs_or_more_over_every_category():
    assert len(BUGS) >= 12
    assert {b.category for b in BUGS.values()} == set(CATEGORIES)


def test_every_bug_has_a_scenario():
    assert set(evidence.SCENARIOS) == set(BUGS)


def test_a_header_without_a_known_category_is_refused():
    with pytest.raises(ValueError, match="category"):
        parse_header("# bug: x\n# category: cosmic rays\n--- a/f\n", Path("x.patch"))
    bug = parse_header("# bug: x\n# category: liveness\n# it hangs\n--- a/f\n", Path("x.patch"))
    assert (bug.name, bug.category, bug.what) == ("x", "liveness", "it hangs")


@pytest.mark.parametrize("name", sorted(BUGS))
def test_patch_applies_to_the_repo_as_it_is(name):
    subprocess.run(["patch", "-p1", "--dry-run", "--batch", "--forward", "-d", str(ROOT),
                    "-i", str(BUGS[name].patch)], check=True, capture_output=True)


@pytest.mark.parametrize("scenario", sorted({f.__name__ for f in evidence.SCENARIOS.values()}))
def test_the_correct_code_passes_every_scenario(scenario):
    misbehaved, detail = getattr(evidence, scenario)()
    assert not misbehaved, detail


def test_scratch_copy_holds_the_patched_code(tmp_path):
    bug = BUGS["cas-absent-key"]
    copy = scratch_copy(tmp_path / "copy", bug.patch)
    edit = 'self.kv.get(c["key"], c["expect"])'
    assert edit in (copy / "nodes/raft/state_machine.py").read_text()
    assert edit not in (ROOT / "nodes/raft/state_machine.py").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUGS))
def test_the_patched_code_misbehaves(name, tmp_path):
    copy = scratch_copy(tmp_path / "copy", BUGS[name].patch)
    out = subprocess.run([sys.executable, "tests/unplanted_evidence.py", name], cwd=copy,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["misbehaved"], found["detail"]
