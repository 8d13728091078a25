"""The packet queue the harness runs for delay, jitter, reorder and corruption
(this kernel has no netem): `python -m nemesis.netqueue_main '<json>'`, started
in the hub namespace by nemesis.netshape, bound to one NFQUEUE number that an
iptables rule feeds with the packets of the faulted links.

Each packet gets a release time: now + delay (+- jitter, uniform), or now for
the reorder share that goes at once; a corrupted one has one random bit past
its IP header flipped (its checksum then no longer matches, so the receiver
drops it, as netem's corruption does). Packets are released in release-time
order from one loop that sleeps until the next is due. Prints `ready` once
bound; on SIGTERM releases what it holds, prints its counts as one JSON line
and exits.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import random
import select
import signal
import sys
import time
from typing import Any

# Packets the kernel keeps queued for us before it lets them bypass the queue
# (--queue-bypass: past this, packets pass undelayed rather than drop).
MAX_QUEUED = 65536


class Delayer:
    """Decides each packet's fate; pure but for the rng and the clock it is given."""

    def __init__(self, settings: dict[str, float], rng: random.Random) -> None:
        self.delay_s = settings.get("delay", 0.0) / 1000
        self.jitter_s = settings.get("jitter", 0.0) / 1000
        self.reorder = settings.get("reorder", 0.0) / 100
        self.corrupt = settings.get("corrupt", 0.0) / 100
        self.rng = rng
        self.counts = {"packets": 0, "delayed": 0, "sent_at_once": 0, "corrupted": 0}

    def release_at(self, now: float) -> float:
        self.counts["packets"] += 1
        if self.reorder and self.rng.random() < self.reorder:
            self.counts["sent_at_once"] += 1
            return now
        if self.delay_s <= 0:
            return now
        self.counts["delayed"] += 1
        jitter = self.rng.uniform(-self.jitter_s, self.jitter_s) if self.jitter_s else 0.0
        return now + max(0.0, self.delay_s + jitter)

    def corrupted(self, packet: bytes) -> bytes | None:
        """The packet with one bit flipped past its IP header, or None (left alone)."""
        if not self.corrupt or self.rng.random() >= self.corrupt:
            return None
        header = (packet[0] & 0x0F) * 4 if packet else 0
        if len(packet) <= header:
            return None
        bit = self.rng.randrange(header * 8, len(packet) * 8)
        flipped = bytearray(packet)
        flipped[bit // 8] ^= 1 << (bit % 8)
        self.counts["corrupted"] += 1
        return bytes(flipped)


def serve(queue_num: int, delayer: Delayer) -> dict[str, int]:
    from netfilterqueue import NetfilterQueue

    held: list[tuple[float, int, Any]] = []
    order = itertools.count()
    stopping = False

    def on_packet(packet: Any) -> None:
        now = time.monotonic()
        if delayer.corrupt:
            flipped = delayer.corrupted(packet.get_payload())
            if flipped is not None:
                packet.set_payload(flipped)
        due = delayer.release_at(now)
        if due <= now:
            packet.accept()
        else:
            packet.retain()
            heapq.heappush(held, (due, next(order), packet))

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    queue = NetfilterQueue()
    queue.bind(queue_num, on_packet, max_len=MAX_QUEUED)
    fd = queue.get_fd()
    print("ready", flush=True)
    try:
        while not stopping:
            now = time.monotonic()
            while held and held[0][0] <= now:
                heapq.heappop(held)[2].accept()
            timeout = min(max(0.0, held[0][0] - time.monotonic()), 0.5) if held else 0.5
            try:
                readable, _, _ = select.select([fd], [], [], timeout)
            except InterruptedError:
                continue
            if readable:
                queue.run(block=False)
    finally:
        while held:
            heapq.heappop(held)[2].accept()
        queue.unbind()
    return delayer.counts


def main(argv: list[str]) -> int:
    args = json.loads(argv[0])
    # Its wake-ups are the delays: on a machine loaded by the system under
    # test, a queue at the default priority oversleeps (docs/faults.md). It
    # sleeps between packets, so a real-time class costs others little.
    if args.get("realtime"):
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(int(args["realtime"])))
        except OSError:
            pass
    if args.get("nice"):
        try:
            os.nice(int(args["nice"]))
        except OSError:
            pass
    counts = serve(int(args["queue"]), Delayer(args["quality"], random.Random(args["seed"])))
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
