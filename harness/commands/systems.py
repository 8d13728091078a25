"""`faultline systems`: what can be tested and how, read from the registries."""

from __future__ import annotations

import argparse
import json
from typing import Any

from faultline import catalog, registry


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "systems", help="list systems, workloads and faults",
        description="List the registered systems (faultline.systems entry points) with the "
                    "workloads each supports and its node options, every workload with its "
                    "options, and every fault with what it needs from a system.")
    p.add_argument("--json", action="store_true", help="one JSON document instead of text")
    p.set_defaults(func=run)


def describe() -> dict[str, Any]:
    systems: dict[str, dict[str, Any]] = {}
    for name in registry.names():
        try:
            s = registry.get(name)
        except Exception as e:  # a broken plugin is listed with why, not a crash of the list
            systems[name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        systems[name] = {"description": s.description, "workloads": s.workloads,
                         "node_options": dict(s.node_options or {}),
                         "node_defaults": dict(s.node_defaults),
                         "bug_switches": s.check_bugs is not None,
                         "faults_it_cannot_take": [f.name for f in catalog.faults()
                                                   if catalog.unmet_needs(f.name, s)]}
    return {"systems": systems,
            "workloads": {w.name: {"options": {o.name: {"kind": o.kind, "default": o.default,
                                                         "help": o.help}
                                                for o in w.options.values()},
                                   "description": w.description}
                          for w in catalog.workloads()},
            "faults": {f.name: {"needs": sorted(f.needs), "description": f.description}
                       for f in catalog.faults()}}


def run(args: argparse.Namespace) -> int:
    doc = describe()
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print("systems:")
    for name, s in doc["systems"].items():
        if "error" in s:
            print(f"  {name:<10} cannot be loaded: {s['error']}")
            continue
        print(f"  {name:<10} {s['description']}")
        print(f"  {'':<10} workloads: {', '.join(s['workloads'])}")
        if s["node_options"]:
            print(f"  {'':<10} node options: {', '.join(sorted(s['node_options']))}")
        if s["faults_it_cannot_take"]:
            print(f"  {'':<10} cannot take: {', '.join(s['faults_it_cannot_take'])}")
    print("workloads:")
    for name, w in doc["workloads"].items():
        print(f"  {name:<12} {w['description']}")
        for key, o in w["options"].items():
            print(f"  {'':<12} --client-option {key}={o['default']}  {o['help']} ({o['kind']})")
    print("faults:")
    for f in doc["faults"].values():
        needs = f"  (needs {', '.join(f['needs'])})" if f["needs"] else ""
        print(f"  {f['description']}{needs}")
    return 0
