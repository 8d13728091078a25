"""`python -m nodes.raft --id n1 ...` runs a node; `python -m nodes.raft dump DIR --out F`
dumps; `python -m nodes.raft format DIR [--cluster-id ID]` formats a data dir (a new
cluster id when none is given) and prints its cluster id; `python -m nodes.raft
simulate RUN_DIR` plays a run's executed fault schedule on the simulation."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from nodes.raft import bugs
from nodes.raft.client import parse_address


def parse_peers(text: str) -> dict[str, tuple[str, int]]:
    peers = {}
    for item in text.split(","):
        name, sep, address = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"peer {item!r} is not NAME=HOST:PORT")
        peers[name] = parse_address(address)
    return peers


def node_main(argv: list[str]) -> None:
    from nodes.raft.server import NodeOptions, run

    p = argparse.ArgumentParser(prog="python -m nodes.raft")
    p.add_argument("--id", required=True)
    p.add_argument("--cluster-id", required=True)
    p.add_argument("--listen", required=True, type=parse_address, help="HOST:PORT")
    p.add_argument("--peers", required=True, type=parse_peers, help="n1=HOST:PORT,...")
    p.add_argument("--data-dir", required=True, type=Path)
    p.add_argument("--tick-ms", type=int, default=50)
    p.add_argument("--bug", action="append", default=[], help="bug switch (repeatable)")
    p.add_argument("--request-timeout-ms", type=int, default=5000)
    p.add_argument("--seed", type=int, default=None, help="election timer rng seed")
    p.add_argument("--voters", default=None,
                   help="bootstrap voters n1,n2,... (default: every peer); a peer not "
                        "among them starts as an observer (KIP-853)")
    p.add_argument("--auto-join", action="store_true",
                   help="an observer asks the leader to make it a voter (KIP-853 auto-join)")
    args = p.parse_args(argv)
    if args.id not in args.peers:
        p.error(f"--peers must include this node ({args.id})")
    voters = tuple(sorted(args.peers))
    if args.voters is not None:
        voters = tuple(sorted(v for v in args.voters.split(",") if v))
        if not voters or not set(voters) <= set(args.peers):
            p.error("--voters must name one or more of the --peers")
    try:
        bug_switches = bugs.validate(args.bug)
    except bugs.UnknownBug as e:
        p.error(str(e))
    run(NodeOptions(
        node_id=args.id,
        cluster_id=args.cluster_id,
        listen=args.listen,
        peers=args.peers,
        data_dir=args.data_dir,
        tick_ms=args.tick_ms,
        bugs=bug_switches,
        voters=voters,
        auto_join=args.auto_join,
        request_timeout_s=args.request_timeout_ms / 1000,
        seed=args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big"),
    ))


def dump_main(argv: list[str]) -> None:
    from nodes.raft.dump import write_dump

    p = argparse.ArgumentParser(prog="python -m nodes.raft dump")
    p.add_argument("data_dir", type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--node", default=None, help="node name (default: the data dir's name)")
    args = p.parse_args(argv)
    write_dump(args.data_dir, args.out, args.node)


def format_main(argv: list[str]) -> None:
    from nodes.raft import storage

    p = argparse.ArgumentParser(prog="python -m nodes.raft format")
    p.add_argument("data_dir", type=Path)
    p.add_argument("--cluster-id", default=None,
                   help="the cluster to format for (default: a new random id, KIP-595)")
    args = p.parse_args(argv)
    cluster_id = args.cluster_id or storage.new_cluster_id()
    try:
        storage.format_data_dir(args.data_dir, cluster_id)
    except storage.FormatError as e:
        p.error(str(e))
    print(cluster_id)


def simulate_main(argv: list[str]) -> None:
    import json

    from nodes.raft.schedule_sim import regression_test, reproduce, scenario_from_run

    p = argparse.ArgumentParser(
        prog="python -m nodes.raft simulate",
        description="Play a raft run's executed fault schedule on the deterministic "
                    "simulation, with the run's bug switches, on several simulation seeds; "
                    "say on how many the simulation's safety checks fail, and on how many "
                    "the correct build's do. Exit 0 reproduced, 2 not reproduced, 254 bad "
                    "input.")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--seeds", type=int, default=10, help="simulation seeds 0..N-1 (default 10)")
    p.add_argument("--write-test", type=Path, metavar="FILE",
                   help="write a pytest regression test of the seeds that reproduced")
    args = p.parse_args(argv)
    if not 1 <= args.seeds <= 10_000:
        p.error("--seeds must be from 1 to 10000")
    try:
        run = json.loads((args.run_dir / "run.json").read_text())
    except (OSError, ValueError) as e:
        print(f"simulate: cannot read {args.run_dir / 'run.json'}: {e}", file=sys.stderr)
        sys.exit(254)
    from nodes.raft.db import RaftDB
    if (run.get("config") or {}).get("db") not in (None, RaftDB.kind):
        print("simulate: only a raft run's schedule can be simulated", file=sys.stderr)
        sys.exit(254)
    scenario = scenario_from_run(run)
    seeds = range(args.seeds)
    with_bugs = reproduce(scenario, seeds)
    correct = reproduce(scenario, seeds, bugs=()) if scenario.bugs else with_bugs
    hits = [o.seed for o in with_bugs if o.reproduced]
    print(f"simulate: {len(scenario.steps)} fault steps over {scenario.ticks} ticks, switches "
          f"{', '.join(scenario.bugs) or 'none'}; reproduced on {len(hits)} of {args.seeds} "
          "simulation seeds")
    for o in with_bugs:
        if o.reproduced:
            print(f"  seed {o.seed}: {o.violations[0]}"
                  + (f" (+{len(o.violations) - 1} more)" if len(o.violations) > 1 else ""))
    if scenario.bugs:
        bad = sum(o.reproduced for o in correct)
        print(f"simulate: the correct build fails on {bad} of {args.seeds} seeds")
    for note in scenario.skipped:
        print(f"simulate: not simulated: {note}")
    if args.write_test is not None and hits:
        args.write_test.write_text(regression_test(scenario, hits))
        print(f"simulate: regression test written to {args.write_test}")
    sys.exit(0 if hits else 2)


def main(argv: list[str]) -> None:
    if argv[:1] == ["dump"]:
        dump_main(argv[1:])
    elif argv[:1] == ["format"]:
        format_main(argv[1:])
    elif argv[:1] == ["simulate"]:
        simulate_main(argv[1:])
    else:
        node_main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
