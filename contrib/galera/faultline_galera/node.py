"""One node's starter: it becomes the node's mariadbd (exec), after deciding
how that server should start.

- The run's first start of the first node makes the cluster (--wsrep-new-cluster).
- Any other start joins, if some other node is a member of a primary
  component.
- If none is (every node went down at once: a power cut of all), it does
  what MariaDB documents for a whole-cluster restart: recover its own last
  committed seqno (`mariadbd --wsrep-recover`), post it where the other
  nodes' starters see it (the run's data root: the operator's notebook, off
  the nodes' disks), wait for every node's, and the most advanced node
  bootstraps while the others join. Galera's own pc.recovery would need
  gvwstate.dat, which a power cut can take with it."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pymysql

from faultline_galera.config import DATABASE, USER
from faultline_galera.recovery import bootstrapper, recovered_position, safe_to_bootstrap

PROBE_TIMEOUT_S = 1.0
# How long a starter waits for the other nodes' recovered positions.
GATHER_TIMEOUT_S = 90.0
# Posts count from this long before this starter began: the nodes of one
# whole-cluster restart start within a moment of each other, and a post from
# an earlier restart (power cuts can come seconds apart) must not count.
SLACK_S = 2.0


def primary_member(host: str, port: int) -> bool:
    try:
        conn = pymysql.connect(host=host, port=port, user=USER, database=DATABASE,
                               connect_timeout=PROBE_TIMEOUT_S, read_timeout=PROBE_TIMEOUT_S)
    except pymysql.MySQLError:
        return False
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_cluster_status'")
            row = cur.fetchone()
            return row is not None and row[1] == "Primary"
    except pymysql.MySQLError:
        return False
    finally:
        conn.close()


def recover(server: str, conf: str, user: str, log: Path) -> int:
    """This node's last committed seqno, as InnoDB recovers it."""
    with open(log, "w") as out:
        subprocess.run([server, f"--defaults-file={conf}", f"--user={user}", "--wsrep-recover",
                        f"--log-error={log}"], stdout=out, stderr=subprocess.STDOUT,
                       timeout=300, check=False)
    position = recovered_position(log.read_text(errors="replace"))
    return position[1] if position is not None else -1


def posted(board: Path, names: list[str], since: float) -> dict[str, int]:
    found = {}
    for name in names:
        try:
            doc = json.loads((board / f"{name}.json").read_text())
        except (OSError, ValueError):
            continue
        if doc.get("wall", 0) >= since:
            found[name] = int(doc["seqno"])
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--conf", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--datadir", required=True)
    p.add_argument("--board", required=True, help="dir where starters post positions")
    p.add_argument("--peer", action="append", default=[], help="NAME=HOST:PORT, every node")
    p.add_argument("--new-cluster", action="store_true")
    p.add_argument("--restart", action="store_true",
                   help="not the run's first start: recover if no node is primary")
    args = p.parse_args(argv)
    server = [args.server, f"--defaults-file={args.conf}", f"--user={args.user}"]
    if args.new_cluster:
        os.execv(args.server, [*server, "--wsrep-new-cluster"])
    if not args.restart:
        os.execv(args.server, server)
    peers = {}
    for spec in args.peer:
        name, address = spec.split("=", 1)
        host, port = address.rsplit(":", 1)
        peers[name] = (host, int(port))
    others = [n for n in peers if n != args.name]
    board = Path(args.board)
    mine = board / f"{args.name}.json"
    if any(primary_member(*peers[n]) for n in others):
        os.execv(args.server, server)
    board.mkdir(exist_ok=True)
    started = time.time()
    seqno = recover(args.server, args.conf, args.user, Path(args.datadir).parent / "recover.log")
    mine.write_text(json.dumps({"seqno": seqno, "wall": time.time()}))
    print(f"galera starter: {args.name} recovered seqno {seqno}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + GATHER_TIMEOUT_S
    names = list(peers)
    while time.monotonic() < deadline:
        positions = posted(board, names, started - SLACK_S)
        if len(positions) == len(names):
            break
        if any(primary_member(*peers[n]) for n in others):
            os.execv(args.server, server)
        time.sleep(0.5)
    positions = posted(board, names, started - SLACK_S)
    chosen = bootstrapper(positions, names) if positions else args.name
    print(f"galera starter: positions {positions}, bootstrapping from {chosen}",
          file=sys.stderr, flush=True)
    if chosen == args.name:
        grastate = Path(args.datadir) / "grastate.dat"
        if grastate.exists():
            grastate.write_text(safe_to_bootstrap(grastate.read_text()))
        os.execv(args.server, [*server, "--wsrep-new-cluster"])
    os.execv(args.server, server)
    return 1


if __name__ == "__main__":
    sys.exit(main())
