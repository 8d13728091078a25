"""checkers.plugins: what an entry-point group adds to a registry, and the
refusal of an install whose metadata predates the group."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from checkers import plugins


class Item:
    pass


def _entry_points(**named: object):
    eps = [SimpleNamespace(name=n, load=lambda v=v: v) for n, v in named.items()]
    return lambda group: eps


def _own(*groups: str):
    return lambda name: SimpleNamespace(entry_points=[SimpleNamespace(group=g) for g in groups])


def test_one_item_or_several_per_entry_point_in_name_order(monkeypatch):
    a, b, c = Item(), Item(), Item()
    monkeypatch.setattr(plugins, "entry_points", _entry_points(zz=a, aa=(b, c)))
    monkeypatch.setattr(plugins, "distribution", _own("g"))
    assert plugins.contributions("g", Item) == [b, c, a]


def test_an_entry_point_of_the_wrong_kind_is_refused(monkeypatch):
    monkeypatch.setattr(plugins, "entry_points", _entry_points(bad=("not an item",)))
    monkeypatch.setattr(plugins, "distribution", _own("g"))
    with pytest.raises(TypeError, match="entry point 'bad' of g gives a str"):
        plugins.contributions("g", Item)


def test_an_install_older_than_the_group_is_refused(monkeypatch):
    monkeypatch.setattr(plugins, "entry_points", _entry_points())
    monkeypatch.setattr(plugins, "distribution", _own("faultline.systems"))
    with pytest.raises(plugins.StaleInstall, match="make setup"):
        plugins.contributions("g", Item)


def test_this_install_declares_the_groups():
    from checkers.registry import CHECKS, GROUP
    from nemesis.base import FAULTS
    from nemesis.base import GROUP as FAULT_GROUP
    assert GROUP == "faultline.checkers" and FAULT_GROUP == "faultline.faults"
    assert "invariants" in CHECKS and "lose-state" in FAULTS
