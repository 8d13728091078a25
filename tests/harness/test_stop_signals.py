"""How the harness takes the signals that stop a run: teardown defers them
whichever thread the kernel delivers them to, and signals the harness
inherited as ignored (nohup, a shell's background job) stay ignored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The child sets its SIGINT handler itself: a test run from a background job
# (nohup, `&` in a script) starts it with SIGINT ignored, and Python keeps that.
DEFERRED = r"""
import os, signal, sys, threading, time
from harness.run.resources import signals_deferred
signal.signal(signal.SIGINT, signal.default_int_handler)
stop = threading.Event()
# Another live thread, as in the harness (node spawner, nemesis): it does not
# block SIGINT, so the kernel may hand it a signal the main thread blocks.
other = threading.Thread(target=stop.wait)
other.start()
sends, depth = int(sys.argv[1]), int(sys.argv[2])
def teardown():
    if depth > 1:     # a run's teardown holds the cluster's: nested blocks
        with signals_deferred(), signals_deferred():
            work()
    else:
        with signals_deferred():
            work()
def work():
    for _ in range(sends):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass  # bytecodes run here: a handler that is due runs in them
    print("teardown finished", flush=True)
try:
    teardown()
except KeyboardInterrupt:
    print("interrupted", flush=True)
stop.set()
other.join()
"""


def run_child(code: str, *args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


NESTING = pytest.mark.parametrize("depth", ["1", "2"], ids=["flat", "nested"])


@NESTING
def test_ctrl_c_during_teardown_waits_for_it_to_finish_with_other_threads_alive(
        depth: str) -> None:
    assert run_child(DEFERRED, "1", depth) == ["teardown finished", "interrupted"]


@NESTING
def test_a_second_ctrl_c_during_teardown_stops_it_at_once(depth: str) -> None:
    assert run_child(DEFERRED, "2", depth) == ["interrupted"]


@NESTING
def test_no_signal_no_interruption(depth: str) -> None:
    assert run_child(DEFERRED, "0", depth) == ["teardown finished"]


IGNORED = r"""
import signal
from harness.run.resources import install_termination_handlers, signals_deferred
signal.signal(signal.SIGHUP, signal.SIG_IGN)     # as nohup leaves it
signal.signal(signal.SIGINT, signal.SIG_IGN)     # as a shell's background job
install_termination_handlers()
with signals_deferred():
    signal.raise_signal(signal.SIGHUP)
    signal.raise_signal(signal.SIGINT)
print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN,
      signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
      signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
"""


def test_signals_inherited_as_ignored_stay_ignored() -> None:
    assert run_child(IGNORED) == ["True True True"]
