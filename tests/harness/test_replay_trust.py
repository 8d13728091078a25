"""Issue 28, finding 4: `faultline replay` says which system and options it
will load from a run dir (perhaps someone else's) and asks first; it never
imports a module from the run dir or the current directory."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from faultline import registry

EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('imported')\nSYSTEM = None\n"


def run_dir(root: Path, db: str, **config) -> Path:
    d = root / "20261126T000000-sent"
    d.mkdir(parents=True)
    doc = {"run_id": d.name, "status": "complete", "schedule": [],
           "config": {"db": db, "workload": "register", "nodes": 3, "seed": 7, **config}}
    (d / "run.json").write_text(json.dumps(doc))
    return d


def harness(*args: str, cwd: Path, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    # `python -m` puts the cwd on sys.path: the worst case for a module planted there.
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, stdin=stdin,
                          capture_output=True, text=True, timeout=120)


def test_without_a_terminal_or_yes_replay_says_what_it_would_load_and_refuses(tmp_path):
    rd = run_dir(tmp_path, "raft", node_options={"tick_ms": 50}, bugs=["stale-read"])
    done = harness("replay", str(rd), "--results", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 254
    assert '"raft" (built in)' in done.stderr or '"raft" (entry point' in done.stderr
    assert '{"tick_ms": 50}' in done.stderr and '["stale-read"]' in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "faultline: replay runs the system and options above; with no terminal to ask, "
        "give --yes if you trust this run dir")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["run_dir", "cwd"])
def test_a_system_module_shipped_in_the_run_dir_or_cwd_is_never_imported(tmp_path, where):
    marker = tmp_path / "imported"
    rd = run_dir(tmp_path, "sentplugin:SYSTEM")
    (rd / "sentplugin.py").write_text(EVIL.format(marker=str(marker)))
    # The user cd's into the run dir (or unpacked it where they stand).
    cwd = rd if where == "run_dir" else tmp_path
    if where == "cwd":
        (rd / "sentplugin.py").rename(tmp_path / "sentplugin.py")
    # The twin: from there a plain import would run it.
    subprocess.run([sys.executable, "-c", "import sentplugin"], cwd=cwd, timeout=60)
    assert marker.exists()
    marker.unlink()

    done = harness("replay", str(rd), "--yes", "--results", str(tmp_path / "out"), cwd=cwd)
    assert done.returncode == 254, done.stderr
    assert not marker.exists()
    (line,) = done.stderr.strip().splitlines()
    assert "sentplugin would be imported from" in line and "not from the installed" in line
    assert not (tmp_path / "out").exists()


def test_installed_source_refuses_a_shadowing_module_in_an_untrusted_dir(tmp_path, monkeypatch):
    """A module both installed and planted: the import would take the planted
    one (first on sys.path), so it is refused; alone in a trusted dir it loads."""
    trusted, planted = tmp_path / "site", tmp_path / "sent"
    for d in (trusted, planted):
        d.mkdir()
        (d / "shadowplug.py").write_text("SYSTEM = None\n")
    monkeypatch.setattr(sys, "path", [str(planted), str(trusted), *sys.path])
    with pytest.raises(registry.UntrustedSystem, match=str(planted)):
        registry.installed_source("shadowplug:SYSTEM", [planted])
    monkeypatch.setattr(sys, "path", [str(trusted), *sys.path[2:]])
    assert str(trusted / "shadowplug.py") in registry.installed_source(
        "shadowplug:SYSTEM", [planted])
    assert "shadowplug" not in sys.modules       # found, never imported


def test_an_entry_point_declared_from_an_untrusted_dir_is_refused(tmp_path, monkeypatch):
    sent = tmp_path / "sent"
    info = sent / "evilsys-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evilsys\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[faultline.systems]\nevilsys = evilsys:SYSTEM\n")
    monkeypatch.setattr(sys, "path", [str(sent), *sys.path])
    registry._entry_points.cache_clear()
    try:
        with pytest.raises(registry.UntrustedSystem, match="entry point is declared by"):
            registry.installed_source("evilsys", [sent])
    finally:
        monkeypatch.undo()
        registry._entry_points.cache_clear()


def ask_on_a_terminal(args: list[str], answer: bytes, cwd: Path) -> tuple[int, str]:
    """Run `python -m harness ARGS` with a pty as its terminal; answer the question."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execv(sys.executable, [sys.executable, "-m", "harness", *args])
    out = b""
    asked = False
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not asked and b"[y/N]" in out:
            os.write(fd, answer + b"\n")
            asked = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def test_on_a_terminal_replay_asks_and_a_no_starts_nothing(tmp_path):
    rd = run_dir(tmp_path, "raft")
    code, out = ask_on_a_terminal(["replay", str(rd), "--results", str(tmp_path / "out")],
                                  b"n", tmp_path)
    assert code == 254
    assert "Replay it? [y/N]" in out and "replay not confirmed: nothing started" in out
    assert not (tmp_path / "out").exists()


def test_on_a_terminal_a_yes_goes_on_to_the_replay(tmp_path):
    # nodes 0: past the question, the run's own validation refuses it (no root needed).
    rd = run_dir(tmp_path, "raft", nodes=0)
    code, out = ask_on_a_terminal(["replay", str(rd), "--results", str(tmp_path / "out")],
                                  b"y", tmp_path)
    assert "Replay it? [y/N]" in out and "not confirmed" not in out
    assert code == 254 and "--nodes" in out, out


def test_a_checkout_egg_info_in_the_cwd_does_not_shadow_the_installed_entry_point(
        tmp_path, monkeypatch):
    """`pip install -e` leaves faultline.egg-info in the checkout; replaying from
    the checkout (the cwd, on sys.path as '') must find raft's entry point in
    the installed dist-info, not refuse it as declared by the cwd."""
    info = tmp_path / "faultline.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: faultline\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[faultline.systems]\nraft = faultline.builtin:RAFT\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    registry._entry_points.cache_clear()
    try:
        assert registry.installed_source("raft", []).startswith("entry point of faultline")
    finally:
        monkeypatch.undo()
        registry._entry_points.cache_clear()
