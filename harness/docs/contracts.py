"""docs/contracts.md's tables, made from the code's own: the event kinds the
built-in systems declare (`System.events`), the workloads' op values and options
(workloads.registry), the options every client may read and the built-in
clients' own, the faults' rows (checkers.faults, nemesis.base.FAULTS) and the
adapter abilities (nodes.abilities). The prose around them is written by hand;
each table sits between `<!-- generated:NAME -->` and `<!-- end generated:NAME -->`.

    python -m harness.docs.contracts          # rewrite docs/contracts.md's tables
    python -m harness.docs.contracts --check  # exit 1 when the page has drifted

tests/harness/test_docs_contracts.py fails when the committed page differs from what
this makes.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from checkers.faults import FAULT_OPS, FaultOp
from faultline.builtin import SYSTEMS
from nemesis.base import FAULTS
from nodes.abilities import ABILITIES
from workloads.clients.outcome import CLIENT_OPTIONS
from workloads.registry import WORKLOADS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"
SECTION = re.compile(r"(<!-- generated:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)"
                     r"(<!-- end generated:(?P=name) -->)", re.DOTALL)


def _row(*cells: str) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    return "\n".join([_row(*head), _row(*("---" for _ in head)), *(_row(*r) for r in rows)])


def _code(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def _prose(doc: str | None) -> str:
    """A docstring's first paragraph on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def event_kinds() -> str:
    kinds = {k.name: k for system in SYSTEMS for k in system.events}
    return _table(("event", "fields", "when"),
                  [(f"`{k.name}`", _code(k.fields), k.meaning) for k in kinds.values()])


def workload_values() -> str:
    return _table(("workload", "f", "invoke value", "ok value"),
                  [(f"`{name}`", f"`{shape.f}`", shape.invoke, shape.ok)
                   for name, w in sorted(WORKLOADS.items()) for shape in w.VALUES])


def workload_options() -> str:
    return _table(("workload", "`--client-option`", "kind", "default", "what"),
                  [(f"`{name}`", f"`{o.name}`", o.kind, f"`{o.default!r}`", o.help)
                   for name, w in sorted(WORKLOADS.items()) for o in w.OPTIONS.values()])


def client_options() -> str:
    shared = [("every client may read", f"`{k}`", kind) for k, kind in CLIENT_OPTIONS.items()]
    own = [(f"`{s.name}`", f"`{k}`", kind)
           for s in SYSTEMS for k, kind in sorted(getattr(
               s.client_class(s.workloads[0]), "OPTIONS", {}).items())]
    return _table(("client", "key", "kind"), shared + own)


def fault_rows() -> str:
    rows = []
    for name, kind in FAULTS.items():
        op = FAULT_OPS.get(name)
        needs = [what for what, needed in (("LazyFS", kind.needs_lazyfs),
                                           ("event lines", kind.fires_on_events)) if needed]
        rows.append((f"`{name}`", f"`{kind.heal_f}`", op.effect if op else "(plug-in)",
                     _takes(op) if op else "(plug-in)", ", ".join(needs) or "-",
                     _code(kind.variants())))
    return _table(("fault", "healed by", "in force", "takes", "needs", "variants"), rows)


def _takes(op: FaultOp) -> str:
    # A fault that may take a node's voting state keeps it out past its restart.
    return f"{op.takes}, voting state" if op.loses_state else op.takes


def _members(protocol: type) -> list[str]:
    out = [f"{n}: {t}" for n, t in getattr(protocol, "__annotations__", {}).items()]
    for name, member in vars(protocol).items():
        if not name.startswith("_") and callable(member):
            out.append(f"{name}{inspect.signature(member)}".replace("(self, ", "(")
                       .replace("'", ""))
    return out


def abilities() -> str:
    return _table(("ability", "members", "who needs it"),
                  [(f"`{a.__name__}`", "<br>".join(f"`{m}`" for m in _members(a)),
                    _prose(a.__doc__)) for a in ABILITIES])


SECTIONS: dict[str, Callable[[], str]] = {
    "event-kinds": event_kinds, "workload-values": workload_values,
    "workload-options": workload_options, "client-options": client_options,
    "fault-rows": fault_rows, "abilities": abilities}


def render(page: str) -> str:
    """`page` with every generated section made anew; ValueError naming a
    section the page lacks or one this module does not make."""
    found = [m["name"] for m in SECTION.finditer(page)]
    unknown = sorted(set(found) - set(SECTIONS))
    missing = sorted(set(SECTIONS) - set(found))
    if unknown or missing:
        raise ValueError(f"docs/contracts.md: unknown generated sections {unknown}, "
                         f"missing {missing}")
    return SECTION.sub(lambda m: f"{m[1]}{SECTIONS[m['name']]()}\n{m[4]}", page)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.docs.contracts", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true",
                   help="exit 1 if docs/contracts.md differs from what the code makes")
    args = p.parse_args(argv)
    page = PAGE.read_text()
    made = render(page)
    if args.check:
        if made != page:
            print(f"{PAGE}: its generated tables differ from the code; "
                  "run python -m harness.docs.contracts", file=sys.stderr)
            return 1
        return 0
    if made != page:
        PAGE.write_text(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
