"""Layering: nodes/ and checkers/ import nothing above them, and the public
`faultline` package sits in no import circle."""

import ast
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("faultline", "harness", "nemesis", "workloads", "checkers", "nodes")
# Who may import whom (besides itself): the floors below it.
BELOW = {"nodes": set(), "checkers": set()}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """First-party modules a file imports, at any depth (a lazy import is an edge too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] in PACKAGES}


def graph() -> nx.DiGraph:
    files = {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    g = nx.DiGraph()
    for name, path in files.items():
        g.add_node(name)
        for target in imports(path):
            if target in files and target != name:
                g.add_edge(name, target)
    return g


def test_nodes_and_checkers_import_nothing_above_them():
    for src, dst in graph().edges:
        top, target_top = src.split(".")[0], dst.split(".")[0]
        if top in BELOW:
            assert target_top == top or target_top in BELOW[top], f"{src} imports {dst}"


def test_the_public_package_is_in_no_import_circle():
    for cycle in nx.simple_cycles(graph()):
        assert not any(m.startswith("faultline") for m in cycle), cycle
