"""How long a real `faultline run` takes to stop on Ctrl-C or SIGTERM, with its
data dirs on LazyFS (a power-cut nemesis) or not. Needs root.

    .venv/bin/python bench/stop_run.py [--tries 3] [--signal INT|TERM] [--nemesis SPEC]

Each try starts a 3-node run, waits until its workload has run 5 s, sends the
signal and times the harness's exit; it prints that time, the load average,
and anything of the run still alive (there should be nothing). FAULTLINE_STATE_DIR
is honoured, as by the harness.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.run.resources import NETNS_DIR, mounted_paths  # noqa: E402


def sigint_at_default() -> None:
    # A background job inherits SIGINT ignored, and Python then never raises Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(results: Path, nemesis: str, seed: int) -> tuple[subprocess.Popen[bytes], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--nodes", "3", "--concurrency", "3",
         "--rate", "100", "--time-limit", "120", "--nemesis", nemesis,
         "--nemesis-interval", "2", "--seed", str(seed), "--results", str(results)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
        preexec_fn=sigint_at_default)
    while True:
        for run_json in results.glob("*/run.json"):
            try:
                if json.loads(run_json.read_text()).get("start_monotonic_ns"):
                    return proc, run_json.parent
            except ValueError:
                pass
        if proc.poll() is not None:
            raise SystemExit(f"the run exited ({proc.returncode}) before its workload began")
        time.sleep(0.2)


def left_of(run_id: str) -> list[str]:
    left = [f"pid {p.pid}" for p in psutil.process_iter(["cmdline"])
            if run_id in " ".join(p.info["cmdline"] or [])]
    if NETNS_DIR.exists():
        left += [f"netns {n}" for n in os.listdir(NETNS_DIR) if run_id in n]
    return left + [f"mount {m}" for m in mounted_paths()
                   if run_id in m and not m.startswith(str(NETNS_DIR))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    ap.add_argument("--nemesis", default="power-cut-after-commit")
    args = ap.parse_args()
    sig = signal.SIGINT if args.signal == "INT" else signal.SIGTERM
    times = []
    for i in range(args.tries):
        with tempfile.TemporaryDirectory(prefix="faultline-bench-stop-") as tmp:
            proc, run_dir = start(Path(tmp), args.nemesis, seed=7 + i)
            time.sleep(5)
            t0 = time.monotonic()
            proc.send_signal(sig)
            proc.wait()
            times.append(time.monotonic() - t0)
            status = json.loads((run_dir / "run.json").read_text())["status"]
            print(f"try {i + 1}: SIG{args.signal} to exit {times[-1]:6.2f} s  exit "
                  f"{proc.returncode}  {status}  load {os.getloadavg()[0]:.1f}  "
                  f"left: {', '.join(left_of(run_dir.name)) or 'nothing'}", flush=True)
    print(f"{args.nemesis}, SIG{args.signal}: min {min(times):.2f} s  max {max(times):.2f} s "
          f"(n={len(times)}; wall time on a shared machine: see the load)")


if __name__ == "__main__":
    main()
