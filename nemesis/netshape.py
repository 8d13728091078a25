"""Network quality faults on a run's links: `packet` (loss, duplication, delay,
jitter, reorder, corruption) and `bandwidth` (a rate ceiling).

Everything lives in the hub namespace, on the hub side of each node's veth,
so it goes with the hub when a run ends or `faultline clean` removes it:
- loss and duplication: one nftables netdev table per fault, hooked on the
  ingress of the senders' ports: `numgen random` drops, `dup to <port of
  the receiver>` sends a copy straight to the receiver (measured in
  docs/faults.md);
- rate: an HTB qdisc on the receiver's port, one class per sender at the
  rate, a u32 filter on the sender's address; other traffic (clients in the
  hub) takes an unlimited default class;
- delay, jitter, reorder, corruption: an iptables FORWARD rule (bridged
  packets meet it: the hub's bridge-nf-call-iptables is on) sends the links'
  packets to an NFQUEUE served by nemesis.netqueue_main, a process the fault
  starts in the hub and stops at its heal.
Clients in the hub are never touched: the rules match node-to-node pairs.
"""

from __future__ import annotations

import itertools
import json
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkers.faults import BANDWIDTH, PACKET
from checkers.history import NOOP
from nemesis.fault import (
    WAITED_FOR_LEADER,
    ClusterControl,
    FaultContext,
    aim_at_leader,
    replayed_wait,
)
from nemesis.netns import in_netns, popen_in_netns, run_in_netns
from nemesis.netquality import (
    needs_queue,
    parse_bandwidth,
    parse_packet,
    plan_links,
)
from nemesis.partition import Nft

Links = list[tuple[str, str]]
# NFQUEUE numbers of this process's queue faults (two in force never share one).
_queue_numbers = itertools.count(4200)
QUEUE_READY_S = 10.0
QUEUE_STOP_S = 5.0
# The queue's niceness: ahead of the nodes for the CPU (measured in docs/faults.md).
QUEUE_NICE = -10
QUEUE_RT_PRIORITY = 1
BRIDGE_NF = "/proc/sys/net/bridge/bridge-nf-call-iptables"


def hub_ports(cluster: ClusterControl, nodes: Sequence[str]) -> dict[str, str]:
    """node -> the name of its veth's hub side (the peer of its eth0)."""
    from pyroute2 import IPRoute
    peers = {}
    for node in nodes:
        with in_netns(cluster.netns_of(node)), IPRoute() as ipr:
            peers[node] = ipr.get_links(ifname="eth0")[0].get_attr("IFLA_LINK")
    with cluster.in_hub(), IPRoute() as ipr:
        names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
    return {node: names[index] for node, index in peers.items()}


def _chance(p: float) -> str:
    """A match true for p % of packets (numgen draws 0..9999; 100 %: always)."""
    return "" if p >= 100 else f"numgen random mod 10000 < {round(p * 100)} "


def nft_script(table: str, quality: Mapping[str, float], links: Links,
               ips: Mapping[str, str], ports: Mapping[str, str]) -> str:
    """Pure: the netdev table dropping and duplicating on `links` (node pairs)."""
    senders = sorted({ports[a] for a, _ in links})
    rules = []
    for a, b in links:
        match = f"ip saddr {ips[a]} ip daddr {ips[b]}"
        if "loss" in quality:
            rules.append(f"{match} {_chance(quality['loss'])}drop")
        if "duplicate" in quality:
            rules.append(f"{match} {_chance(quality['duplicate'])}dup to \"{ports[b]}\"")
    devices = ", ".join(f'"{s}"' for s in senders)
    body = "\n".join(f"    {r}" for r in rules)
    return (f"table netdev {table} {{\n  chain ingress {{\n"
            f"    type filter hook ingress devices = {{ {devices} }} priority 0;\n"
            f"{body}\n  }}\n}}\n")


def htb_batch(rate_bit: float, links: Links, ips: Mapping[str, str],
              ports: Mapping[str, str]) -> list[str]:
    """Pure: `tc -batch` lines: on each receiver's port an HTB root whose
    default class is unlimited and one class per sender at the rate."""
    out = []
    receivers: dict[str, list[str]] = {}
    for a, b in links:
        receivers.setdefault(b, []).append(a)
    rate = f"{int(rate_bit)}bit"
    for b, senders in sorted(receivers.items()):
        dev = ports[b]
        out += [f"qdisc replace dev {dev} root handle 1: htb default 1",
                f"class add dev {dev} parent 1: classid 1:1 htb rate 100gbit quantum 200000"]
        for i, a in enumerate(sorted(senders), start=10):
            out += [f"class add dev {dev} parent 1: classid 1:{i:x} htb rate {rate} ceil {rate} "
                    f"quantum 1514",
                    f"filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip src "
                    f"{ips[a]}/32 flowid 1:{i:x}"]
    return out


def iptables_script(chain: str, queue: int, links: Links, ips: Mapping[str, str],
                    add: bool) -> str:
    """Pure: an iptables-restore --noflush script adding (or removing) the
    chain that sends `links`' bridged packets to NFQUEUE `queue`."""
    if not add:
        return f"*filter\n-D FORWARD -j {chain}\n-F {chain}\n-X {chain}\nCOMMIT\n"
    rules = [f"-A {chain} -s {ips[a]}/32 -d {ips[b]}/32 -j NFQUEUE --queue-num {queue} "
             f"--queue-bypass" for a, b in links]
    return "\n".join(["*filter", f":{chain} - [0:0]", *rules, f"-I FORWARD 1 -j {chain}",
                      "COMMIT"]) + "\n"


def _run(hub: str, argv: list[str], stdin: str | None = None) -> None:
    done = run_in_netns(hub, argv, input=(stdin or "").encode(), capture_output=True,
                        timeout=20)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: "
                           f"{done.stderr.decode(errors='replace').strip()[:400]}")


def queue_available() -> str | None:
    """Why the queue path cannot run here, or None."""
    try:
        import netfilterqueue  # noqa: F401
    except ImportError:
        return "the netfilterqueue package is not installed (pip install netfilterqueue)"
    import shutil
    if shutil.which("iptables-restore") is None:
        return "iptables-restore is not installed (Debian: iptables)"
    return None


class QueueProcess:
    """The NFQUEUE helper of one fault, in the hub."""

    def __init__(self, hub: str, queue: int, quality: Mapping[str, float], seed: int) -> None:
        args = json.dumps({"queue": queue, "quality": dict(quality), "seed": seed,
                           "nice": QUEUE_NICE, "realtime": QUEUE_RT_PRIORITY})
        self.proc = popen_in_netns(hub, [sys.executable, "-m", "nemesis.netqueue_main", args],
                                   die_with_parent=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = self._readline(QUEUE_READY_S)
        if line != "ready":
            self.proc.kill()
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise RuntimeError(f"the packet queue did not start: {line!r} {err.strip()[-400:]}")

    def _readline(self, timeout: float) -> str:
        out: list[str] = []
        reader = threading.Thread(
            target=lambda: out.append(self.proc.stdout.readline().decode().strip()),  # type: ignore[union-attr]
            daemon=True)
        reader.start()
        reader.join(timeout)
        return out[0] if out else ""

    def stop(self) -> dict[str, Any]:
        """Releases what it holds and exits; its counts."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = self.proc.communicate(timeout=QUEUE_STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return {"error": "the packet queue did not stop; killed"}
        lines = stdout.decode(errors="replace").splitlines()
        try:
            return dict(json.loads(lines[-1]))
        except (ValueError, IndexError):
            return {"error": f"the packet queue exited {self.proc.returncode}: "
                             f"{stderr.decode(errors='replace').strip()[-300:]}"}


class LinkQualityFault:
    """One network quality fault (`packet` or `bandwidth` with its variant):
    inject sets it on its links, heal removes everything it set."""

    def __init__(self, name: str, heal_f: str,
                 parse: Callable[[str | None], tuple[dict[str, float], str]],
                 variant: str | None) -> None:
        self.name, self.heal_f = name, heal_f
        self.quality, self.shape = parse(variant)
        if needs_queue(self.quality):
            missing = queue_available()
            if missing is not None:
                raise ValueError(f"{name}:{variant} needs the packet queue, but {missing}")
        self.queue_num = next(_queue_numbers)
        self.table = f"fl_{name}_{self.queue_num}"
        self.chain = f"FLQ{self.queue_num}"
        self.links: Links = []
        self._receivers: list[str] = []
        self._nft: Nft | None = None
        self._queue: QueueProcess | None = None
        self._iptables = False

    def _plan(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
              ) -> dict[str, Any]:
        if "links" in params:
            replayed_wait(params)
            return {**params, "quality": dict(params.get("quality") or self.quality)}
        shape = params.get("shape") or self.shape
        if shape != "isolate-leader":
            return {"quality": dict(self.quality), **plan_links(rng, cluster.names, shape, None)}
        leader, waited_s = aim_at_leader(cluster, params, "isolate")
        return {"quality": dict(self.quality), **plan_links(rng, cluster.names, shape, leader),
                WAITED_FOR_LEADER: waited_s}

    def inject(self, cluster: ClusterControl, rng: random.Random, params: Mapping[str, Any]
               ) -> dict[str, Any]:
        self.heal(cluster)   # a second inject replaces the first
        value = self._plan(cluster, rng, params)
        quality = value["quality"]
        links = [(str(a), str(b)) for a, b in value["links"]]
        value["links"] = [list(p) for p in links]
        if not links:
            value[NOOP] = "no link to act on"
            return value
        nodes = sorted({n for p in links for n in p})
        ips = {n: cluster.ip_of(n) for n in nodes}
        ports = hub_ports(cluster, nodes)
        hub = cluster.hub_netns
        self.links = links
        if "loss" in quality or "duplicate" in quality:
            if self._nft is None:
                self._nft = Nft(cluster)
            # `dup to <port>` is resolved to an ifindex by nft itself, in
            # the namespace of the thread that runs it.
            with cluster.in_hub():
                self._nft.run(nft_script(self.table, quality, links, ips, ports))
        if "rate_bit" in quality:
            self._receivers = sorted({ports[b] for _, b in links})
            _run(hub, ["tc", "-batch", "-"],
                 "\n".join(htb_batch(quality["rate_bit"], links, ips, ports)) + "\n")
        if needs_queue(quality):
            _enable_bridge_netfilter(cluster)
            self._queue = QueueProcess(hub, self.queue_num, quality, rng.getrandbits(63))
            _run(hub, ["iptables-restore", "--noflush"],
                 iptables_script(self.chain, self.queue_num, links, ips, add=True))
            self._iptables = True
        return value

    def heal(self, cluster: ClusterControl) -> dict[str, Any]:
        if not self.links:
            return {"restored": [], NOOP: "no link was degraded"}
        hub = cluster.hub_netns
        errors = []
        value: dict[str, Any] = {"restored": [list(p) for p in self.links]}
        if self._iptables:
            try:
                _run(hub, ["iptables-restore", "--noflush"],
                     iptables_script(self.chain, self.queue_num, [], {}, add=False))
                self._iptables = False
            except RuntimeError as e:
                errors.append(str(e))
        if self._queue is not None:
            value["queue"] = self._queue.stop()
            self._queue = None
        if self._nft is not None:
            try:
                self._nft.run(f"delete table netdev {self.table}\n")
            except RuntimeError as e:
                if "No such file" not in str(e):
                    errors.append(str(e))
        for dev in self._receivers:
            try:
                _run(hub, ["tc", "qdisc", "del", "dev", dev, "root"])
            except RuntimeError as e:
                # An inject that failed part way may not have reached this port.
                if "handle of zero" not in str(e):
                    errors.append(str(e))
        self._receivers = []
        self.links = []
        if errors:
            raise RuntimeError("; ".join(errors))
        return value

    def teardown(self, cluster: ClusterControl) -> None:
        if self._nft is not None:
            self._nft.close()
            self._nft = None


def _enable_bridge_netfilter(cluster: ClusterControl) -> None:
    """Bridged packets meet iptables only with bridge-nf-call-iptables on (a
    per-namespace switch, on by default here; set, not assumed)."""
    with cluster.in_hub():
        with open(BRIDGE_NF) as f:
            if f.read().strip() == "1":
                return
        with open(BRIDGE_NF, "w") as f:
            f.write("1\n")


def packet_fault(ctx: FaultContext) -> LinkQualityFault:
    return LinkQualityFault(PACKET.name, PACKET.heal_f, parse_packet, ctx.variant)


def bandwidth_fault(ctx: FaultContext) -> LinkQualityFault:
    return LinkQualityFault(BANDWIDTH.name, BANDWIDTH.heal_f, parse_bandwidth, ctx.variant)
