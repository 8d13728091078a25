"""The fault and checker plug-ins (`faultline.faults`, `faultline.checkers`)
load under the systems' rule (checkers.plugin_trust): an entry point declared
by an installed distribution loads; one declared from the current directory,
or whose module the current directory would shadow, is refused before any of
its code runs, and the CLI says why in one sentence with status 254."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from checkers import plugin_trust, plugins

GROUP = "faultline.trust-test"   # a group of its own: faultline's plug-ins stay out
PLUGIN = "import pathlib\npathlib.Path({marker!r}).write_text('imported')\nITEMS = {items}\n"


def plant(where: Path, module: str, marker: Path, group: str = GROUP,
          items: str = "('loaded',)") -> None:
    """A distribution (its dist-info, as pip installs it) declaring one entry
    point of `group`, and its module, which leaves `marker` when imported."""
    info = where / f"{module}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\none = {module}:ITEMS\n")
    (where / f"{module}.py").write_text(PLUGIN.format(marker=str(marker), items=items))


@pytest.fixture
def own_group(monkeypatch):
    """faultline's installed metadata declares the test group (else StaleInstall)."""
    monkeypatch.setattr(plugins, "distribution", lambda name: SimpleNamespace(
        entry_points=[SimpleNamespace(group=GROUP)]))
    yield
    for name in [m for m in sys.modules if m.startswith("trustplug")]:
        del sys.modules[name]


def test_a_plugin_installed_outside_the_cwd_loads(tmp_path, monkeypatch, own_group):
    site, cwd, marker = tmp_path / "site", tmp_path / "cwd", tmp_path / "imported"
    cwd.mkdir()
    plant(site, "trustplug_ok", marker)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", ["", str(site), *sys.path])
    assert plugins.contributions(GROUP, str) == ["loaded"]
    assert marker.exists()


def test_a_plugin_declared_from_the_cwd_is_refused_unrun(tmp_path, monkeypatch, own_group):
    cwd, marker = tmp_path / "cwd", tmp_path / "imported"
    plant(cwd, "trustplug_cwd", marker)
    monkeypatch.chdir(cwd)
    # `python -m` and `python -c` put the cwd first on sys.path.
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    assert [ep.name for ep in plugins.metadata.entry_points(group=GROUP)] == ["one"]
    with pytest.raises(plugin_trust.UntrustedPlugin) as refused:
        plugins.contributions(GROUP, str)
    assert str(refused.value) == (f"{GROUP} entry point 'one': its entry point is declared "
                                  f"by {cwd}, not an installed package")
    assert not marker.exists()


def test_an_installed_plugin_shadowed_by_a_module_in_the_cwd_is_refused(
        tmp_path, monkeypatch, own_group):
    site, cwd, marker = tmp_path / "site", tmp_path / "cwd", tmp_path / "imported"
    plant(site, "trustplug_shadow", marker)
    cwd.mkdir()
    (cwd / "trustplug_shadow.py").write_text(PLUGIN.format(marker=str(marker), items="()"))
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", ["", str(site), *sys.path])
    with pytest.raises(plugin_trust.UntrustedPlugin,
                       match=f"would be imported from {cwd / 'trustplug_shadow.py'}, "
                             "not from the installed packages"):
        plugins.contributions(GROUP, str)
    assert not marker.exists()


def _faultline_run_help(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    # `run` loads the fault plug-ins as its parser is built; `python -m` puts
    # the cwd on sys.path, the worst case for a plug-in planted there.
    env = {"PATH": "/usr/bin:/bin", **({"PYTHONPATH": str(pythonpath)} if pythonpath else {})}
    return subprocess.run([sys.executable, "-m", "harness", "run", "--help"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_cli_loads_a_fault_plugin_installed_on_the_pythonpath(tmp_path):
    site, cwd, marker = tmp_path / "site", tmp_path / "cwd", tmp_path / "imported"
    cwd.mkdir()
    plant(site, "trustplug_cli", marker, group="faultline.faults", items="()")
    done = _faultline_run_help(cwd, pythonpath=site)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


def test_the_cli_refuses_a_fault_plugin_in_the_cwd_with_254(tmp_path):
    cwd, marker = tmp_path / "cwd", tmp_path / "imported"
    plant(cwd, "trustplug_cli", marker, group="faultline.faults", items="()")
    done = _faultline_run_help(cwd)
    assert done.returncode == 254, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == ("faultline: faultline.faults entry point 'one': its entry point is "
                    f"declared by {cwd}, not an installed package")
    assert not marker.exists() and not done.stdout
