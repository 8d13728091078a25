"""The raft node's event lines are spelled through one table
(nodes.raft.events): every line the node writes names a kind of the table and
only fields the table lists, and no reader compares an event kind to a literal."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from nodes.raft.events import EVENT_KINDS, EventKind

REPO = Path(__file__).resolve().parents[2]
WRITERS = ("nodes/raft/core.py", "nodes/raft/server.py")
PRODUCT = ("faultline", "harness", "nemesis", "workloads", "checkers", "nodes")
BY_CONSTANT = {name: kind for name, kind in vars(__import__("nodes.raft.events",
               fromlist=["_"])).items() if isinstance(kind, EventKind)}


def event_dicts(source: str) -> list[ast.Dict]:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Dict)
            and any(isinstance(k, ast.Constant) and k.value == "event" for k in n.keys)]


def written(source: str) -> list[tuple[str | None, set[str]]]:
    """(the table constant an event dict names, its other keys) for each event dict."""
    out = []
    for d in event_dicts(source):
        keys = {k.value for k in d.keys if isinstance(k, ast.Constant)}
        value = d.values[[isinstance(k, ast.Constant) and k.value == "event"
                          for k in d.keys].index(True)]
        named = (value.value.id if isinstance(value, ast.Attribute) and value.attr == "name"
                 and isinstance(value.value, ast.Name) else None)
        out.append((named, keys - {"event"}))
    return out


def test_every_line_the_node_writes_is_a_kind_of_the_table_with_its_fields():
    lines = [w for path in WRITERS for w in written((REPO / path).read_text())]
    assert len(lines) >= len(EVENT_KINDS)
    for named, keys in lines:
        assert named in BY_CONSTANT, f"an event line not named through the table: {named}"
        assert keys <= set(BY_CONSTANT[named].fields), (named, keys)


def test_every_kind_of_the_table_is_written():
    named = {n for path in WRITERS for n, _ in written((REPO / path).read_text())}
    assert {BY_CONSTANT[n].name for n in named} == {k.name for k in EVENT_KINDS}


def test_the_scan_sees_a_literal_kind_and_an_unlisted_field():
    bad = written('x = {"event": "vote", "epoch": 1}\ny = {"event": VOTE.name, "who": 2}')
    assert bad == [(None, {"epoch"}), ("VOTE", {"who"})]
    assert "who" not in BY_CONSTANT["VOTE"].fields


KINDS = "|".join(k.name for k in EVENT_KINDS)
LITERAL_KIND = re.compile(rf'(get\("event"\)|\["event"\]|\bkind)\s*(==|!=)\s*"({KINDS})"')


def test_no_reader_compares_an_event_kind_to_a_literal():
    found = [f"{p.relative_to(REPO)}:{i}" for pkg in PRODUCT for p in (REPO / pkg).rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if LITERAL_KIND.search(line)]
    assert found == []
    assert LITERAL_KIND.search('if ev.get("event") == "role":')
    assert LITERAL_KIND.search('if e["event"] != "vote":')
