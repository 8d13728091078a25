"""Campaign files: TOML in, a validated list of run configs out.

A campaign is one or more matrices; each expands to the cross product
db x workload x nemesis set x node options x seed x repeat, in that order,
so a run's index is stable for a given file (resume relies on it). Every
check here is pure and happens before any run starts: a typo costs one
sentence, not hours of nightly runs.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harness.run.bounds import MAX_CAMPAIGN_RUNS, MAX_REPEATS
from harness.run.config import ConfigError, RunConfig, parse_nemesis, validate

# Matrix axes: each a non-empty list in a [[matrix]] table.
AXES = ("db", "workload", "nemesis", "node_options", "seeds")
REQUIRED_AXES = ("db", "workload", "seeds")
# RunConfig fields a campaign may not set: the matrix sets these, and a
# schedule belongs to replays only.
NOT_SETTABLE = {"db", "workload", "nemesis", "node_options", "seed", "schedule"}
SETTABLE = tuple(f.name for f in fields(RunConfig) if f.name not in NOT_SETTABLE)
TOP_LEVEL = ("name", "description", "defaults", "matrix")


class CampaignError(ConfigError):
    """One sentence naming the campaign file, where in it, and what is wrong."""


@dataclass(frozen=True)
class PlannedRun:
    index: int          # position in the expanded campaign, 0..N-1
    label: str          # what a person reads in progress lines and summaries
    config: RunConfig


@dataclass(frozen=True)
class Campaign:
    name: str
    description: str
    runs: list[PlannedRun]


def load_campaign(path: Path) -> Campaign:
    """Read and validate a campaign file (I/O at this edge only)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise CampaignError(f"cannot read campaign file {path}: {e.strerror}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CampaignError(f"{path} is not valid TOML: {e}") from None
    return parse_campaign(doc, str(path))


def parse_campaign(doc: dict[str, Any], where: str = "campaign") -> Campaign:
    """The campaign a parsed TOML document describes, every run config validated."""
    unknown = sorted(set(doc) - set(TOP_LEVEL))
    if unknown:
        raise CampaignError(f"{where}: unknown top-level key {unknown[0]!r}; allowed: "
                            f"{', '.join(TOP_LEVEL)}")
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CampaignError(f"{where}: set name = \"...\" (a non-empty string)")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise CampaignError(f"{where}: [defaults] must be a table of run settings")
    check_settings(defaults, f"{where}, [defaults]")
    matrices = doc.get("matrix")
    if isinstance(matrices, dict):
        matrices = [matrices]
    if not isinstance(matrices, list) or not matrices:
        raise CampaignError(f"{where}: add at least one [[matrix]] table "
                            f"(with {', '.join(REQUIRED_AXES)})")
    runs: list[PlannedRun] = []
    for number, matrix in enumerate(matrices, 1):
        if not isinstance(matrix, dict):
            raise CampaignError(f"{where}: matrix {number} must be a table")
        runs += expand_matrix(matrix, defaults, f"{where}, matrix {number}", start=len(runs))
    return Campaign(name.strip(), str(doc.get("description", "")), runs)


def check_settings(settings: dict[str, Any], where: str, in_matrix: bool = False) -> None:
    """Run settings must be RunConfig fields of the right type. In a [[matrix]]
    table the axes and `repeats` are allowed too, and the error lists them."""
    defaults = RunConfig()
    allowed = [*AXES, "repeats", *SETTABLE] if in_matrix else list(SETTABLE)
    for key, value in settings.items():
        if key not in SETTABLE:
            hint = (" (a matrix axis: set it in [[matrix]])"
                    if key in NOT_SETTABLE and not in_matrix else "")
            if in_matrix and key == "seed":
                hint = " (the axis is seeds, a list)"
            raise CampaignError(f"{where}: unknown {'key' if in_matrix else 'run setting'} "
                                f"{key!r}{hint}; allowed: {', '.join(allowed)}")
        expected = _expected_type(getattr(defaults, key))
        if (isinstance(value, bool) and bool not in expected) or not isinstance(value, expected):
            names = " or ".join(t.__name__ for t in expected)
            raise CampaignError(f"{where}: {key} must be {names}, not {value!r}")


def _expected_type(default: Any) -> tuple[type, ...]:
    if isinstance(default, bool):
        return (bool,)
    if isinstance(default, float):
        return (int, float)
    if default is None:     # lin_model: unset by default, a name when set
        return (str,)
    return (type(default),)


def _axis(matrix: dict[str, Any], name: str, where: str) -> list[Any]:
    if name not in matrix:
        if name in REQUIRED_AXES:
            raise CampaignError(f"{where}: the axis {name} is missing (a non-empty list)")
        return [",".join(RunConfig().nemesis)] if name == "nemesis" else [{}]
    values = matrix[name]
    if not isinstance(values, list) or not values:
        raise CampaignError(f"{where}: {name} must be a non-empty list, not {values!r}")
    return values


def _nemesis_set(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return parse_nemesis(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v != "none"]
    raise CampaignError(f"{where}: each nemesis set must be a string like \"partition,kill\" "
                        f"or a list of fault names, not {value!r}")


def expand_matrix(matrix: dict[str, Any], defaults: dict[str, Any], where: str,
                  start: int = 0) -> list[PlannedRun]:
    """Pure: one matrix table -> its runs, indexed from `start`."""
    settings = {k: v for k, v in matrix.items() if k not in (*AXES, "repeats")}
    check_settings(settings, where, in_matrix=True)
    dbs = _axis(matrix, "db", where)
    workloads = _axis(matrix, "workload", where)
    nemeses = [_nemesis_set(n, where) for n in _axis(matrix, "nemesis", where)]
    node_options = _axis(matrix, "node_options", where)
    if not all(isinstance(o, dict) for o in node_options):
        raise CampaignError(f"{where}: node_options must be a list of tables, e.g. "
                            f"[{{}}, {{tick_ms = 20}}]")
    seeds = _axis(matrix, "seeds", where)
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise CampaignError(f"{where}: seeds must be a list of integers, not {seeds!r}")
    repeats = matrix.get("repeats", 1)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise CampaignError(f"{where}: repeats must be a positive integer, not {repeats!r}")
    if repeats > MAX_REPEATS:
        raise CampaignError(f"{where}: repeats must be at most {MAX_REPEATS}, not {repeats}")
    # Counted before any is made: a plan of millions of runs is refused, not built.
    count = math.prod(map(len, (dbs, workloads, nemeses, node_options, seeds))) * repeats
    if start + count > MAX_CAMPAIGN_RUNS:
        raise CampaignError(f"{where}: the matrix makes {count} runs (db x workload x nemesis "
                            f"x node_options x seeds x repeats), {start + count} with the "
                            f"matrices before it; a campaign may have at most "
                            f"{MAX_CAMPAIGN_RUNS}")
    runs: list[PlannedRun] = []
    for db, workload, nemesis, options, seed, repeat in itertools.product(
            dbs, workloads, nemeses, node_options, seeds, range(repeats)):
        config = RunConfig(**{**defaults, **settings, "db": db, "workload": workload,
                              "nemesis": nemesis, "node_options": dict(options),
                              "seed": seed})
        try:
            validate(config)
        except ConfigError as e:
            raise CampaignError(f"{where}: {e}") from None
        runs.append(PlannedRun(start + len(runs), run_label(config, repeat, repeats), config))
    return runs


def run_label(config: RunConfig, repeat: int = 0, repeats: int = 1) -> str:
    parts = [config.db, config.workload, ",".join(config.nemesis) or "no-faults"]
    if config.node_options:
        parts.append(",".join(f"{k}={v}" for k, v in sorted(config.node_options.items())))
    parts.append(f"seed {config.seed}")
    if repeats > 1:
        parts.append(f"#{repeat + 1}")
    return " ".join(parts)
