"""Network partitions: real packet drops on the run's bridge.

One nftables table in the hub namespace (which owns the bridge) drops
bridged packets whose (source, destination) address pair is in a set. A
partition is one atomic "flush set + add elements" transaction, heal is a
flush. Clients in the hub are never cut: their traffic is not bridged
between node ports, so it never meets the forward hook.

The shapes are pure functions of a seeded rng and the node names, giving a
cut: directed pairs (a, b) meaning packets from a to b are dropped.
"""

from __future__ import annotations

import ctypes
import random
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checkers.faults import PARTITION
from checkers.history import NOOP
from nemesis.fault import (
    WAITED_FOR_LEADER,
    ClusterControl,
    FaultContext,
    aim_at_leader,
    replayed_wait,
)
from nemesis.netns import preexec_setns

TABLE = "faultline"
SET = "cut"
# `fwd` is an nft keyword, hence `xfwd`.
TABLE_SCRIPT = f"""table bridge {TABLE} {{
  set {SET} {{
    type ipv4_addr . ipv4_addr
  }}
  chain xfwd {{
    type filter hook forward priority 0; policy accept;
    ip saddr . ip daddr @{SET} drop
  }}
}}
"""
HEAL_SCRIPT = f"flush set bridge {TABLE} {SET}\n"

SHAPES = ("isolate-one", "isolate-leader", "random-halves", "majorities-ring", "bridge",
          "one-way")

Cut = list[tuple[str, str]]
# Shapes that cut nothing below a cluster size: a 3-node "majorities ring" is
# a full mesh. Never drawn at random there, and refused when asked for by name.
MIN_NODES = {"majorities-ring": 5}
MIN_NODES_ANY = 2


def shapes_for(n: int) -> tuple[str, ...]:
    """The shapes that cut at least one link on `n` nodes."""
    if n < MIN_NODES_ANY:
        return ()
    return tuple(s for s in SHAPES if n >= MIN_NODES.get(s, MIN_NODES_ANY))


# --- shapes (pure) --------------------------------------------------------------


def both_ways(side_a: Iterable[str], side_b: Iterable[str]) -> Cut:
    b = sorted(side_b)
    return sorted({(x, y) for x in side_a for y in b} | {(y, x) for x in side_a for y in b})


def isolate(node: str, nodes: Sequence[str]) -> Cut:
    return both_ways([node], [n for n in nodes if n != node])


def halves(rng: random.Random, nodes: Sequence[str]) -> tuple[list[str], list[str]]:
    shuffled = sorted(nodes)
    rng.shuffle(shuffled)
    k = len(shuffled) // 2
    return sorted(shuffled[:k]), sorted(shuffled[k:])


def majorities_ring(rng: random.Random, nodes: Sequence[str]) -> Cut:
    """Jepsen's ring: every node sees a majority, no two see the same one.

    Nodes on a shuffled ring hear only neighbours within distance d, where
    d is the smallest reach that still makes self + neighbours a majority.
    """
    ring = sorted(nodes)
    rng.shuffle(ring)
    n = len(ring)
    d = max(1, -(-(n // 2) // 2))  # ceil((majority - 1) / 2)
    cut = set()
    for i, a in enumerate(ring):
        for j, b in enumerate(ring):
            if i != j and min((i - j) % n, (j - i) % n) > d:
                cut.add((a, b))
    return sorted(cut)


def bridge(rng: random.Random, nodes: Sequence[str]) -> tuple[str, Cut]:
    """Two halves that cannot talk, and one node both can: returns (bridge node, cut)."""
    shuffled = sorted(nodes)
    rng.shuffle(shuffled)
    k = len(shuffled) // 2
    middle = shuffled[k] if len(shuffled) % 2 else shuffled[k - 1]
    rest = [n for n in shuffled if n != middle]
    half = len(rest) // 2
    return middle, both_ways(rest[:half], rest[half:])


def one_way(rng: random.Random, nodes: Sequence[str]) -> tuple[list[str], list[str], Cut]:
    """Nodes in `senders` cannot reach `receivers`; the other way still works."""
    senders, receivers = halves(rng, nodes)
    return senders, receivers, sorted((a, b) for a in senders for b in receivers)


def plan_shape(rng: random.Random, nodes: Sequence[str], shape: str,
               leader: str | None = None) -> dict[str, Any]:
    """Pure: `{"shape", "nodes", "cut"}` for a shape (isolate-leader needs `leader`)."""
    nodes = sorted(nodes)
    if shape == "isolate-one":
        node = rng.choice(nodes)
        return {"shape": shape, "nodes": [node], "cut": isolate(node, nodes)}
    if shape == "isolate-leader":
        if leader is None:
            return {"shape": shape}  # resolved at inject time, from the live cluster
        return {"shape": shape, "nodes": [leader], "cut": isolate(leader, nodes)}
    if shape == "random-halves":
        a, b = halves(rng, nodes)
        return {"shape": shape, "nodes": a, "cut": both_ways(a, b)}
    if shape == "majorities-ring":
        return {"shape": shape, "nodes": nodes, "cut": majorities_ring(rng, nodes)}
    if shape == "bridge":
        middle, cut = bridge(rng, nodes)
        return {"shape": shape, "nodes": [middle], "cut": cut}
    if shape == "one-way":
        senders, receivers, cut = one_way(rng, nodes)
        return {"shape": shape, "nodes": senders, "receivers": receivers, "cut": cut}
    raise ValueError(f"unknown partition shape {shape!r}; expected one of {', '.join(SHAPES)}")


def cut_script(pairs: Iterable[tuple[str, str]]) -> str:
    """One nft transaction replacing the whole cut with `pairs` (addresses)."""
    elements = ", ".join(f"{a} . {b}" for a, b in pairs)
    script = HEAL_SCRIPT
    if elements:
        script += f"add element bridge {TABLE} {SET} {{ {elements} }}\n"
    return script


# --- applying cuts ---------------------------------------------------------------


class Nft:
    """nftables commands in one namespace.

    Through libnftables with a context opened inside the namespace (its
    netlink socket stays there): a partition or heal costs well under a
    millisecond, against ~10 ms to fork and exec `nft`, the fallback.
    """

    def __init__(self, cluster: ClusterControl) -> None:
        self._lock = threading.Lock()
        self._netns = cluster.hub_netns
        self._lib: Any = None
        self._ctx: int | None = None
        try:
            lib = ctypes.CDLL("libnftables.so.1")
        except OSError:
            return
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        with cluster.in_hub():
            ctx = lib.nft_ctx_new(0)
        if not ctx:
            return
        lib.nft_ctx_buffer_error(ctx)
        lib.nft_ctx_buffer_output(ctx)
        self._lib, self._ctx = lib, ctx

    def run(self, script: str) -> None:
        with self._lock:
            if self._ctx is not None:
                if self._lib.nft_run_cmd_from_buffer(self._ctx, script.encode()) != 0:
                    err = self._lib.nft_ctx_get_error_buffer(self._ctx) or b""
                    raise RuntimeError(f"nft failed: {err.decode(errors='replace').strip()}")
                return
        from_ns = preexec_setns(self._netns)
        done = subprocess.run(["nft", "-f", "-"], input=script.encode(), capture_output=True,
                              preexec_fn=from_ns, timeout=10)
        if done.returncode != 0:
            raise RuntimeError(f"nft failed: {done.stderr.decode(errors='replace').strip()}")

    def close(self) -> None:
        # Freeing the context closes its socket, which would otherwise keep
        # the hub namespace alive after its name is deleted.
        with self._lock:
            if self._ctx is not None:
                self._lib.nft_ctx_free(self._ctx)
                self._ctx = None


def plan(rng: random.Random, nodes: Sequence[str], variant: str | None) -> dict[str, Any]:
    """The partition's params: the named shape, or one drawn among those that
    cut a link on this many nodes."""
    shapes = shapes_for(len(nodes))
    if variant is not None and variant not in shapes:
        plan_shape(rng, nodes, variant)  # an unknown name: the shape's own error
        raise ValueError(f"partition shape {variant!r} cannot act on {len(nodes)} "
                         f"node(s); there, use one of "
                         f"{', '.join(shapes) or '(none: add nodes)'}")
    if not shapes:
        raise ValueError(f"no partition can cut a link on {len(nodes)} node(s)")
    return plan_shape(rng, nodes, variant or rng.choice(shapes))


class Partitioner:
    """The cut currently in force on one cluster's bridge."""

    def __init__(self, cluster: ClusterControl) -> None:
        self.cluster = cluster
        self.nft = Nft(cluster)
        self.nft.run(TABLE_SCRIPT)
        self.cut: Cut = []

    def apply(self, cut: Sequence[Sequence[str]]) -> None:
        addresses = [(self.cluster.ip_of(a), self.cluster.ip_of(b)) for a, b in cut]
        self.nft.run(cut_script(addresses))
        self.cut = [(a, b) for a, b in cut]

    def heal(self) -> None:
        self.nft.run(HEAL_SCRIPT)
        self.cut = []

    def close(self) -> None:
        self.nft.close()


class PartitionFault:
    """`partition` in one of SHAPES (variant picks one; else the rng does);
    heal (`heal`) removes every cut."""

    name, heal_f = PARTITION.name, PARTITION.heal_f

    def __init__(self, variant: str | None = None) -> None:
        if variant is not None and variant not in SHAPES:
            raise ValueError(f"unknown partition shape {variant!r}; expected one of "
                             f"{', '.join(SHAPES)}")
        self.variant = variant
        self._partitioners: dict[str, Partitioner] = {}

    def plan(self, rng: random.Random, nodes: Sequence[str]) -> dict[str, Any]:
        return plan_shape(rng, nodes, self.variant or rng.choice(shapes_for(len(nodes))))

    def partitioner(self, cluster: ClusterControl) -> Partitioner:
        key = cluster.hub_netns
        if key not in self._partitioners:
            self._partitioners[key] = Partitioner(cluster)
        return self._partitioners[key]

    def setup(self, cluster: ClusterControl) -> None:
        self.partitioner(cluster)

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        if "cut" in params:
            replayed_wait(params)
            value = dict(params)
        else:
            shape = (params.get("shape") or self.variant
                     or rng.choice(shapes_for(len(cluster.names)) or SHAPES))
            leader, waited_s = None, None
            if shape == "isolate-leader":
                leader, waited_s = aim_at_leader(cluster, params, "isolate")
            value = plan_shape(rng, cluster.names, shape, leader)
            if waited_s is not None:
                value[WAITED_FOR_LEADER] = waited_s
        cut = [tuple(pair) for pair in value["cut"]]
        self.partitioner(cluster).apply(cut)
        value["cut"] = [list(pair) for pair in cut]
        if not cut:
            value[NOOP] = (f"{value.get('shape', 'this partition')} cuts no link on "
                           f"{len(cluster.names)} nodes")
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        p = self.partitioner(cluster)
        healed = [list(pair) for pair in p.cut]
        p.heal()
        return {"healed": healed} if healed else {"healed": [], NOOP: "no link was cut"}

    def teardown(self, cluster: ClusterControl) -> None:
        p = self._partitioners.pop(cluster.hub_netns, None)
        if p is not None:
            p.close()


def partition_fault(ctx: FaultContext) -> PartitionFault:
    return PartitionFault(ctx.variant)
