"""Layering: each top-level package imports only the floors below it, and no
module sits in an import circle (a lazy import inside a function is an edge too)."""

import ast
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("faultline", "harness", "nemesis", "workloads", "checkers", "nodes")
# Who may import whom (besides itself). `faultline` (the public API) and
# `harness` (the top floor) may import everything.
BELOW = {
    "nodes": set(),
    "checkers": set(),
    "workloads": {"checkers", "nodes"},   # clients speak the nodes' wire codecs
    "nemesis": {"checkers", "nodes"},      # the Op type; NodeSpec in the cluster protocol
}
# Vocabularies: tables of names with no behaviour, which every floor may import
# (the writer and its readers spell each name through one table); each
# imports nothing first-party itself but another vocabulary.
VOCABULARIES = {
    "nodes.events",        # the event lines the generic checkers read, any system's
    "nodes.raft.events",   # the raft node's event lines: the node, its checkers, the triggers
    "checkers.fault_row",  # a fault row's shape and words: the core's rows and a system's
    "nodes.raft.fault_rows",  # the raft store's rows: its faults, checkers, its adapter
}
# A system's own checkers and faults are plug-ins that happen to ship with
# faultline: like contrib/'s, they build on the generic floors (checkers,
# nemesis) and reach the core only through entry points (pyproject.toml), so
# they sit above those floors though their package is the system's.
SYSTEM_PLUGINS = {
    "nodes.raft.checkers": {"checkers", "nodes"},
    "nodes.raft.faults": {"checkers", "nemesis", "nodes"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}


def imports(source: str, known: set[str]) -> set[str]:
    """First-party modules a file imports. `from pkg import sub` is an edge to
    the submodule `pkg.sub` only, `from mod import name` to `mod`."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            out.update(subs)
            if len(subs) < len(node.names):
                out.add(node.module)
    return {m for m in out if m in known}


def graph(files: dict[str, str] | None = None) -> nx.DiGraph:
    """The import graph of the repo, or of `files` (module -> source)."""
    sources = files if files is not None else {n: p.read_text() for n, p in modules().items()}
    g = nx.DiGraph()
    for name, source in sources.items():
        g.add_node(name)
        for target in imports(source, set(sources)):
            if target != name:
                g.add_edge(name, target)
    return g


def _plugin_of(module: str) -> str | None:
    return next((p for p in SYSTEM_PLUGINS if module == p or module.startswith(p + ".")), None)


def upward(g: nx.DiGraph) -> list[tuple[str, str]]:
    bad = []
    for src, dst in g.edges:
        top, target_top = src.split(".")[0], dst.split(".")[0]
        if dst in VOCABULARIES:
            continue
        plugin = _plugin_of(src)
        if plugin is not None:
            if target_top not in SYSTEM_PLUGINS[plugin] and _plugin_of(dst) != plugin:
                bad.append((src, dst))
            continue
        if _plugin_of(dst) is not None:
            bad.append((src, dst))   # only entry points reach a system's plug-ins
            continue
        if top in BELOW and target_top != top and target_top not in BELOW[top]:
            bad.append((src, dst))
    return bad


def circles(g: nx.DiGraph) -> list[list[str]]:
    return [c for c in nx.strongly_connected_components(g) if len(c) > 1]


def test_no_package_imports_a_floor_above_it():
    assert upward(graph()) == []


def test_a_vocabulary_imports_nothing_of_ours_but_vocabularies():
    """A system's vocabulary may build on the generic one (nodes.raft.events
    re-exports nodes.events' kinds); nothing else."""
    g = graph()
    assert {v: sorted(set(g.successors(v)) - VOCABULARIES) for v in VOCABULARIES} == \
        {v: [] for v in VOCABULARIES}


def test_no_module_is_in_an_import_circle():
    assert circles(graph()) == []


@pytest.mark.parametrize("files, found", [
    ({"nemesis.a": "from nemesis.b import x", "nemesis.b": "def f():\n    import nemesis.a"},
     "circle"),
    ({"checkers.a": "from harness.run.lifecycle import x", "harness.run.lifecycle": ""}, "upward"),
    ({"nemesis.a": "from workloads.w import x", "workloads.w": ""}, "upward"),
    ({"nodes.a": "from checkers import b", "checkers.b": "", "checkers": ""}, "upward"),
    ({"checkers.a": "from nodes.raft.checkers import b", "nodes.raft.checkers.b": ""}, "upward"),
    ({"nodes.raft.db": "from nodes.raft.faults import f", "nodes.raft.faults.f": ""}, "upward"),
    ({"nodes.raft.checkers.a": "from harness import h", "harness.h": ""}, "upward"),
])
def test_the_checks_see_a_circle_and_an_upward_import(files, found):
    g = graph(files)
    assert (circles(g) if found == "circle" else upward(g)), files


def test_a_sibling_submodule_import_is_no_circle_with_its_package():
    g = graph({"checkers.formats": "def f():\n    from checkers.formats.jepsen import r",
               "checkers.formats.jepsen": "from checkers.formats import edn",
               "checkers.formats.edn": ""})
    assert circles(g) == [] and ("checkers.formats.jepsen", "checkers.formats.edn") in g.edges


def test_the_harness_cluster_is_the_nemesis_cluster_control():
    """Every member of the protocol faults are typed against exists on the
    harness's Cluster, with the same parameters."""
    import inspect

    from harness.run.cluster import Cluster
    from nemesis.fault import ClusterControl

    members = [n for n in dir(ClusterControl) if not n.startswith("_")]
    assert members
    for name in members:
        theirs = getattr(ClusterControl, name)
        if callable(theirs):
            ours = getattr(Cluster, name)
            assert list(inspect.signature(ours).parameters) == \
                list(inspect.signature(theirs).parameters), name
        else:
            assert hasattr(Cluster, name), name
    for attribute in ClusterControl.__annotations__:
        assert attribute in inspect.getsource(Cluster.__init__), attribute


def test_only_the_cli_entry_sits_directly_in_the_harness():
    """The harness reads from its folders: every module is in a subpackage
    (run/, campaign/, report/, results/, commands/, spark/) but the entry point."""
    loose = {p.name for p in (REPO / "harness").glob("*.py")}
    assert loose == {"__init__.py", "__main__.py", "cli.py"}
