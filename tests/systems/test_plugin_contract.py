"""The contract every third-party system plugin keeps, checked the same way for each.

The plugins are those a `contrib/*/pyproject.toml` declares under the
`faultline.systems` entry-point group, and any other installed entry point of
that group that is not built in. For each: the entry point names a `System`
of its own name; its adapter keeps `nodes.db.DB` and, whole, every optional
ability (`nodes.abilities`) it has a member of; its option tables name known
option kinds and its defaults fit them; its workloads, clients and checkers
resolve through faultline's registries; and `faultline run` refuses a bad
option with 254, one sentence, nothing started. A plugin whose package is not
installed in this venv skips, saying how to install it (the slow end-to-end
tests of tests/systems/test_contrib_*.py install it themselves).

What is particular to one plugin (its config files, its client's SQL, the
faults it refuses, its findings) stays in its own test_contrib_<name>.py.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import tomllib
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from faultline import ABILITIES, ARTIFACTS, CLIENT_OPTIONS, DB, Client, System, registry
from faultline.builtin import SYSTEMS
from faultline.catalog import artifacts_of
from workloads.options import option_kind

REPO = Path(__file__).resolve().parents[2]
CONTRIB = REPO / "contrib"
# The packages a plugin must never be named in: it reaches them only through
# the extension points (entry points, the public `faultline` API).
CORE = ("faultline", "harness", "nodes", "workloads", "checkers", "nemesis")
# A value no option kind takes (workloads.options.OPTION_KINDS): parsed as
# JSON by the CLI, a list of a list is no number, bool, string or list of names.
NO_KIND_TAKES = "[[1]]"
# Faults the harness does to any node's processes, network and files, which
# need no ability of an adapter: every system takes them.
ANY_SYSTEM_TAKES = ("kill:majority", "pause", "partition", "truncate", "lose-unsynced:all")


@dataclass(frozen=True)
class Plugin:
    name: str                # the entry point's name, which must be the system's
    target: str              # "package.module:NAME"
    source: Path | None      # its contrib/ directory; None: installed from elsewhere

    @property
    def package(self) -> str:
        return self.target.partition(":")[0].split(".")[0]

    def install_hint(self) -> str:
        where = self.source.relative_to(REPO) if self.source else f"the {self.package} package"
        return f"{self.package} is not installed in this venv: pip install -e {where}"


def declared_plugins() -> list[Plugin]:
    """Every contrib/ plugin, from its pyproject.toml, then every other installed
    system entry point that is not a built-in."""
    found: dict[str, Plugin] = {}
    for pyproject in sorted(CONTRIB.glob("*/pyproject.toml")):
        eps = tomllib.loads(pyproject.read_text())["project"].get("entry-points", {})
        for name, target in eps.get(registry.GROUP, {}).items():
            found[name] = Plugin(name, target, pyproject.parent)
    builtin = {s.name for s in SYSTEMS}
    for ep in entry_points(group=registry.GROUP):
        if ep.name not in builtin and ep.name not in found:
            found[ep.name] = Plugin(ep.name, ep.value, None)
    return sorted(found.values(), key=lambda p: p.name)


PLUGINS = declared_plugins()


def load(plugin: Plugin) -> System:
    """The installed plugin's System, through the registry as a run finds it;
    a skip saying how to install it when it is not installed."""
    installed = {ep.name: ep for ep in entry_points(group=registry.GROUP)}
    if plugin.name not in installed:
        pytest.skip(plugin.install_hint())
    assert installed[plugin.name].value == plugin.target, (
        f"the installed entry point {plugin.name!r} is {installed[plugin.name].value}, "
        f"not the {plugin.target} its pyproject.toml declares")
    return registry.get(plugin.name)


@pytest.fixture(params=PLUGINS, ids=[p.name for p in PLUGINS])
def plugin(request: pytest.FixtureRequest) -> Plugin:
    return request.param


@pytest.fixture
def system(plugin: Plugin) -> System:
    return load(plugin)


# ------------------------------------------------- Protocol conformance (pure)


def members(protocol: type) -> dict[str, Any]:
    """A Protocol's members: its annotated attributes (name -> type hint) and its
    methods (name -> function)."""
    hints = get_type_hints(protocol)
    methods = {n: f for n, f in vars(protocol).items()
               if inspect.isfunction(f) and not n.startswith("_")}
    return {**{n: hints[n] for n in hints if n not in methods}, **methods}


def _parameters(fn: Any) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def _fits(value: Any, hint: Any) -> bool:
    """The member hints the Protocols use: bool, str, frozenset[str], tuple[str, ...]."""
    origin = getattr(hint, "__origin__", None)
    if origin in (tuple, frozenset):
        return isinstance(value, origin) and all(isinstance(x, str) for x in value)
    return isinstance(value, hint)


def broken_members(obj: Any, protocol: type) -> list[str]:
    """What `obj` lacks or gets wrong of `protocol`: a missing member, an
    attribute of another type, a method taking other parameters (by name)."""
    problems = []
    for name, want in members(protocol).items():
        if not hasattr(obj, name):
            problems.append(f"no {name}")
        elif inspect.isfunction(want):
            have = getattr(obj, name)
            if not callable(have):
                problems.append(f"{name} is not a method")
            elif _parameters(have) != _parameters(want):
                problems.append(f"{name}{tuple(_parameters(have))} is not "
                                f"{name}{tuple(_parameters(want))}")
        elif not _fits(getattr(obj, name), want):
            problems.append(f"{name} is {getattr(obj, name)!r}, not {want}")
    return problems


def claimed_abilities(db: Any) -> list[type]:
    """The optional abilities `db` has any member of: claiming one is having it."""
    return [a for a in ABILITIES if any(hasattr(db, n) for n in members(a))]


def broken_abilities(db: Any) -> list[str]:
    """Each ability `db` claims but does not keep whole, with what is wrong."""
    out = []
    for ability in claimed_abilities(db):
        problems = broken_members(db, ability)
        if problems or not isinstance(db, ability):
            out.append(f"{ability.__name__}: {'; '.join(problems) or 'not an instance'}")
    return out


class _Whole:
    kind = "whole"
    artifacts: frozenset[str] = frozenset()
    failure_log_lines = (r"panic:",)
    benign_log_lines = ()

    def leader(self, cluster: list[Any]) -> str | None:
        return None


class _HalfPatterns(_Whole):
    benign_log_lines = None       # type: ignore[assignment]


class _LeaderOfOneNode(_Whole):
    def leader(self, node: Any) -> str | None:      # type: ignore[override]
        return None


class _NotAMethod(_Whole):
    leader = "n1"                 # type: ignore[assignment]


def test_the_conformance_check_holds_a_whole_adapter_and_fails_a_broken_one() -> None:
    """The twins of the judge the plugin tests below rely on."""
    assert broken_abilities(_Whole()) == []
    assert {a.__name__ for a in claimed_abilities(_Whole())} == {"Leadership",
                                                                 "NodeLogPatterns"}
    assert broken_abilities(_HalfPatterns()) == [
        "NodeLogPatterns: benign_log_lines is None, not tuple[str, ...]"]
    assert broken_abilities(_LeaderOfOneNode()) == [
        "Leadership: leader('node',) is not leader('cluster',)"]
    assert broken_abilities(_NotAMethod()) == ["Leadership: leader is not a method"]
    assert broken_members(object(), DB)[:2] == ["no kind", "no artifacts"]


# --------------------------------------------------------- the plugins' contract


def test_every_contrib_plugin_is_found() -> None:
    """contrib/ holds these system plugins (a new one is checked without an edit here)."""
    assert {"galera", "nats", "redis"} <= {p.name for p in PLUGINS if p.source}


def test_an_uninstalled_plugin_skips_saying_how_to_install_it() -> None:
    missing = Plugin("no-such", "faultline_nosuch:NOSUCH", CONTRIB / "nosuch")
    with pytest.raises(pytest.skip.Exception, match=r"^faultline_nosuch is not installed "
                       r"in this venv: pip install -e contrib/nosuch$"):
        load(missing)


def test_the_entry_point_names_a_system_of_its_own_name(plugin: Plugin, system: System) -> None:
    assert isinstance(system, System) and system.name == plugin.name
    assert plugin.name in registry.names()
    assert registry.get(plugin.target) is system       # by spec, the same object
    assert system.description and "\n" not in system.description


def test_the_adapter_keeps_the_db_protocol(system: System) -> None:
    db = system.db()
    assert broken_members(db, DB) == []
    assert isinstance(db.kind, str) and db.kind
    assert db.artifacts <= ARTIFACTS and artifacts_of(system) == db.artifacts
    hint = db.check_installed()
    assert hint is None or (isinstance(hint, str) and "\n" not in hint.strip()), hint
    check = getattr(db, "check_options", None)    # optional (faultline.system.System)
    if check is not None:
        assert len(_parameters(check)) == 1
        check(dict(system.node_defaults))


def test_each_ability_it_claims_it_keeps_whole(system: System) -> None:
    db = system.db()
    assert broken_abilities(db) == []
    for pattern in getattr(db, "failure_log_lines", ()) + getattr(db, "benign_log_lines", ()):
        re.compile(pattern)


def test_its_option_tables_name_known_kinds_and_its_defaults_fit_them(system: System) -> None:
    from harness.run.config import RunConfig, validate
    assert system.node_options is not None, "node_options unset: a typo would pass unchecked"
    for kind in system.node_options.values():
        option_kind(kind)
    for key, value in system.node_defaults.items():
        assert key in system.node_options, f"default for undeclared node option {key!r}"
        ok, what = option_kind(system.node_options[key])
        assert ok(value), f"node option {key} defaults to {value!r}, not {what}"
    for workload in system.workloads:
        options = getattr(system.client_class(workload), "OPTIONS", {})
        for key, kind in options.items():
            option_kind(kind)
            # A shared option a client reads keeps its shared kind.
            assert key not in CLIENT_OPTIONS or kind == CLIENT_OPTIONS[key], key
        validate(RunConfig(db=system.name, workload=workload,
                           node_options=dict(system.node_defaults)))


def test_its_workloads_clients_and_checkers_resolve_through_the_registries(
        system: System) -> None:
    from checkers.registry import CHECKS, runnable
    from workloads.judging import plan_for
    from workloads.registry import WORKLOADS
    assert system.workloads, "a system with no workload"
    for workload in system.workloads:
        assert workload in WORKLOADS
        client = system.client_class(workload)
        assert WORKLOADS[workload].DATA in client.DATA
        assert broken_members(client, Client) == []
        assert _parameters(client.__init__) == _parameters(Client.__init__)
        run = {"config": {"db": system.name, "workload": workload},
               "artifacts": sorted(artifacts_of(system))}
        plan = plan_for(run)
        assert plan and set(plan) <= set(CHECKS)
        # Something judges its answers besides the op counts.
        assert set(runnable(run, plan)) - {"stats"}, plan


def test_its_campaign_names_it_and_validates(plugin: Plugin, system: System) -> None:
    from harness.campaign.spec import parse_campaign
    campaign = plugin.source / "campaign.toml" if plugin.source else None
    if campaign is None or not campaign.exists():
        pytest.skip(f"{plugin.name} has no campaign.toml")
    runs = parse_campaign(tomllib.loads(campaign.read_text()), str(campaign)).runs
    assert runs and {r.config.db for r in runs} == {plugin.name}
    assert {r.config.workload for r in runs} <= set(system.workloads)


def test_it_takes_the_faults_that_need_no_ability(system: System) -> None:
    from harness.run.config import RunConfig, validate
    for spec in ANY_SYSTEM_TAKES:
        assert validate(RunConfig(db=system.name, workload=system.workloads[0],
                                  nemesis=[spec])).nemesis == [spec]


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("FAULTLINE_STATE_DIR", str(d))
    return d


def _bad_options(system: System) -> list[tuple[list[str], str]]:
    """(argv, what the one sentence says) for options `faultline run` must refuse."""
    workload = system.workloads[0]
    cases = [
        (["--node-option", "no_such_option=1"],
         f"unknown --node-option 'no_such_option' for {system.name}"),
        (["--client-option", "no_such_option=1"],
         f"unknown --client-option 'no_such_option' for {system.name} x {workload}"),
    ]
    for key in system.node_options or {}:
        cases.append((["--node-option", f"{key}={NO_KIND_TAKES}"], f"--node-option {key} must be"))
    return [(["--system", system.name, "--workload", workload, *argv], says)
            for argv, says in cases]


def test_a_bad_option_is_254_in_one_sentence_and_starts_nothing(
        system: System, tmp_path: Path, state_dir: Path, capsys: pytest.CaptureFixture) -> None:
    from harness.cli import main
    results = tmp_path / "results"
    for argv, says in _bad_options(system):
        assert main(["run", "--results", str(results), *argv]) == 254, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0] and "Traceback" not in err[0], (argv, err)
        assert not results.exists() or not any(results.iterdir())
        assert not state_dir.exists() or not any(state_dir.iterdir())


def test_no_core_module_names_the_plugin(plugin: Plugin) -> None:
    """The plugin reached faultline through its extension points only: neither
    its name nor its package appears in faultline's own packages."""
    out = subprocess.run(["git", "grep", "-l", "-i", "-w", "-e", plugin.name,
                          "-e", plugin.package, "--", *CORE],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode in (0, 1), out.stderr
    assert out.stdout == "", out.stdout
