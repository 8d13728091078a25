"""Network quality faults measured at the kernel level: real packets between
the namespaces of a real cluster (echo servers), each fault's effect counted
over many packets, and its heal shown to remove it and everything it set up.

Bounds: a loss or duplication rate of p over N packets is held to p +- 5
binomial standard deviations (a false alarm in ~1 of 3.5 million runs); a
delay to within 10 % of what was asked (the median one-way delay of N UDP
datagrams, both ends on this host's clock, the arrival stamped by the kernel); a rate to its
ceiling (never above it; the floor is loose, since a loaded machine may
send less)."""

from __future__ import annotations

import math
import os
import random
import signal
import socket
import statistics
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from echo_db import EchoDB, echo

from harness.run.cluster import Cluster
from nemesis.base import make_fault
from nemesis.netns import in_netns, pids_in_netns, run_in_netns
from nemesis.netshape import QueueProcess, queue_available

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
needs_queue = pytest.mark.skipif(queue_available() is not None,
                                 reason=f"packet queue unavailable: {queue_available()}")
pytestmark = [needs_root, pytest.mark.slow]

N = 2000
SO_TIMESTAMPNS = 35   # and SCM_TIMESTAMPNS (Linux); not in the socket module


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("netq")
    run_id = f"tnq{uuid.uuid4().hex[:8]}"
    c = Cluster(tmp / run_id, EchoDB(leader="n2"), ["n1", "n2", "n3"], run_id,
                state_dir=tmp / "state")
    with c:
        c.start_all(timeout=20)
        yield c


def udp_pair(c: Cluster, src: str, dst: str) -> tuple[socket.socket, socket.socket]:
    with in_netns(c.netns_of(src)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with in_netns(c.netns_of(dst)):
        r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((c.ip_of(src), 0))
    r.bind((c.ip_of(dst), 0))
    r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return s, r


def blast(c: Cluster, src: str, dst: str, n: int = N, gap_s: float = 0.0002,
          settle_s: float = 0.3) -> list[tuple[int, float]]:
    """Send n numbered datagrams src -> dst; (number, one-way delay s) of each
    received (duplicates included), in arrival order. The arrival time is the
    kernel's (SO_TIMESTAMPNS), so how late this process reads does not count."""
    s, r = udp_pair(c, src, dst)
    r.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    got: list[tuple[int, float]] = []
    r.settimeout(0)
    with s, r:
        for i in range(n):
            s.sendto(struct.pack("!Iq", i, time.time_ns()), r.getsockname())
            _drain(r, got)
            if gap_s:
                time.sleep(gap_s)
        end = time.monotonic() + settle_s
        while time.monotonic() < end:
            _drain(r, got)
            time.sleep(0.005)
    return got


def _drain(r: socket.socket, got: list[tuple[int, float]]) -> None:
    while True:
        try:
            data, ancillary, _, _ = r.recvmsg(64, 256)
        except BlockingIOError:
            return
        i, sent_ns = struct.unpack("!Iq", data)
        [(_, _, stamp)] = [a for a in ancillary if a[1] == SO_TIMESTAMPNS]
        sec, nsec = struct.unpack("qq", stamp)
        got.append((i, (sec * 1_000_000_000 + nsec - sent_ns) / 1e9))


def within_binomial(count: int, n: int, percent: float, sds: float = 5.0) -> bool:
    p = percent / 100
    return abs(count - n * p) <= sds * math.sqrt(n * p * (1 - p))


def inject(c: Cluster, spec: str, seed: int = 1) -> tuple[object, dict]:
    fault = make_fault(spec)
    value = fault.inject(c, random.Random(seed), {})
    return fault, value


def hub_state(c: Cluster) -> str:
    """Everything a fault may leave in the hub: nft tables, qdiscs, iptables rules."""
    out = []
    for argv in (["nft", "list", "tables"], ["tc", "qdisc", "show"], ["iptables-save"]):
        done = run_in_netns(c.hub_netns, argv, capture_output=True, timeout=10)
        # iptables-save stamps its output with the time: comments are not state.
        out += [line for line in done.stdout.decode().splitlines() if not line.startswith("#")]
    return "\n".join(out)


def assert_clean(c: Cluster, fault: object) -> None:
    state = hub_state(c)
    assert "netdev fl_" not in state
    assert "htb" not in state
    assert "NFQUEUE" not in state and "FLQ" not in state
    helpers = [p for p in pids_in_netns(c.hub_netns)
               if b"netqueue_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert helpers == []


def test_loss_one_way_rate_within_bounds_and_heal(cluster: Cluster) -> None:
    before = hub_state(cluster)
    fault, value = inject(cluster, "packet:loss=20,links=link-one-way")
    a, b = value["links"][0]
    try:
        got = blast(cluster, a, b)
        back = blast(cluster, b, a, n=500)
    finally:
        healed = fault.heal(cluster)
    lost = N - len({i for i, _ in got})
    assert within_binomial(lost, N, 20), f"lost {lost}/{N}, asked 20%"
    assert len(back) == 500, "the other direction is untouched"
    assert healed["restored"] == [[a, b]]
    assert len(blast(cluster, a, b, n=500)) == 500
    assert_clean(cluster, fault)
    assert hub_state(cluster) == before


def test_duplicates_seen_at_the_asked_rate(cluster: Cluster) -> None:
    fault, value = inject(cluster, "packet:duplicate=30,links=link-one-way")
    a, b = value["links"][0]
    try:
        got = blast(cluster, a, b)
    finally:
        fault.heal(cluster)
    dups = len(got) - len({i for i, _ in got})
    assert len({i for i, _ in got}) == N
    assert within_binomial(dups, N, 30), f"{dups}/{N} duplicated, asked 30%"
    got = blast(cluster, a, b, n=500)
    assert len(got) == 500
    assert_clean(cluster, fault)


def test_loss_on_a_node_cuts_its_links_both_ways_only(cluster: Cluster) -> None:
    fault, value = inject(cluster, "packet:loss=100,links=isolate-one")
    node = value["nodes"][0]
    others = [n for n in cluster.names if n != node]
    try:
        to_node = blast(cluster, others[0], node, n=200, settle_s=0.1)
        from_node = blast(cluster, node, others[1], n=200, settle_s=0.1)
        between = blast(cluster, others[0], others[1], n=200, settle_s=0.1)
    finally:
        fault.heal(cluster)
    assert to_node == [] and from_node == []
    assert len(between) == 200
    with cluster.in_hub():
        assert echo(cluster.ip_of(node), 7000) == b"ping\n", "clients in the hub are not cut"


def delays_ms(got: list[tuple[int, float]]) -> list[float]:
    return [d * 1000 for _, d in got]


@needs_queue
def test_delay_seen_within_ten_percent_one_way_and_tcp_round_trip(cluster: Cluster) -> None:
    fault, value = inject(cluster, "packet:delay=50ms,links=link")
    a, b = value["nodes"]
    try:
        got = blast(cluster, a, b, n=300, gap_s=0.002)
        with in_netns(cluster.netns_of(a)):
            rtts = []
            for _ in range(10):
                t0 = time.monotonic()
                assert echo(cluster.ip_of(b), 7000, timeout=2) == b"ping\n"
                rtts.append((time.monotonic() - t0) * 1000)
    finally:
        healed = fault.heal(cluster)
    one_way = statistics.median(delays_ms(got))
    assert len(got) == 300
    assert min(delays_ms(got)) >= 49.0
    assert abs(one_way - 50) <= 5, f"median one-way {one_way:.1f} ms, asked 50"
    # A fresh connection: SYN, SYN-ACK, ACK + request, reply: 2 round trips of 2 x 50 ms.
    assert statistics.median(rtts) >= 200
    assert healed["queue"]["delayed"] >= 300
    after = statistics.median(delays_ms(blast(cluster, a, b, n=200)))
    assert after < 5, f"healed, yet {after:.1f} ms"
    assert_clean(cluster, fault)


@needs_queue
def test_jitter_spreads_delays_within_the_asked_band(cluster: Cluster) -> None:
    fault, value = inject(cluster, "packet:delay=40ms,jitter=20ms,links=link-one-way")
    a, b = value["links"][0]
    try:
        d = delays_ms(blast(cluster, a, b, n=400, gap_s=0.002))
    finally:
        fault.heal(cluster)
    assert len(d) == 400
    assert min(d) >= 19.0
    assert abs(statistics.median(d) - 40) <= 4
    # Uniform on [20, 60]: a standard deviation of 20/sqrt(3) = 11.5 ms.
    assert 8 <= statistics.stdev(d) <= 15


@needs_queue
def test_reorder_lets_packets_overtake(cluster: Cluster) -> None:
    fault, value = inject(cluster, "packet:reorder=25,delay=10ms,links=link-one-way")
    a, b = value["links"][0]
    try:
        got = blast(cluster, a, b, n=1000, gap_s=0.001)
    finally:
        healed = fault.heal(cluster)
    order = [i for i, _ in got]
    overtaken = sum(1 for x, y in zip(order, order[1:], strict=False) if y < x)
    assert len(set(order)) == 1000
    assert overtaken > 50, f"only {overtaken} of 1000 arrived before an earlier one"
    assert within_binomial(healed["queue"]["sent_at_once"], healed["queue"]["packets"], 25)
    order = [i for i, _ in blast(cluster, a, b, n=500, gap_s=0.001)]
    assert order == sorted(order), "healed: in order again"


def csum_errors(c: Cluster, node: str) -> int:
    with in_netns(c.netns_of(node)):
        lines = Path("/proc/thread-self/net/snmp").read_text().splitlines()
    udp = [line.split() for line in lines if line.startswith("Udp:")]
    return int(dict(zip(udp[0], udp[1], strict=True))["InCsumErrors"])


@needs_queue
def test_corruption_fails_the_receivers_checksum(cluster: Cluster) -> None:
    fault, value = inject(cluster, "packet:corrupt=20,links=link-one-way")
    a, b = value["links"][0]
    errors = csum_errors(cluster, b)
    try:
        got = blast(cluster, a, b, n=N)
    finally:
        healed = fault.heal(cluster)
    bad = csum_errors(cluster, b) - errors
    corrupted = healed["queue"]["corrupted"]
    assert within_binomial(corrupted, N, 20)
    # None gets through; most are counted as checksum errors, while a flip in
    # the UDP length (8 of the 20 bytes after the IP header here) fails
    # earlier, as a malformed datagram.
    assert len({i for i, _ in got}) == N - corrupted
    assert 0.6 * corrupted <= bad <= corrupted
    assert_clean(cluster, fault)


def tcp_throughput_bit(c: Cluster, src: str, dst: str, seconds: float = 3.0) -> float:
    """Bits per second a TCP flow src -> dst delivers (counted at the receiver)."""
    with in_netns(c.netns_of(dst)):
        server = socket.create_server((c.ip_of(dst), 5201))
    got = {"bytes": 0, "seconds": 0.0}

    def receive() -> None:
        conn, _ = server.accept()
        first = None
        with conn:
            while data := conn.recv(65536):
                first = first or time.monotonic()
                got["bytes"] += len(data)
        got["seconds"] = time.monotonic() - (first or time.monotonic())

    receiver = threading.Thread(target=receive)
    receiver.start()
    try:
        with in_netns(c.netns_of(src)):
            conn = socket.create_connection((c.ip_of(dst), 5201), timeout=10)
        with conn:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                conn.sendall(b"x" * 16384)
    finally:
        receiver.join(timeout=60)
        server.close()
    return got["bytes"] * 8 / max(got["seconds"], 1e-9)


def test_bandwidth_caps_the_rate_and_heal_lifts_it(cluster: Cluster) -> None:
    fault, value = inject(cluster, "bandwidth:rate=2mbit,links=link-one-way")
    a, b = value["links"][0]
    try:
        capped = tcp_throughput_bit(cluster, a, b, seconds=2)
    finally:
        fault.heal(cluster)
    assert 0.5e6 <= capped <= 2e6 * 1.02, f"{capped / 1e6:.2f} Mbit/s under a 2mbit cap"
    free = tcp_throughput_bit(cluster, a, b, seconds=1)
    assert free > 20e6
    assert_clean(cluster, fault)


@needs_queue
def test_combined_settings_and_replayed_params_apply_exactly(cluster: Cluster) -> None:
    """A recorded inject value, played again, acts on the same links with the same settings."""
    fault, value = inject(cluster, "packet:loss=100,delay=20ms,links=link-one-way", seed=5)
    fault.heal(cluster)
    replay = make_fault("packet")     # a replay builds the spec and hands it the recorded value
    again = replay.inject(cluster, random.Random(999), value)
    a, b = again["links"][0]
    try:
        assert again["links"] == value["links"] and again["quality"] == value["quality"]
        assert blast(cluster, a, b, n=200, settle_s=0.2) == []
    finally:
        replay.heal(cluster)
    assert_clean(cluster, replay)


@needs_queue
def test_the_queue_dies_with_the_thread_that_started_it(cluster: Cluster) -> None:
    """A harness SIGKILLed mid-fault leaves no queue process behind (nor its
    rules: they live in the hub, which the sweeper removes)."""
    started: dict[str, QueueProcess] = {}
    starter = threading.Thread(target=lambda: started.update(
        q=QueueProcess(cluster.hub_netns, 4999, {"delay": 5.0}, 1)))
    starter.start()
    starter.join()
    assert started["q"].proc.wait(timeout=10) == -signal.SIGKILL
