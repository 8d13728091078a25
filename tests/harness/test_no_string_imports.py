"""Code is reached by import statements, never by strings naming a module or
an attribute (issue 32): `importlib.import_module("nemesis.process")` and
`getattr(module, "kill_fault")` hide the call graph from mypy, ruff, an
IDE's "go to definition", `grep` for the symbol and the layering test
(test_layering reads import statements, a lazy one inside a function too).

Where a module must load late (start-up: `faultline check-elle` must not
import what `faultline run` needs), a function whose body does a real
`from package.module import name` does it (harness.cli's `@command`
loaders). Plug-ins come through entry points (checkers.plugins). `ALLOWED`
lists the places where the module's name is data the user gives, each with
why; an allowance that no longer matches anything fails too, so the list
cannot go stale."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("faultline", "harness", "nemesis", "workloads", "checkers", "nodes")

# Loaders of a module by name or by path.
LOADERS = {"import_module", "__import__", "module_from_spec", "spec_from_file_location",
           "spec_from_loader", "exec_module", "load_module"}

ALLOWED: dict[tuple[str, str], str] = {
    ("faultline/registry.py", "importlib.import_module(module_name)"):
        "`--system package.module:NAME`: the user names a system not installed as an "
        "entry point; the module's name is command-line data, which no tool could follow",
    ("faultline/registry.py", "getattr(module, attr)"):
        "the NAME of that `--system package.module:NAME` spec, checked to be a System",
    ("checkers/plugin_trust.py", "getattr(sys.modules[top], '__file__', None)"):
        "where an already imported plug-in's module came from (its file, for the "
        "refusal's message): reads no code",
}


def _loaded_names(tree: ast.AST) -> set[str]:
    """Names bound to a module a loader returned (`m = import_module(x)`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and _is_loader(node.value.func):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_loader(func: ast.AST) -> bool:
    return (isinstance(func, ast.Name) and func.id in LOADERS) or \
        (isinstance(func, ast.Attribute) and func.attr in LOADERS)


def _is_sys_modules(node: ast.AST) -> bool:
    """`sys.modules[...]`: a module looked up by its name."""
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
        and node.value.attr == "modules" and isinstance(node.value.value, ast.Name) \
        and node.value.value.id == "sys"


def _module_by_name(node: ast.AST, loaded: set[str]) -> bool:
    return _is_sys_modules(node) or (isinstance(node, ast.Call) and _is_loader(node.func)) \
        or (isinstance(node, ast.Name) and node.id in loaded)


def string_imports(source: str) -> list[str]:
    """Each place in `source` that loads a module by name or by path, or
    reaches into a module so loaded (or found in sys.modules) by an
    attribute's name: the expression, as written."""
    tree = ast.parse(source)
    loaded = _loaded_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("importlib", "importlib.util"):
            found += [f"from {node.module} import {a.name}" for a in node.names
                      if a.name in LOADERS]
        elif isinstance(node, ast.Call) and _is_loader(node.func):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr") and node.args \
                and _module_by_name(node.args[0], loaded):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Attribute) and _is_sys_modules(node.value):
            found.append(ast.unparse(node))
    return found


def findings() -> set[tuple[str, str]]:
    out = set()
    for package in SCANNED:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            out.update((rel, what) for what in string_imports(path.read_text()))
    return out


def test_no_module_or_attribute_is_reached_by_a_string() -> None:
    assert sorted(findings() - set(ALLOWED)) == []


def test_every_allowance_still_matches_a_place() -> None:
    assert sorted(set(ALLOWED) - findings()) == []


@pytest.mark.parametrize("source", [
    'import importlib\nf = importlib.import_module("nemesis.process").kill_fault',
    'import importlib\ndef f(m, a):\n    return getattr(importlib.import_module(m), a)',
    'from importlib import import_module\n',
    'import importlib\nm = importlib.import_module(name)\nx = getattr(m, "kill_fault")',
    'x = __import__("nemesis.process")',
    'import sys\nx = getattr(sys.modules["nemesis.process"], "kill_fault")',
    'import sys\nx = sys.modules["nemesis.process"].kill_fault',
    'import importlib.util\nspec = importlib.util.spec_from_file_location("m", p)\n'
    'spec.loader.exec_module(importlib.util.module_from_spec(spec))',
])
def test_a_module_reached_by_a_string_is_found(source: str) -> None:
    assert string_imports(source), source


@pytest.mark.parametrize("source", [
    "from nemesis.process import kill_fault",
    "def f():\n    from nemesis.process import kill_fault\n    return kill_fault",
    "from nemesis import process\nx = process.kill_fault",
    "from importlib.metadata import entry_points\nx = [e.load() for e in entry_points()]",
    'def heal_f(fault):\n    return getattr(fault, "heal_f", None)',
    "import importlib.util\nok = importlib.util.find_spec('msgpack') is not None",
])
def test_an_import_statement_or_an_object_attribute_is_not(source: str) -> None:
    assert string_imports(source) == [], source
