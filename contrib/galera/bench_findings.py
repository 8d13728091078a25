"""How often each Galera finding shows: N seeded runs of one configuration,
each judged; prints per run the exit, Elle's anomaly counts (the cycles
that make a lost update, and those that need a real-time edge: stale reads)
and the acknowledged appends the final reads lack, then K/N invalid. Uses
only the `faultline` CLI.

    python contrib/galera/bench_findings.py --runs 5                         # healthy, defaults
    python contrib/galera/bench_findings.py --runs 5 --node-option innodb_snapshot_isolation=true
    python contrib/galera/bench_findings.py --runs 5 --nemesis lose-unsynced:all \\
        --time-limit 40 --nemesis-interval 15 [--node-option innodb_flush_log_at_trx_commit=1]

Needs root, mariadb-server, galera-4 and rsync, and this plugin installed
(pip install -e contrib/galera).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Single-key cycles of one rw and one ww edge: a txn read a key, missed a
# write, then wrote the key over it (Jepsen's P4, Lost Update).
LOST_UPDATE_KINDS = ("lost-update", "G-single-item")
# Cycles with one rw edge that exist only with the process or real-time
# order: a read missed a write that its own process had made before, or that
# had committed before it began (a stale read).
STALE_KINDS = ("G-single-item-process", "G-single-item-realtime",
               "G-single-process", "G-single-realtime")


# The checker that runs Elle on each workload's transactions.
ELLE_CHECKERS = ("elle", "rw-register")


def elle_verdict(verdicts: dict) -> dict:
    """Elle's verdict, whichever workload's checker gave it (pure)."""
    checkers = verdicts.get("checkers") or {}
    return next((checkers[name] for name in ELLE_CHECKERS if checkers.get(name)), {})


def summarize(verdicts: dict) -> dict:
    """What one run's verdicts show (pure): Elle's anomaly counts (Elle
    stops counting a kind at its list's cap), the lost-update cycles, the
    stale-read ones, G2-item (two or more rw edges: what snapshot isolation
    allows and repeatable read does not), acknowledged and lost appends."""
    checkers = verdicts.get("checkers") or {}
    elle = elle_verdict(verdicts).get("stats") or {}
    counts = elle.get("anomaly_counts") or {}
    durability = checkers.get("durability") or {}
    stats = durability.get("stats") or {}
    lost = sum(1 for a in durability.get("anomalies") or [] if a.get("type") == "lost-write")
    return {
        "anomalies": dict(counts),
        "lost_update": sum(counts.get(k, 0) for k in LOST_UPDATE_KINDS),
        "stale": sum(counts.get(k, 0) for k in STALE_KINDS),
        "g2_item": counts.get("G2-item", 0),
        "acked": (stats.get("writes") or {}).get("ok", 0),
        "lost": f"at least {lost}" if stats.get("anomalies_omitted") else str(lost),
        "not": elle.get("not") or [],
    }


def spread(anomalies: list[dict], node_of: dict[int, str | None],
           kinds: tuple[str, ...] = LOST_UPDATE_KINDS) -> dict[str, int]:
    """Of the listed anomalies of these kinds, how many had every txn on one
    node and how many spanned nodes (pure; node_of: completion index -> node)."""
    out = {"one_node": 0, "across_nodes": 0}
    for a in anomalies:
        if a.get("type") not in kinds:
            continue
        txns = a.get("txns") or a.get("cycle") or []
        nodes = {node_of.get(t.get("completion")) for t in txns}
        if nodes:
            out["one_node" if len(nodes) == 1 else "across_nodes"] += 1
    return out


def nodes_by_completion(run_dir: Path) -> dict[int, str | None]:
    from checkers.rundir import load_run
    return {op.index: op.node for op in load_run(run_dir).history.ops}


def one_run(seed: int, args: argparse.Namespace, results: Path) -> tuple[int, dict, Path]:
    argv = [sys.executable, "-m", "harness", "run", "--system", "galera",
            "--workload", args.workload, "--nemesis", args.nemesis, "--seed", str(seed),
            "--time-limit", str(args.time_limit), "--nemesis-interval", str(args.nemesis_interval),
            "--client-option", f"isolation={args.isolation}",
            "--consistency-model", args.model or args.isolation, "--results", str(results)]
    for option in args.node_option:
        argv += ["--node-option", option]
    proc = subprocess.run(argv, capture_output=True, text=True)
    found = re.search(r"verdict: \w+\s+\((.+)\)", proc.stdout)
    if not found:
        # A run that never got a verdict (a harness error: 255) is a row of
        # its own, counted, never dropped.
        last = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
        return proc.returncode, {"error": last[0]}, results
    run_dir = Path(found.group(1))
    return proc.returncode, json.loads((run_dir / "verdicts.json").read_text()), run_dir


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--workload", default="list-append")
    p.add_argument("--nemesis", default="none")
    p.add_argument("--isolation", default="repeatable-read")
    p.add_argument("--model", default=None, help="Elle's model (default: the isolation's)")
    p.add_argument("--node-option", action="append", default=[])
    p.add_argument("--time-limit", type=float, default=30)
    p.add_argument("--nemesis-interval", type=float, default=15)
    p.add_argument("--results", type=Path, default=None)
    p.add_argument("--table", type=Path, default=None,
                   help="print the rows of the runs already in this results dir, run nothing")
    args = p.parse_args()
    if args.table is not None:
        for run_dir in sorted(d for d in args.table.iterdir() if (d / "verdicts.json").exists()):
            verdicts = json.loads((run_dir / "verdicts.json").read_text())
            config = json.loads((run_dir / "run.json").read_text())["config"]
            s = summarize(verdicts)
            elle = elle_verdict(verdicts)
            node_of = nodes_by_completion(run_dir)
            where = spread(elle.get("anomalies") or [], node_of)
            g2 = spread(elle.get("anomalies") or [], node_of, ("G2-item",))
            print(f"seed {config['seed']}: valid {verdicts.get('valid')}, lost-update "
                  f"{s['lost_update']} (listed {where['one_node']} one node, "
                  f"{where['across_nodes']} across), stale {s['stale']}, G2-item {s['g2_item']} "
                  f"(listed {g2['one_node']} one node, {g2['across_nodes']} across), "
                  f"internal {s['anomalies'].get('internal', 0)}, lost {s['lost']}/{s['acked']}, "
                  f"not {s['not']}")
        return 0
    results = args.results or Path(tempfile.mkdtemp(prefix="galera-bench-"))
    invalid = errors = 0
    for seed in range(args.first_seed, args.first_seed + args.runs):
        code, verdicts, run_dir = one_run(seed, args, results)
        if "error" in verdicts:
            errors += 1
            print(f"seed {seed}: exit {code}, no verdict: {verdicts['error']}", flush=True)
            continue
        s = summarize(verdicts)
        elle = elle_verdict(verdicts)
        where = spread(elle.get("anomalies") or [], nodes_by_completion(run_dir))
        invalid += code == 1
        print(f"seed {seed}: exit {code}, lost-update cycles {s['lost_update']} "
              f"(listed: {where['one_node']} on one node, {where['across_nodes']} across), "
              f"stale reads {s['stale']}, G2-item {s['g2_item']}, "
              f"{s['lost']}/{s['acked']} acknowledged appends lost, not {s['not']}, "
              f"anomalies {s['anomalies']} ({run_dir.name})",
              flush=True)
    print(f"galera {args.workload} x {args.nemesis} {' '.join(args.node_option)} "
          f"isolation={args.isolation}: invalid in {invalid}/{args.runs} runs, "
          f"{errors} without a verdict "
          f"(results in {results})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
