"""Histories with a known-good answer, for tests and benchmarks: list-append (or rw-register)
transactions run one at a time against an in-memory store, each at an
instant between its invoke and its completion, by concurrent client processes.
Such a history is strict-serializable by construction, so any anomaly the
checker reports on it is the checker's bug.

`p_stale` plants a bug: that share of reads return a stale prefix, which
makes the history invalid (for benchmarks of histories with anomalies).

Keys rotate (as in Jepsen's list-append generator): once a key has had
`max_writes_per_key` appends a fresh key takes its place, which keeps reads
short however long the history is.
"""

from __future__ import annotations

import heapq
import random
from typing import Any

from checkers.history import Op


def serial_history(n_txns: int, *, keys: int = 10, concurrency: int = 10,
                   max_writes_per_key: int = 256, max_mops: int = 4,
                   p_fail: float = 0.0, p_info: float = 0.0, p_stale: float = 0.0,
                   registers: bool = False, rng: random.Random | None = None) -> list[Op]:
    """`registers`: rw-register txns ([w k v] / [r k v], nil before the first
    write) instead of list-append ones."""
    rng = rng or random.Random(0)
    active = list(range(keys))
    next_key = keys
    writes = dict.fromkeys(active, 0)
    store: dict[int, list[int]] = {}
    next_value = 0
    ops: list[Op] = []
    # (time, seq, event, slot, payload); seq keeps ties in a fixed order
    events: list[tuple[int, int, str, int, Any]] = []
    seq = 0
    process = list(range(concurrency))
    next_process = concurrency
    started = 0

    def push(t: int, event: str, slot: int, payload: Any) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, event, slot, payload))
        seq += 1

    def emit(t: int, p: int, typ: str, value: Any) -> None:
        ops.append(Op(len(ops), t, p, typ, "txn", value))

    def new_txn() -> list[list[Any]]:
        nonlocal next_value, next_key
        mops = []
        for _ in range(rng.randint(1, max_mops)):
            i = rng.randrange(len(active))
            k = active[i]
            if rng.random() < 0.5:
                mops.append(["r", k, None])
            else:
                mops.append(["w" if registers else "append", k, next_value])
                next_value += 1
                writes[k] += 1
                if writes[k] >= max_writes_per_key:
                    active[i] = next_key
                    writes[next_key] = 0
                    next_key += 1
        return mops

    for slot in range(concurrency):
        push(rng.randint(0, 100), "invoke", slot, None)
    while events:
        t, _, event, slot, payload = heapq.heappop(events)
        if event == "invoke":
            if started >= n_txns:
                continue
            started += 1
            mops = new_txn()
            emit(t, process[slot], "invoke", [list(m) for m in mops])
            outcome = rng.random()
            status = "fail" if outcome < p_fail else "info" if outcome < p_fail + p_info else "ok"
            push(t + rng.randint(1, 1000), "apply", slot, (mops, status))
        elif event == "apply":
            mops, status = payload
            applies = status == "ok" or (status == "info" and rng.random() < 0.5)
            result = []
            for f, k, v in mops:
                if f != "r":
                    if applies:
                        store.setdefault(k, []).append(v)
                    result.append([f, k, v])
                else:
                    seen = list(store.get(k, ())) if applies else None
                    if seen and rng.random() < p_stale:  # a buggy store: an old snapshot
                        seen = seen[:rng.randrange(len(seen))]
                    if registers and seen is not None:  # a register holds its last write
                        seen = seen[-1] if seen else None
                    result.append([f, k, seen])
            push(t + rng.randint(1, 1000), "complete", slot, (mops, status, result))
        else:
            mops, status, result = payload
            value = result if status == "ok" else [list(m) for m in mops]
            emit(t, process[slot], status, value)
            if status == "info":  # a process whose op is indeterminate never issues again
                process[slot] = next_process
                next_process += 1
            push(t + rng.randint(0, 200), "invoke", slot, None)
    return ops
