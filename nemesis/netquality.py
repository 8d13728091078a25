"""Network quality faults, pure: what `packet:...` and `bandwidth:...` ask for,
and which links they act on.

A variant is a comma-separated list of key=value settings; a key given alone
takes its default, and no variant at all means the fault's default setting:

    packet:loss=P          drop P % of packets             (default 10)
    packet:duplicate=P     deliver P % of packets twice    (default 10)
    packet:delay=D         hold every packet D             (default 100ms)
           ,jitter=J       ... for D +- J, uniform (packets may overtake)
    packet:reorder=P       P % of packets go at once, the others wait D
                           (netem's reorder; D defaults to 10ms)
    packet:corrupt=P       flip one bit past the IP header of P % of packets
                           (the receiver's checksum drops them, as netem's)
    bandwidth:rate=R       at most R per link (tc units: bit, kbit, mbit, gbit)
    ...,links=SHAPE        the links it acts on: a partition shape (the links
                           that shape would cut, e.g. one-way, isolate-leader),
                           `link` (one pair both ways), `link-one-way`, or
                           `all`; default isolate-one (one node, both ways)

P is a percentage (a `%` may follow), D and J take ms or s (bare numbers are
ms). Settings combine: `packet:loss=5,delay=20ms,links=all`. The plan records
the links as directed (from, to) node pairs and the settings as numbers, so a
replay applies exactly what ran.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nemesis.fault import Planner
from nemesis.partition import SHAPES, plan_shape, shapes_for

PACKET_DEFAULTS = {"loss": 10.0, "duplicate": 10.0, "delay": 100.0, "jitter": 0.0,
                   "reorder": 25.0, "corrupt": 5.0}
PERCENT_KEYS = ("loss", "duplicate", "reorder", "corrupt")
TIME_KEYS = ("delay", "jitter")
# What the queue helper must do (the rest is nftables).
QUEUE_KEYS = ("delay", "jitter", "reorder", "corrupt")
# reorder without a delay: how long the packets that do not go at once wait.
REORDER_DELAY_MS = 10.0
BANDWIDTH_DEFAULT = "1mbit"
LINK_SHAPES = (*SHAPES, "all", "link", "link-one-way")
DEFAULT_LINKS = "isolate-one"
PACKET_DEFAULT_VARIANT = "loss=10"

_UNITS = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}


def _percent(key: str, text: str) -> float:
    try:
        p = float(text.removesuffix("%"))
    except ValueError:
        raise ValueError(f"{key}={text!r}: expected a percentage such as 10 or 2.5%") from None
    if not 0 < p <= 100:
        raise ValueError(f"{key}={text!r}: a percentage in (0, 100]")
    return p


def _millis(key: str, text: str) -> float:
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)(ms|s)?", text)
    if m is None:
        raise ValueError(f"{key}={text!r}: expected a time such as 100ms or 0.5s")
    ms = float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
    if ms > 60_000:
        raise ValueError(f"{key}={text!r}: at most 60 s")
    return ms


def rate_bits(text: str) -> int:
    """"1mbit" -> 1_000_000 (bits per second)."""
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)(bit|kbit|mbit|gbit)", text.lower())
    if m is None:
        raise ValueError(f"rate={text!r}: expected a rate such as 500kbit or 2mbit")
    bits = int(float(m.group(1)) * _UNITS[m.group(2)])
    if bits < 8_000:
        raise ValueError(f"rate={text!r}: at least 8kbit (below, TCP stalls rather than slows)")
    return bits


def _settings(variant: str | None, allowed: Sequence[str], default: str
              ) -> tuple[dict[str, str | None], str]:
    """key -> its text (None: given alone), and the links shape."""
    text = variant if variant else default
    out: dict[str, str | None] = {}
    links = DEFAULT_LINKS
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if key == "links":
            if value not in LINK_SHAPES:
                raise ValueError(f"links={value!r}: expected one of {', '.join(LINK_SHAPES)}")
            links = value
            continue
        if key not in allowed:
            raise ValueError(f"unknown setting {key!r}; expected {', '.join((*allowed, 'links'))}")
        if key in out:
            raise ValueError(f"{key} given twice")
        out[key] = value if eq else None
    if not out:
        raise ValueError(f"nothing asked of the links in {text!r}")
    return out, links


def parse_packet(variant: str | None) -> tuple[dict[str, float], str]:
    """Pure: the packet settings (percentages and ms) and the links shape."""
    given, links = _settings(variant, tuple(PACKET_DEFAULTS), PACKET_DEFAULT_VARIANT)
    quality: dict[str, float] = {}
    for key, text in given.items():
        if text is None:
            quality[key] = PACKET_DEFAULTS[key]
        elif key in PERCENT_KEYS:
            quality[key] = _percent(key, text)
        else:
            quality[key] = _millis(key, text)
    if "jitter" in quality and "delay" not in quality:
        raise ValueError("jitter needs a delay (packet:delay=D,jitter=J)")
    if quality.get("jitter", 0) > quality.get("delay", 0):
        raise ValueError("jitter larger than the delay would ask for negative delays")
    if "reorder" in quality and "delay" not in quality:
        quality["delay"] = REORDER_DELAY_MS
    return quality, links


def parse_bandwidth(variant: str | None) -> tuple[dict[str, float], str]:
    given, links = _settings(variant, ("rate",), f"rate={BANDWIDTH_DEFAULT}")
    return {"rate_bit": float(rate_bits(given["rate"] or BANDWIDTH_DEFAULT))}, links


def needs_queue(quality: Mapping[str, float]) -> bool:
    return any(k in quality for k in QUEUE_KEYS)


def plan_links(rng: random.Random, nodes: Sequence[str], shape: str,
               leader: str | None = None) -> dict[str, Any]:
    """Pure: `{"shape", "nodes", "links"}`: the directed pairs `shape` acts on
    (a partition shape's cut; `link`, `link-one-way`: one pair; `all`: every pair)."""
    nodes = sorted(nodes)
    if shape == "all":
        return {"shape": shape, "nodes": nodes,
                "links": [[a, b] for a in nodes for b in nodes if a != b]}
    if shape in ("link", "link-one-way"):
        if len(nodes) < 2:
            raise ValueError(f"{shape} needs two nodes")
        a, b = sorted(rng.sample(nodes, 2))
        links = [[a, b]] if shape == "link-one-way" else [[a, b], [b, a]]
        return {"shape": shape, "nodes": [a, b], "links": links}
    if shape not in shapes_for(len(nodes)):
        raise ValueError(f"links={shape} acts on no link on {len(nodes)} node(s); use one of "
                         f"{', '.join(s for s in LINK_SHAPES if s in shapes_for(len(nodes)))}")
    planned = plan_shape(rng, nodes, shape, leader)
    cut = planned.pop("cut", None)
    if cut is not None:   # None: isolate-leader, resolved at inject time
        planned["links"] = [list(pair) for pair in cut]
    return planned


def plan(parse: Callable[[str | None], tuple[dict[str, float], str]]) -> Planner:
    """A FaultKind planner for one family, from its parser: the settings and
    the links, recorded in the schedule."""
    def planner(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
        quality, shape = parse(variant)
        if len(nodes) < 2:
            raise ValueError(f"a network quality fault needs 2 nodes, not {len(nodes)}")
        return {"quality": quality, **plan_links(rng, nodes, shape)}
    return planner


plan_packet = plan(parse_packet)
plan_bandwidth = plan(parse_bandwidth)
