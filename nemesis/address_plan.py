"""The address plan of a run's network: one /24 per run (each hub is its own
network), the hub at .1, nodes from .10 up. The node count bound follows from
it, so `--nodes` is refused before anything starts rather than when the
topology runs out of addresses."""

from __future__ import annotations

SUBNET_PREFIX = "10.77.0."
PREFIX_LEN = 24
HUB_ADDRESS = SUBNET_PREFIX + "1"
FIRST_NODE_HOST = 10
# Host numbers FIRST_NODE_HOST .. 254 (255 is the broadcast address).
MAX_NODES = 2 ** (32 - PREFIX_LEN) - 1 - FIRST_NODE_HOST


def node_address(i: int) -> str:
    if not 0 <= i < MAX_NODES:
        raise ValueError(f"node index {i} outside 0..{MAX_NODES - 1}")
    return f"{SUBNET_PREFIX}{FIRST_NODE_HOST + i}"
