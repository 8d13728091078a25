"""Campaign files: matrix expansion and one-sentence validation errors (fast, no runs)."""

from pathlib import Path

import pytest

from harness.campaign.estimate import estimate
from harness.campaign.spec import CampaignError, load_campaign, parse_campaign
from harness.cli import main

CAMPAIGNS = Path(__file__).resolve().parents[2] / "campaigns"

BASE = {"name": "t", "defaults": {"time_limit": 5.0, "rate": 50.0},
        "matrix": [{"db": ["raft"], "workload": ["register", "kv"],
                    "nemesis": ["partition,kill", "none"],
                    "node_options": [{}, {"tick_ms": 20}], "seeds": [1, 2], "repeats": 2}]}


def test_matrix_is_the_cross_product_in_axis_order():
    runs = parse_campaign(BASE).runs
    assert len(runs) == 1 * 2 * 2 * 2 * 2 * 2
    assert [r.index for r in runs] == list(range(32))
    first, second, last = runs[0].config, runs[1].config, runs[-1].config
    # seeds and repeats vary fastest, db slowest
    assert (first.workload, first.nemesis, first.node_options, first.seed) == \
        ("register", ["partition", "kill"], {}, 1)
    assert second.seed == 1 and runs[2].config.seed == 2
    assert (last.workload, last.nemesis, last.node_options, last.seed) == \
        ("kv", [], {"tick_ms": 20}, 2)
    assert all(r.config.time_limit == 5.0 and r.config.rate == 50.0 for r in runs)
    assert runs[0].label == "raft register partition,kill seed 1 #1"
    assert runs[-1].label == "raft kv no-faults tick_ms=20 seed 2 #2"


def test_matrices_concatenate_and_override_defaults():
    doc = {"name": "t", "defaults": {"time_limit": 5.0},
           "matrix": [{"db": ["raft"], "workload": ["log"], "seeds": [1]},
                      {"db": ["etcd"], "workload": ["register"], "seeds": [7, 8],
                       "time_limit": 9.0, "nemesis": [["pause"]]}]}
    runs = parse_campaign(doc).runs
    assert [(r.index, r.config.db, r.config.seed, r.config.time_limit) for r in runs] == [
        (0, "raft", 1, 5.0), (1, "etcd", 7, 9.0), (2, "etcd", 8, 9.0)]
    assert runs[0].config.nemesis[0] == "hunt"   # RunConfig's default: the hunting schedule
    assert runs[1].config.nemesis == ["pause"]


@pytest.mark.parametrize("change, words", [
    ({"name": ""}, "set name"),
    ({"colour": "red"}, "unknown top-level key 'colour'"),
    ({"matrix": []}, "at least one [[matrix]]"),
    ({"defaults": {"time_limt": 3}}, "unknown run setting 'time_limt'"),
    ({"defaults": {"seed": 3}}, "a matrix axis"),
    ({"defaults": {"time_limit": "long"}}, "time_limit must be int or float"),
    ({"defaults": {"nodes": True}}, "nodes must be int"),
    ({"matrix": [{"db": ["raft"], "workload": ["register"]}]}, "the axis seeds is missing"),
    ({"matrix": [{"db": [], "workload": ["register"], "seeds": [1]}]}, "db must be a non-empty"),
    ({"matrix": [{"db": ["raft"], "workload": ["queue"], "seeds": [1]}]},
     "matrix 1: unknown workload 'queue'"),
    ({"matrix": [{"db": ["raft"], "workload": ["register"], "seeds": [1],
                  "nemesis": ["partition,meteor"]}]}, "unknown nemesis 'meteor'"),
    ({"matrix": [{"db": ["raft"], "workload": ["register"], "seeds": ["one"]}]},
     "seeds must be a list of integers"),
    ({"matrix": [{"db": ["raft"], "workload": ["register"], "seeds": [1], "repeats": 0}]},
     "repeats must be a positive integer"),
    ({"matrix": [{"db": ["raft"], "workload": ["register"], "seeds": [1],
                  "node_options": ["fast"]}]}, "node_options must be a list of tables"),
])
def test_validation_errors_are_one_sentence(change, words):
    with pytest.raises(CampaignError) as e:
        parse_campaign({**BASE, **change}, "x.toml")
    message = str(e.value)
    assert words in message and message.startswith("x.toml")
    assert "\n" not in message


def test_cli_reports_bad_toml_in_one_line_and_fails(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[matrix]]\ndb = ["raft"\n')
    assert main(["campaign", str(bad), "--results", str(tmp_path / "r")]) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not valid TOML" in err[0]
    assert not (tmp_path / "r").exists()     # nothing was created for a bad file


def test_cli_rejects_both_or_neither_of_file_and_resume(tmp_path, capsys):
    assert main(["campaign", "--results", str(tmp_path)]) == 254
    assert main(["campaign", "x.toml", "--resume", "abc", "--results", str(tmp_path)]) == 254
    assert main(["campaign", "--resume", "nope", "--results", str(tmp_path)]) == 254
    assert "no campaign 'nope'" in capsys.readouterr().err


def test_shipped_campaigns_are_valid_and_sized():
    smoke = load_campaign(CAMPAIGNS / "smoke.toml")
    assert len(smoke.runs) == 3
    assert all(r.config.time_limit + r.config.recovery_time <= 15 for r in smoke.runs)
    nightly = load_campaign(CAMPAIGNS / "nightly.toml")
    assert {r.config.db for r in nightly.runs} == {"raft", "etcd"}
    assert {r.config.workload for r in nightly.runs} == {"register", "kv", "list-append", "log"}
    assert len({r.config.seed for r in nightly.runs}) >= 3
    hours = estimate(r.config for r in nightly.runs).total_s / 3600
    assert 2 <= hours <= 6, hours


def test_dry_run_lists_runs(capsys):
    assert main(["campaign", str(CAMPAIGNS / "smoke.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split(None, 1) == ["1", "raft register partition,kill seed 1"]
    assert out[-1].startswith("3 runs, about")


def test_a_matrix_typo_lists_every_allowed_key():
    """Finding 8: the list of allowed keys left out the matrix axes."""
    from harness.campaign.spec import AXES, SETTABLE, CampaignError, parse_campaign
    doc = {"name": "x", "matrix": [{"db": ["raft"], "workload": ["register"], "seeds": [1],
                                    "nemesiss": ["kill"]}]}
    with pytest.raises(CampaignError) as e:
        parse_campaign(doc)
    message = str(e.value)
    assert "unknown key 'nemesiss'" in message
    allowed = message.split("allowed: ")[1].split(", ")
    assert set(allowed) == {*AXES, "repeats", *SETTABLE}
    assert {"db", "workload", "nemesis", "seeds"} <= set(allowed)
