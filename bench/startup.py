"""Start-up cost of the command line: wall and CPU time of a few commands
that do little but import, and how many modules each imports (pyroute2
among them?).

    .venv/bin/python bench/startup.py [--runs 15] [--repo DIR ...]

Each `--repo` is a checkout with its own .venv (this one by default); given
two (main and a branch), their runs alternate, so both see the same load.
Times are medians of `--runs` runs: compare figures of one sitting, not
across days (CPU time, user + system, moves less with the load than wall).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from corpus_dir import corpus

HERE = Path(__file__).resolve().parents[1]
HISTORY = "reg-1key-500-info5-seed1.msgpack"

# What each command imports, printed by the child after it ran.
PROBE = ("import sys, io, contextlib\nfrom harness.cli import main\n"
         "with contextlib.redirect_stdout(io.StringIO()):\n"
         "    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
         "print(len(sys.modules), 'pyroute2' in sys.modules)")


def commands(repo: Path, generated: Path) -> dict[str, list[str]]:
    python = str(repo / ".venv/bin/python")
    faultline = str(repo / ".venv/bin/faultline")
    return {"python -m harness --help": [python, "-m", "harness", "--help"],
            "faultline run --help": [faultline, "run", "--help"],
            f"faultline check-lin {HISTORY}": [faultline, "check-lin",
                                                str(generated / HISTORY)]}


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_ms(repo: Path) -> float:
    """`python -X importtime -m harness --help`: the imports' total time, the
    sum of the top-level modules' cumulative times."""
    err = subprocess.run([str(repo / ".venv/bin/python"), "-X", "importtime", "-m", "harness",
                          "--help"], cwd=repo, capture_output=True, text=True).stderr
    total = 0
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit() and not name.startswith("  "):
                total += int(cumulative)
    return total / 1000


def imported(repo: Path, argv: list[str]) -> str:
    code = PROBE.format(argv=argv)
    out = subprocess.run([str(repo / ".venv/bin/python"), "-c", code], cwd=repo,
                         capture_output=True, text=True).stdout.split()
    return f"{out[-2]} modules, pyroute2 {'yes' if out[-1] == 'True' else 'no'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--repo", type=Path, action="append", default=[])
    args = parser.parse_args()
    repos = [r.resolve() for r in args.repo] or [HERE]
    generated = corpus("generated")
    names = list(commands(HERE, generated))
    for name in names:
        runs: dict[Path, list[tuple[float, float]]] = {r: [] for r in repos}
        for _ in range(args.runs):
            for repo in repos:
                runs[repo].append(timed(commands(repo, generated)[name], repo))
        for repo in repos:
            argv = commands(repo, generated)[name]
            probe = argv[3:] if argv[1:3] == ["-m", "harness"] else argv[1:]
            wall = statistics.median(w for w, _ in runs[repo])
            cpu = statistics.median(c for _, c in runs[repo])
            print(f"{name:52} {repo.name:10} wall {wall * 1000:5.0f} ms  "
                  f"cpu {cpu * 1000:5.0f} ms  {imported(repo, probe)}", flush=True)
    times: dict[Path, list[float]] = {r: [] for r in repos}
    for _ in range(args.runs):
        for repo in repos:
            times[repo].append(import_ms(repo))
    for repo in repos:
        print(f"{'python -X importtime -m harness --help':52} {repo.name:10} "
              f"imports {statistics.median(times[repo]):5.0f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
