"""pytest plugin (entry point `pytest11`): chaos tests as ordinary tests.

    def test_survives_partitions(faultline_run):
        result = faultline_run(system="raft", workload="register",
                               nemesis="partition", time_limit=30)
        assert result.valid, result.summary

Each call is one faultline run with its own run id, so its own namespaces and
addresses: tests run side by side under pytest-xdist. The run dir and its
report.html go into the test's `user_properties` (hence JUnit XML
<properties>) and into a "faultline" section of the test's report.
Runs need root (network namespaces); without it the test is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkers.faults import PARTITION
from faultline.system import System


@dataclass
class ChaosResult:
    """One run's verdict: `valid` is True only when every checker said valid."""

    valid: bool
    verdict: bool | str          # True, False or "unknown", as verdicts.json says
    run_dir: Path
    report: Path
    exit_code: int
    verdicts: dict[str, Any]

    @property
    def summary(self) -> str:
        """Which checkers did not say valid, for an assertion message."""
        bad = {name: v.get("valid") for name, v in (self.verdicts.get("checkers") or {}).items()
               if v.get("valid") is not True}
        return f"verdict {self.verdict} ({bad or 'all valid'}); see {self.report}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--faultline-results", default=None,
                     help="where faultline_run keeps its run dirs (default: pytest's tmp dir)")


def system_spec(system: str | System) -> str:
    """What the run config (and the client workers) call a system: its registered
    name, or `module:ATTR` for a System object defined at module level."""
    if isinstance(system, str):
        return system
    import sys

    from faultline import registry
    if system.name in registry.names() and registry.get(system.name) is system:
        return system.name
    for module_name, module in list(sys.modules.items()):
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is system and not module_name.startswith("__"):
                return f"{module_name}:{attr}"
    raise ValueError(f"System {system.name!r} is neither registered nor a module-level name")


def _results_dir(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    explicit = config.getoption("--faultline-results")
    return Path(explicit) if explicit else tmp_path_factory.getbasetemp() / "faultline"


@pytest.fixture
def faultline_run(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Callable[..., ChaosResult]:
    """Call it with RunConfig fields (system=, workload=, nemesis= as a list or a
    comma-separated string, time_limit=, nodes=, seed=, ...); returns a ChaosResult."""
    if os.geteuid() != 0:
        pytest.skip("faultline_run needs root: nodes run in network namespaces")
    from harness.run.config import RunConfig, parse_nemesis
    from harness.run.lifecycle import run_test

    results = _results_dir(request.config, tmp_path_factory)

    def run(*, system: str | System | None = None, nemesis: str | list[str] = PARTITION.name,
            **config: Any) -> ChaosResult:
        faults = parse_nemesis(nemesis) if isinstance(nemesis, str) else list(nemesis)
        cfg = RunConfig(db=RunConfig().db if system is None else system_spec(system),
                        nemesis=faults, **config)
        outcome = run_test(cfg, results)
        verdicts = outcome.verdicts or {}
        verdict = verdicts.get("valid", "unknown")
        result = ChaosResult(verdict is True, verdict, outcome.run_dir,
                             outcome.run_dir / "report.html", outcome.exit_code, verdicts)
        request.node.user_properties.append(("faultline_run_dir", str(result.run_dir)))
        request.node.user_properties.append(("faultline_report", str(result.report)))
        request.node.user_properties.append(("faultline_verdict", str(verdict)))
        return result

    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    lines = [f"{k}: {v}" for k, v in item.user_properties if k.startswith("faultline_")]
    if lines:
        report.sections.append(("faultline", "\n".join(lines)))
