"""A fault in a few words, from what the nemesis recorded: the one label the
live line, run.json's executed schedule and the report all show.

A partition is named by the links it cut ("partition: cut n1-n2, n1-n4
(bridge)"), not by the node its shape centres on: a bridge's middle node or a
half's members say nothing of which links were down. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

LINKS_SHOWN = 6   # cut links listed before "+N more"


def _pairs(cut: Any) -> list[tuple[str, str]]:
    return [(str(p[0]), str(p[1])) for p in cut if isinstance(p, (list, tuple)) and len(p) == 2]


def node_order(name: str) -> tuple[int, str]:
    """Sort key of node names in number order: n2 before n10."""
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 1 << 30, name)


def links(cut: Iterable[Any]) -> list[str]:
    """Directed cut pairs as links: "n1-n2" when cut both ways, "n1->n2" when
    only packets from n1 to n2 are dropped."""
    pairs = set(_pairs(cut))
    out = []
    for a, b in sorted(pairs, key=lambda p: (node_order(p[0]), node_order(p[1]))):
        if (b, a) in pairs:
            if node_order(a) < node_order(b):
                out.append(f"{a}-{b}")
        else:
            out.append(f"{a}->{b}")
    return out


def links_text(cut: Iterable[Any], shown: int = LINKS_SHOWN) -> str:
    """"n1-n2, n1-n4", the first `shown` links then "+N more"; "no link" if none."""
    all_links = links(cut)
    if not all_links:
        return "no link"
    text = ", ".join(all_links[:shown])
    return text + (f" +{len(all_links) - shown} more" if len(all_links) > shown else "")


_RATE_UNITS = (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0))


def quality_text(quality: Any) -> str:
    """"loss 10%, delay 100ms+-20ms", "rate 1mbit": a network quality fault's
    settings (nemesis.netquality) in words."""
    q = {k: v for k, v in quality.items() if isinstance(v, (int, float))} \
        if isinstance(quality, dict) else {}
    parts = [f"{key} {q[key]:g}%" for key in ("loss", "duplicate", "reorder", "corrupt")
             if key in q]
    if "delay" in q:
        parts.append(f"delay {q['delay']:g}ms" + (f"+-{q['jitter']:g}ms" if q.get("jitter")
                                                   else ""))
    if "rate_bit" in q:
        unit, size = next((u, s) for u, s in _RATE_UNITS if q["rate_bit"] >= s or u == "bit")
        parts.append(f"rate {q['rate_bit'] / size:g}{unit}")
    return ", ".join(parts)


def fault_label(f: str, value: Any, shown: int = LINKS_SHOWN) -> str:
    """"kill n3", "pause n1 n2", "partition: cut n1-n2 (bridge)",
    "heal: restored n1-n2", "packet loss 10%: n1-n2, n1-n3 (isolate-one)"."""
    if not isinstance(value, dict):
        return f
    shape = value.get("shape") if isinstance(value.get("shape"), str) else None
    if isinstance(value.get("cut"), list):
        return f"{f}: cut {links_text(value['cut'], shown)}" + (f" ({shape})" if shape else "")
    if isinstance(value.get("links"), list):
        return (f"{f} {quality_text(value.get('quality'))}: {links_text(value['links'], shown)}"
                + (f" ({shape})" if shape else ""))
    for key in ("healed", "restored"):
        if isinstance(value.get(key), list) and value[key]:
            return f"{f}: restored {links_text(value[key], shown)}"
    parts = [f]
    for k in ("shape", "mode"):
        if isinstance(value.get(k), str):
            parts.append(value[k])
    nodes, receivers = value.get("nodes"), value.get("receivers")
    if isinstance(nodes, list) and nodes:
        parts.append(" ".join(map(str, nodes)))
    if isinstance(receivers, list) and receivers:
        parts.append("-> " + " ".join(map(str, receivers)))
    return " ".join(parts)
