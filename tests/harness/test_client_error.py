"""An exception out of a system's own client is a harness error (255), never
`unknown`: the worker hands its traceback to the harness, run.json and
report.html keep its last lines, and `gate` refuses the run even with
--allow-unknown. A client's declared outcomes (fail, info) stay outcomes."""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from checkers.history import read_history
from harness.cli import main
from harness.report.page import write_report
from harness.run.clients import ClientPool
from harness.run.errors import CLIENT_TRACEBACK_LINES, ClientError
from harness.run.recorder import Recorder
from workloads.ops import OpSpec

REPO = Path(__file__).resolve().parents[2]

# A plugin whose client needs no server: reads fail and writes end info (its
# declared outcomes), a cas raises (a bug); RAISING_OPEN's client cannot even open.
PLUGIN = textwrap.dedent('''
    from faultline import System
    from nodes.raft.db import RaftDB
    from workloads.clients.outcome import fail, info


    class DeclaredOrRaising:
        DATA = ("register",)

        def __init__(self, workload, nodes, options):
            pass

        def invoke(self, op):
            if op.f == "read":
                return fail(op, "declared-fail")
            if op.f == "write":
                return info(op, "declared-info")
            return self.deliberately_broken(op)

        def deliberately_broken(self, op):
            raise RuntimeError(f"deliberate bug in the test client on {op.f}")

        def close(self):
            pass


    class CannotOpen(DeclaredOrRaising):
        def __init__(self, workload, nodes, options):
            raise ValueError("deliberate bug opening the test client")


    RAISING = System(name="raising-test", db=RaftDB, clients={"register": DeclaredOrRaising})
    RAISING_OPEN = System(name="raising-open-test", db=RaftDB, clients={"register": CannotOpen})
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "raising_plugin.py").write_text(PLUGIN)
    # The workers are separate interpreters: they find the plugin by PYTHONPATH.
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "raising_plugin"


def _pool(spec: str, tmp_path: Path) -> ClientPool:
    return ClientPool(1, spec, "register", {"n1": ("127.0.0.1", 9)}, {}, tmp_path / "workers")


def _drive(pool: ClientPool, rec: Recorder, fs: list[str]) -> None:
    pool.start(rec)
    pool.run(iter([OpSpec(f, 1 if f != "cas" else [1, 2], "k") for f in fs]), rec,
             deadline=time.monotonic() + 20, rate=None,
             jitter=random.Random(0))


def test_declared_fail_and_info_are_outcomes_not_errors(plugin, tmp_path):
    pool, rec = _pool(f"{plugin}:RAISING", tmp_path), Recorder(tmp_path / "h.msgpack")
    try:
        _drive(pool, rec, ["read", "write", "read"])
    finally:
        pool.close(rec)
        rec.close()
    done = [o for o in read_history(tmp_path / "h.msgpack").ops if o.type != "invoke"]
    assert [(o.type, o.error) for o in done] == [
        ("fail", "declared-fail"), ("info", "declared-info"), ("fail", "declared-fail")]


def test_an_exception_in_invoke_is_a_client_error_with_its_traceback(plugin, tmp_path):
    pool, rec = _pool(f"{plugin}:RAISING", tmp_path), Recorder(tmp_path / "h.msgpack")
    try:
        with pytest.raises(ClientError) as caught:
            _drive(pool, rec, ["read", "cas", "read"])
    finally:
        pool.close(rec)
        rec.close()
    e = caught.value
    assert e.slot == 0 and e.during.startswith("op cas [1, 2] on n1")
    assert e.traceback[-1] == "RuntimeError: deliberate bug in the test client on cas"
    assert any("deliberately_broken" in line for line in e.traceback)
    assert "raised in worker 0" in str(e) and "| RuntimeError: deliberate" in str(e)
    # The whole traceback stays in the worker's log too.
    assert "deliberate bug" in (tmp_path / "workers" / "worker-0.log").read_text()
    # No replacement worker took the op over: the cas stays open until close
    # marks it info, and the read after it was never sent.
    ops = read_history(tmp_path / "h.msgpack").ops
    assert [(o.type, o.f) for o in ops][-2:] == [("invoke", "cas"), ("info", "cas")]


def test_a_client_that_cannot_open_is_a_client_error(plugin, tmp_path):
    pool, rec = _pool(f"{plugin}:RAISING_OPEN", tmp_path), Recorder(tmp_path / "h.msgpack")
    try:
        with pytest.raises(ClientError, match="opening the client") as caught:
            pool.start(rec)
    finally:
        pool.close(rec)
        rec.close()
    assert caught.value.traceback[-1] == "ValueError: deliberate bug opening the test client"


def test_only_the_last_traceback_lines_are_kept():
    text = "\n".join(f"line {i}" for i in range(100))
    e = ClientError("toy", 3, "op read", text)
    assert e.traceback == [f"line {i}" for i in range(100 - CLIENT_TRACEBACK_LINES, 100)]
    assert e.to_json() == {"db": "toy", "worker": 3, "during": "op read",
                           "traceback": e.traceback}
    assert e.summary == "the toy client raised in worker 3 (op read): line 99"


def _error_run_dir(results: Path) -> Path:
    e = ClientError("toy", 0, "op cas [1, 2] on n1",
                    'Traceback (most recent call last):\n  File "toy.py", line 9, in invoke\n'
                    "RuntimeError: deliberate <bug>")
    d = results / "r1"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({
        "run_id": "r1", "status": "error", "config": {"db": "toy", "workload": "register"},
        "error": f"ClientError: {e.summary}", "client_error": e.to_json()}))
    return d


def test_report_shows_the_client_traceback(tmp_path):
    html = write_report(_error_run_dir(tmp_path)).read_text()
    assert "HARNESS ERROR" in html and "client raised instead of completing an op" in html
    assert re.search(r"<pre class='traceback'>Traceback.*toy\.py.*RuntimeError: deliberate "
                     r"&lt;bug&gt;</pre>", html, re.S)


def test_gate_never_passes_a_client_error_run(tmp_path, capsys):
    d = _error_run_dir(tmp_path)
    assert main(["gate", str(d)]) == 2
    assert main(["gate", str(d), "--allow-unknown"]) == 2
    out = capsys.readouterr().out
    assert "ERROR    r1 run: the run is error, not complete (ClientError: the toy client" in out


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
@pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2 (ip netns)")
def test_a_real_run_whose_client_raises_ends_255_with_the_traceback(tmp_path):
    (tmp_path / "raising_run.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    results = tmp_path / "r"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--system", "raising_run:RAISING",
         "--workload", "register", "--time-limit", "8", "--recovery-time", "1",
         "--results", str(results)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 255, out[-3000:]
    assert "client raised in worker" in proc.stderr
    assert "| RuntimeError: deliberate bug in the test client on cas" in proc.stderr
    assert "no cas op succeeded" not in out
    (run_dir,) = [p for p in results.iterdir() if (p / "run.json").exists()]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "error" and run["error"].startswith("ClientError: ")
    assert run["client_error"]["traceback"][-1] == (
        "RuntimeError: deliberate bug in the test client on cas")
    assert "deliberate bug in the test client" in (run_dir / "report.html").read_text()
    assert main(["gate", str(run_dir), "--allow-unknown"]) == 2
