"""What the network quality faults do to real packets between two namespaces:
the figures of docs/faults.md. Builds a 3-namespace run topology (hub,
bridge, veths; no nodes needed), injects each fault on one link with
nemesis.netshape, measures with `ping` (ICMP, RTT and loss as ping reports
them), numbered UDP datagrams (one clock for both ends) or a TCP flow, heals,
and measures again. Prints one line per fault; asserts nothing (the bounds
are asserted in tests/nemesis/test_netfaults_kernel.py). Needs root, iptables,
netfilterqueue and iputils-ping.

    .venv/bin/python bench/netfaults.py
"""

from __future__ import annotations

import os
import random
import re
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from nemesis.base import make_fault
from nemesis.netns import Topology, in_netns, run_in_netns

NODES = ["n1", "n2", "n3"]


class Links:
    """The part of a running cluster the network faults use, over a bare topology."""

    def __init__(self, topology: Topology) -> None:
        self.t = topology
        self.names = list(topology.node_names)

    @property
    def hub_netns(self) -> str:
        return self.t.hub

    def netns_of(self, name: str) -> str:
        return self.t.netns[name]

    def ip_of(self, name: str) -> str:
        return self.t.ips[name]

    @contextmanager
    def in_hub(self) -> Iterator[None]:
        with self.t.in_hub():
            yield

    def leader(self) -> str | None:
        return None


def ping(c: Links, src: str, dst: str, count: int, interval: float = 0.01) -> dict[str, float]:
    out = run_in_netns(c.netns_of(src), ["ping", "-q", "-n", "-c", str(count), "-i",
                                          str(interval), "-W", "2", c.ip_of(dst)],
                       capture_output=True, text=True, timeout=600).stdout
    sent, got = map(int, re.search(r"(\d+) packets transmitted, (\d+) received", out).groups())
    dups = re.search(r"\+(\d+) duplicates", out)
    rtt = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", out)
    fig = {"sent": sent, "received": got, "dups": int(dups.group(1)) if dups else 0}
    if rtt:
        fig.update(zip(("min", "avg", "max", "mdev"), map(float, rtt.groups()), strict=True))
    return fig


def udp_order(c: Links, src: str, dst: str, n: int, gap_s: float) -> tuple[int, int]:
    """(received, arrivals that came before an earlier-sent datagram)."""
    with in_netns(c.netns_of(src)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with in_netns(c.netns_of(dst)):
        r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((c.ip_of(src), 0))
    r.bind((c.ip_of(dst), 0))
    r.settimeout(0.5)
    order: list[int] = []
    reader = threading.Thread(target=lambda: _recv_all(r, order), daemon=True)
    reader.start()
    for i in range(n):
        s.sendto(struct.pack("!I", i), r.getsockname())
        time.sleep(gap_s)
    reader.join()
    s.close()
    r.close()
    return len(order), sum(1 for x, y in zip(order, order[1:], strict=False) if y < x)


def _recv_all(r: socket.socket, order: list[int]) -> None:
    try:
        while True:
            order.append(struct.unpack("!I", r.recv(16))[0])
    except TimeoutError:
        return


def tcp_bits(c: Links, src: str, dst: str, seconds: float) -> float:
    with in_netns(c.netns_of(dst)):
        server = socket.create_server((c.ip_of(dst), 5201))
    got = [0, 0.0]

    def receive() -> None:
        conn, _ = server.accept()
        t0 = None
        with conn:
            while b := conn.recv(65536):
                t0 = t0 or time.monotonic()
                got[0] += len(b)
        got[1] = time.monotonic() - (t0 or time.monotonic())

    reader = threading.Thread(target=receive)
    reader.start()
    with in_netns(c.netns_of(src)):
        conn = socket.create_connection((c.ip_of(dst), 5201))
    with conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(b"x" * 65536)
    reader.join()
    server.close()
    return got[0] * 8 / max(got[1], 1e-9)


def measure(c: Links, spec: str, how: str) -> str:
    fault = make_fault(spec)
    value = fault.inject(c, random.Random(1), {})
    a, b = value["links"][0]
    try:
        during = _one(c, a, b, how)
    finally:
        healed = fault.heal(c)
    after = _one(c, a, b, how)
    queue = healed.get("queue")
    return f"{spec:42} {a}->{b}  during: {during}  healed: {after}" + (
        f"  queue: {queue}" if queue else "")


def _one(c: Links, a: str, b: str, how: str) -> str:
    if how.startswith("ping"):
        n = int(how[4:])
        f = ping(c, a, b, n, 0.002 if n > 200 else 0.02)
        loss = 100 * (f["sent"] - f["received"]) / f["sent"]
        rtt = (f"rtt min/avg/max/mdev {f['min']:.2f}/{f['avg']:.2f}/{f['max']:.2f}/"
               f"{f['mdev']:.2f} ms" if "avg" in f else "no reply")
        return (f"{f['sent']} sent, loss {loss:.1f}%, dups {f['dups']} "
                f"({100 * f['dups'] / f['sent']:.1f}%), {rtt}")
    if how == "udp-order":
        got, early = udp_order(c, a, b, 2000, 0.001)
        return f"2000 UDP sent 1 ms apart, {got} received, {early} overtook an earlier one"
    if how == "tcp":
        return f"TCP {tcp_bits(c, a, b, 3.0) / 1e6:.2f} Mbit/s (3 s, at the receiver)"
    raise ValueError(how)


CASES = [
    ("packet:loss=20,links=link-one-way", "ping2000"),
    ("packet:duplicate=30,links=link-one-way", "ping2000"),
    ("packet:corrupt=20,links=link-one-way", "ping2000"),
    ("packet:delay=1ms,links=link", "ping200"),
    ("packet:delay=10ms,links=link", "ping200"),
    ("packet:delay=50ms,links=link", "ping200"),
    ("packet:delay=200ms,links=link", "ping50"),
    ("packet:delay=40ms,jitter=20ms,links=link", "ping200"),
    ("packet:reorder=25,delay=10ms,links=link-one-way", "udp-order"),
    ("bandwidth:rate=1mbit,links=link-one-way", "tcp"),
    ("bandwidth:rate=10mbit,links=link-one-way", "tcp"),
    ("bandwidth:rate=100mbit,links=link-one-way", "tcp"),
    ("packet:delay=0,links=link-one-way", "tcp"),
]


def main() -> int:
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    t = Topology(f"bnq{uuid.uuid4().hex[:6]}", NODES)
    t.build()
    try:
        c = Links(t)
        print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
        baseline = _one(c, "n1", "n2", "ping200")
        print(f"{'(no fault)':42} n1->n2  {baseline}")
        print(f"{'(no fault)':42} n1->n2  {_one(c, 'n1', 'n2', 'tcp')}")
        for spec, how in CASES:
            print(measure(c, spec, how), flush=True)
        print(f"load {os.getloadavg()[0]:.1f} at the end")
    finally:
        t.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
