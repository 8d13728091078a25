"""`python -m nodes.raft --id n1 ...` runs a node; `python -m nodes.raft dump DIR --out F`
dumps; `python -m nodes.raft format DIR [--cluster-id ID]` formats a data dir (a new
cluster id when none is given) and prints its cluster id."""

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


def main(argv: list[str]) -> None:
    if argv[:1] == ["dump"]:
        dump_main(argv[1:])
    elif argv[:1] == ["format"]:
        format_main(argv[1:])
    else:
        node_main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
