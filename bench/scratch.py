"""Scratch copies of the repo with an unplanted bug patched in.

The bugs of bench/unplanted/*.patch are edits, never switches: each is applied
with `patch -p1` to a throwaway copy, and code run from that copy's root
imports the patched modules (sys.path[0] is the working directory for `-m`,
and the editable install's finder comes after the path finder). Used by
bench/hunt.py and by tests/raft/test_unplanted_bugs.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNPLANTED = ROOT / "bench" / "unplanted"
CATEGORIES = ("read path", "elections", "replication", "truncation", "state machine",
              "acknowledgement", "liveness")


@dataclass(frozen=True)
class Unplanted:
    name: str
    category: str
    what: str
    patch: Path


def parse_header(text: str, patch: Path) -> Unplanted:
    """The `# bug:`, `# category:` and description lines before the diff."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    fields: dict[str, str] = {}
    described = []
    for ln in lines:
        if field := re.match(r"(bug|category): (.*)", ln):
            fields[field[1]] = field[2]
        else:
            described.append(ln)
    what = " ".join(described)
    if "bug" not in fields or fields.get("category") not in CATEGORIES:
        raise ValueError(f"{patch}: header needs '# bug: NAME' and '# category: "
                         f"one of {', '.join(CATEGORIES)}'")
    return Unplanted(fields["bug"], fields["category"], what, patch)


def unplanted_bugs(directory: Path = UNPLANTED) -> dict[str, Unplanted]:
    """Every bug of the set, by name (the header's, which is also the file's stem)."""
    out = {}
    for patch in sorted(directory.glob("*.patch")):
        bug = parse_header(patch.read_text(), patch)
        if bug.name != patch.stem:
            raise ValueError(f"{patch}: header names {bug.name!r}")
        out[bug.name] = bug
    return out


def copy_tree(dest: Path, base: str | None = None) -> Path:
    """The repo's files into `dest`: the working tree's tracked and untracked
    (not ignored) files, or with `base` that commit's (git archive)."""
    dest.mkdir(parents=True, exist_ok=True)
    if base is not None:
        data = subprocess.run(["git", "-C", str(ROOT), "archive", base], check=True,
                              capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
        return dest
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], check=True, capture_output=True).stdout
    for name in sorted(set(listed.decode().split("\0")) - {""}):
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def apply_patch(tree: Path, patch: Path) -> None:
    """`patch -p1` into `tree`; CalledProcessError (with patch's output) if it does not apply."""
    subprocess.run(["patch", "-p1", "--batch", "--forward", "--quiet", "-d", str(tree),
                    "-i", str(patch)], check=True, capture_output=True, text=True)


def scratch_copy(dest: Path, patch: Path | None, base: str | None = None) -> Path:
    """A copy of the repo at `dest` with `patch` applied (None: the correct build)."""
    copy_tree(dest, base)
    if patch is not None:
        apply_patch(dest, patch)
    return dest
