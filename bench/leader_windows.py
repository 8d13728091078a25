"""How long each cut-off raft leader stayed leader, against its own timers'
measured lateness: the figures behind invariants' `stranded-leader` limit.

For every window in which a leader was cut off from a majority (the rule's
own spans, at limit 0), prints how long it stayed, the lateness its
`tick_late` lines put inside the window, the limit the rule allows (fetch
timeout + that lateness + the margin) and what is left of the margin. Ends
with the longest stay, the largest stay minus lateness and the windows past
a constant limit (the old 1.25 s), if given.

Prints figures; asserts nothing. Usage:
    python bench/leader_windows.py RUN_DIR... [--constant-s 1.25]
"""

from __future__ import annotations

import argparse

from checkers.rundir import load_run
from nodes.raft.checkers import invariants
from nodes.raft.checkers.lateness import late_spans, late_within, timer_margin_ns

NS = 1e9


def windows(run_dir: str) -> list[dict]:
    r = load_run(run_dir)
    events, start_ns = r.events, r.run["start_monotonic_ns"]
    timers = invariants.node_timers(events)
    nodes = sorted(events)
    found = invariants.stranded_leaders(
        events, invariants.fault_timeline(r.history.ops, nodes), nodes, start_ns, 0,
        invariants.voters_in_force(events, start_ns),
        process_taken=invariants.fault_timeline(r.history.ops, nodes, certain=False))
    late, margin = late_spans(events, start_ns), timer_margin_ns(events)
    fetch = (timers or {}).get("fetch_timeout_ms", 0) * 1_000_000
    out = []
    for a in found:
        lo, hi = (int(x * NS) for x in a["still_leader_s"])
        behind = late_within(late.get(a["node"], []), lo, hi)
        out.append({"run": run_dir, "node": a["node"], "epoch": a["epoch"],
                    "stayed_s": (hi - lo) / NS, "late_s": behind / NS,
                    "limit_s": (fetch + behind + margin) / NS,
                    "margin_left_s": (fetch + behind + margin - (hi - lo)) / NS})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--constant-s", type=float, default=1.25)
    args = parser.parse_args()
    rows = [w for run in args.runs for w in windows(run)]
    for w in rows:
        print(f"{w['run']} {w['node']} epoch {w['epoch']}: stayed {w['stayed_s']:.3f} s, "
              f"late {w['late_s']:.3f} s, limit {w['limit_s']:.3f} s, "
              f"margin left {w['margin_left_s']:.3f} s")
    if rows:
        print(f"{len(rows)} windows; longest stay {max(w['stayed_s'] for w in rows):.3f} s; "
              f"largest stay minus lateness "
              f"{max(w['stayed_s'] - w['late_s'] for w in rows):.3f} s; "
              f"past the limit {sum(w['margin_left_s'] < 0 for w in rows)}; "
              f"past a constant {args.constant_s} s "
              f"{sum(w['stayed_s'] > args.constant_s for w in rows)}")


if __name__ == "__main__":
    main()
