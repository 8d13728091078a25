"""One node: a redis-server and its sentinel, started and ended together.

faultline runs one process per node and signals its whole process tree (kill,
pause, resume), so this parent only starts both children and exits as soon as
either does, taking the other with it."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--redis-server", required=True)
    p.add_argument("--server-conf", required=True)
    p.add_argument("--sentinel-conf", required=True)
    args = p.parse_args(argv)
    children = [subprocess.Popen([args.redis_server, args.server_conf]),
                subprocess.Popen([args.redis_server, args.sentinel_conf, "--sentinel"])]

    def stop(signum: int, _frame: object) -> None:
        for child in children:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while all(child.poll() is None for child in children):
        time.sleep(0.2)
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()
    return 1


if __name__ == "__main__":
    sys.exit(main())
