"""One node: a redis-server and its sentinel, started and ended together.

faultline runs one process per node and signals its whole process tree (kill,
pause, resume), so this parent only starts both children and exits as soon as
either does, taking the other with it. A kill that reaches the parent alone
(the kernel's OOM killer under the memory fault) takes the children too: they
die with it (PR_SET_PDEATHSIG), rather than live on holding the node's ports,
so that the node's restart finds them free."""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

# Not faultline's own (nemesis.netns): this process stays off faultline's
# imports, which cost 0.4-2.5 s at every start of a node (measured
# 2026-11-27), and the plugin reaches faultline only through its public API.
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """In a child, before exec: SIGKILL me when this parent exits."""
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(err)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--redis-server", required=True)
    p.add_argument("--server-conf", required=True)
    p.add_argument("--sentinel-conf", required=True)
    args = p.parse_args(argv)
    children = [subprocess.Popen([args.redis_server, args.server_conf],
                                 preexec_fn=die_with_parent),
                subprocess.Popen([args.redis_server, args.sentinel_conf, "--sentinel"],
                                 preexec_fn=die_with_parent)]

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
