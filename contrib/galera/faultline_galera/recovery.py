"""How a Galera cluster comes back when every node went down at once: the
procedure MariaDB documents for a whole-cluster restart (find each node's
last committed seqno, bootstrap the most advanced node, the others join),
done by each node's starter as an unattended operator would (pure parts)."""

from __future__ import annotations

import re

# `mariadbd --wsrep-recover` logs the position InnoDB recovered to.
RECOVERED = re.compile(r"WSREP: Recovered position:\s*([0-9a-f-]{36}):(-?\d+)")


def recovered_position(log: str) -> tuple[str, int] | None:
    """The (cluster uuid, seqno) a --wsrep-recover run logged, the last one
    if several; None if it logged none."""
    found = RECOVERED.findall(log)
    if not found:
        return None
    uuid, seqno = found[-1]
    return uuid, int(seqno)


def bootstrapper(positions: dict[str, int], order: list[str]) -> str:
    """The node to bootstrap from: the highest seqno, ties to the first in
    the cluster's order (pure)."""
    return max(positions, key=lambda name: (positions[name], -order.index(name)))


def safe_to_bootstrap(grastate: str) -> str:
    """grastate.dat with safe_to_bootstrap set, as the documented procedure
    has the operator edit it on the chosen node (pure)."""
    if re.search(r"^safe_to_bootstrap:", grastate, flags=re.M):
        return re.sub(r"^safe_to_bootstrap:.*$", "safe_to_bootstrap: 1", grastate, flags=re.M)
    return grastate.rstrip("\n") + "\nsafe_to_bootstrap: 1\n"
