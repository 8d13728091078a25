"""The rules that ask whether a fault destroyed data at rest: flushed-lost-on-
restart (a restart that recovers less than the node's own `flushed` lines
declared durable, with no such fault on it in between), and lost-committed,
which does not hold a node such a fault hit and that never started again to
its commits. Twins: each failing history beside the one that passes, one
line or one fault apart; the faults from nemesis ops as a run records them."""

from __future__ import annotations

from checkers import divergence, flushed_lost
from checkers.at_rest import AtRest, at_rest_faults
from checkers.fault_row import (
    DESTROYS,
    DISTURBS,
    KEEPS,
    READ_FAILED,
    READ_FLIPPED,
)
from checkers.faults import DISK, FAULT_OPS, KILL, LOSE_UNSYNCED, TRUNCATE, disk_at_rest
from checkers.history import NEMESIS, Op

START_NS = 1_000_000
S = 1_000_000_000   # event times in ns: the faults' history times are placed by START_NS


def start(t: int, log_end: int) -> dict:
    return {"t": t, "node": "n1", "event": "start", "epoch": 1, "log_end": log_end}


def flushed(t: int, end: int) -> dict:
    return {"t": t, "node": "n1", "event": "flushed", "end": end}


def cut(t: int, to: int, reason: str = "diverging-epoch") -> dict:
    return {"t": t, "node": "n1", "event": "truncate", "from": None, "to": to, "reason": reason}


def lines(recovered: int, *between: dict) -> dict[str, list[dict]]:
    """n1 flushes to 10 at 2 s, then restarts at 10 s recovering `recovered`."""
    return {"n1": [start(1 * S, 0), flushed(2 * S, 4), flushed(3 * S, 10), *between,
                   start(10 * S, recovered)],
            "n2": [start(1 * S, 0), flushed(2 * S, 10)]}


def ops(*faults: tuple[str, float, float, dict]) -> list[Op]:
    """Nemesis ops (f, invoke s, done s, recorded value) in history time, and a client op."""
    out = [Op(0, 0, 0, "invoke", "write", 1), Op(1, 1, 0, "ok", "write", 1)]
    for f, at, done, value in faults:
        out += [Op(len(out), int(at * S) - START_NS, NEMESIS, "invoke", f, None),
                Op(len(out) + 1, int(done * S) - START_NS, NEMESIS, "info", f, value)]
    return out


def judge(events: dict[str, list[dict]], *faults: tuple[str, float, float, dict]
          ) -> tuple[list[dict], dict]:
    return flushed_lost.check(events, at_rest_faults(ops(*faults), START_NS))


# --- the rule ------------------------------------------------------------------


def test_a_restart_below_the_flushed_end_is_flagged_naming_node_ends_and_lines():
    anomalies, stats = judge(lines(6))
    assert [a["type"] for a in anomalies] == [flushed_lost.RULE]
    a = anomalies[0]
    assert (a["node"], a["claimed_end"], a["recovered_end"]) == ("n1", 10, 6)
    assert a["lines"]["flushed"] == flushed(3 * S, 10)
    assert a["lines"]["start"] == start(10 * S, 6)
    assert "n1" in a["explanation"] and "6..9" in a["explanation"]
    assert stats["judged"] is True and stats["starts"] == 3


def test_a_restart_that_recovers_all_it_flushed_passes():
    assert judge(lines(10)) == ([], {"judged": True, "starts": 3,
                                     "losses_excused_by_faults": []})
    assert judge(lines(12))[0] == []


def test_its_own_truncate_lowers_the_claim():
    assert judge(lines(5, cut(5 * S, 5)))[0] == []
    assert judge(lines(5, cut(5 * S, 5, reason="recovery")))[0] == []
    # Cut to 8 and restarted at 6: still two offsets short of what it claimed.
    anomalies, _ = judge(lines(6, cut(5 * S, 8)))
    assert [(a["claimed_end"], a["recovered_end"]) for a in anomalies] == [(8, 6)]
    assert anomalies[0]["lines"]["truncates_between"] == [cut(5 * S, 8)]


def test_flushes_after_the_cut_raise_the_claim_again():
    anomalies, _ = judge(lines(6, cut(5 * S, 5), flushed(6 * S, 9)))
    assert [(a["claimed_end"], a["recovered_end"]) for a in anomalies] == [(9, 6)]


def test_the_claim_outlives_restarts_that_kept_it_and_a_loss_is_judged_once():
    events = {"n1": [start(1 * S, 0), flushed(2 * S, 10), start(3 * S, 10),
                     start(4 * S, 7), start(5 * S, 7)]}
    anomalies, _ = judge(events)
    assert [(a["claimed_end"], a["recovered_end"], a["t"]) for a in anomalies] == [
        (10, 7, 4 * S)]


def test_kill_and_lose_unsynced_keep_what_was_fsynced_so_excuse_nothing():
    anomalies, stats = judge(lines(6), (KILL.name, 5, 5.1, {"nodes": ["n1"]}),
                             (LOSE_UNSYNCED.name, 6, 6.5, {"nodes": ["n1"], "lost": {}}))
    assert [a["node"] for a in anomalies] == ["n1"]
    assert stats["losses_excused_by_faults"] == []


def test_a_truncate_or_bitflip_at_rest_between_flushed_and_start_excuses_it():
    for fault in ((TRUNCATE.name, 5, 5.2, {"nodes": ["n1"], "mode": "tail", "cuts": []}),
                  (DISK.name, 5, 5.2, {"nodes": ["n1"], "mode": "bitflip", "at": "rest",
                                       "flips": []}),
                  (DISK.name, 5, 5.2, {"nodes": ["n1"], "mode": "truncate",
                                       "truncate": "tail", "cuts": []})):
        anomalies, stats = judge(lines(6), fault)
        assert anomalies == [], fault
        [excused] = stats["losses_excused_by_faults"]
        assert excused["node"] == "n1" and excused["excused_by"][0]["f"] == fault[0]


def test_a_destroying_fault_elsewhere_or_before_the_claim_excuses_nothing():
    on_n2 = (TRUNCATE.name, 5, 5.2, {"nodes": ["n2"], "mode": "tail", "cuts": []})
    before = (TRUNCATE.name, 2.5, 2.6, {"nodes": ["n1"], "mode": "tail", "cuts": []})
    # 2.5 s: after the flush to 4, before the flush to 10 (the first claim above 6).
    assert [a["node"] for a in judge(lines(6), on_n2)[0]] == ["n1"]
    assert [a["node"] for a in judge(lines(6), before)[0]] == ["n1"]
    # Before the flush to 4 but recovered below 4: that flush is the claim, and it came after.
    assert judge(lines(3), before)[0] == []


def test_a_disk_that_refused_writes_and_was_healed_before_the_restart_excuses_nothing():
    """ignore-write-error's shape: the disk refused writes, the node said
    they were flushed, the heal lifted the rules and restarted it."""
    eio = (DISK.name, 4, 4.1, {"nodes": ["n1"], "mode": "eio", "p": 1.0, "ops": ["write"]})
    heal = (DISK.heal_f, 9.5, 10.5, {"disk": {"nodes": ["n1"], "restarted": ["n1"]}})
    assert [a["node"] for a in judge(lines(6), eio, heal)[0]] == ["n1"]


def did(**counts: int) -> dict:
    return {"nodes": ["n1"], "did": {"n1": [{"mode": "eio", "did": counts}]},
            "restarted": ["n1"]}


def test_a_restart_while_a_disk_fault_spoiled_reads_is_excused():
    eio = (DISK.name, 4, 4.1, {"nodes": ["n1"], "mode": "eio", "p": 0.1,
                               "ops": ["read", "write"]})
    for record in (did(passed=10, **{READ_FAILED: 1}), did(**{READ_FLIPPED: 2}),
                   {"disk": {"nodes": ["n1"]}}):   # healed saying nothing: it may have
        anomalies, stats = judge(lines(6), eio, (DISK.heal_f, 11, 11.5, record))
        assert anomalies == [], record
        assert stats["losses_excused_by_faults"][0]["excused_by"][0]["what"] == DISTURBS


def test_a_restart_while_a_disk_fault_failed_no_read_is_not_excused():
    """Seen on ignore-write-error, hunt seed 3: the heal restarted n3, its
    boot came after the next eio fault struck, which failed nothing."""
    eio = (DISK.name, 4, 4.1, {"nodes": ["n1"], "mode": "eio", "p": 0.1,
                               "ops": ["read", "write"]})
    for record in (did(passed=10), did(passed=14, **{"eio-write": 2})):
        anomalies, _ = judge(lines(6), eio, (DISK.heal_f, 11, 11.5, record))
        assert [a["node"] for a in anomalies] == ["n1"], record
    # Another node's failed reads excuse nothing here.
    other = {"nodes": ["n1", "n2"], "did": {"n1": [{"mode": "eio", "did": {"passed": 3}}],
                                           "n2": [{"mode": "eio", "did": {READ_FAILED: 3}}]}}
    both = (DISK.name, 4, 4.1, {"nodes": ["n1", "n2"], "mode": "eio"})
    assert [a["node"] for a in judge(lines(6), both, (DISK.heal_f, 11, 11.5, other))[0]] \
        == ["n1"]


def test_a_system_without_flushed_lines_is_not_judged():
    events = {"n1": [start(1 * S, 0), start(10 * S, 0)]}
    anomalies, stats = judge(events)
    assert anomalies == [] and stats["judged"] is False and "flushed" in stats["reason"]


def test_faults_not_placed_on_the_nodes_clock_leave_it_unjudged():
    anomalies, stats = flushed_lost.check(lines(6), None)
    assert anomalies == [] and stats["judged"] is False


def test_divergence_reports_it_and_its_stats():
    v = divergence.check({"n1": {"entries": []}}, lines(6), at_rest=[])
    assert v["valid"] is False
    assert [a["type"] for a in v["anomalies"]] == [flushed_lost.RULE]
    ok = divergence.check({"n1": {"entries": []}}, lines(10), at_rest=[])
    assert ok["valid"] is True and ok["stats"]["flushed_lost_on_restart"]["judged"] is True
    assert divergence.check({"n1": {"entries": []}}, lines(6))["valid"] is True  # not placed


# --- the faults' declarations -----------------------------------------------------


def test_each_disk_variant_says_what_it_did_at_rest():
    assert disk_at_rest({"mode": "bitflip", "at": "rest"}) == DESTROYS
    assert disk_at_rest({"mode": "truncate", "truncate": "tail"}) == DESTROYS
    assert disk_at_rest({"nodes": ["n1"]}) == DESTROYS   # failed part-way: may have
    for mode in ("eio", "full", "slow", "bitflip"):
        assert disk_at_rest({"mode": mode}) == DISTURBS, mode
    assert TRUNCATE.at_rest({}) == DESTROYS
    assert KILL.at_rest({}) == KEEPS and LOSE_UNSYNCED.at_rest({}) == KEEPS
    assert FAULT_OPS["reformat"].at_rest({}) == DESTROYS


def test_a_fault_without_a_row_may_have_destroyed_anything():
    [f] = at_rest_faults(ops(("plugin-wipe", 5, 5.2, {"nodes": ["n1"]})), START_NS)
    assert f == AtRest("plugin-wipe", DESTROYS, frozenset({"n1"}), 5 * S, int(5.2 * S))
    assert judge(lines(6), ("plugin-wipe", 5, 5.2, {"nodes": ["n1"]}))[0] == []


def test_a_no_op_fault_excuses_nothing():
    noop = (TRUNCATE.name, 5, 5.2, {"nodes": ["n1"], "noop": "already down"})
    assert [a["node"] for a in judge(lines(6), noop)[0]] == ["n1"]


# --- lost-committed on a node a fault left unable to start ----------------------


def _entries(n: int, hw: int) -> list[dict]:
    return [{"offset": o, "epoch": 1, "committed": o < hw, "digest": f"d{o}"} for o in range(n)]


def _cluster() -> dict[str, dict]:
    """n1 and n3 hold 0..19, committed; n2's dump ends at 7, the record a bit
    flip at rest broke, though it had reported hw 20."""
    return {n: {"log_start_offset": 0, "log_end_offset": end, "high_watermark": hw,
                "entries": _entries(end, hw)}
            for n, end, hw in (("n1", 20, 20), ("n2", 7, 7), ("n3", 20, 20))}


def _hw_then(*n2_after: dict) -> dict[str, list[dict]]:
    hw = {"t": 3 * S, "node": "n2", "event": "hw", "hw": 20, "epoch": 1}
    led = {"t": 2 * S, "node": "n1", "event": "role", "role": "Leader", "epoch": 1,
           "leader": "n1"}
    return {"n1": [start(1 * S, 0), led], "n2": [dict(start(1 * S, 0), node="n2"), hw, *n2_after],
            "n3": [start(1 * S, 0)]}


BITFLIP_N2 = (DISK.name, 5, 5.3, {"nodes": ["n2"], "mode": "bitflip", "at": "rest",
                                  "flips": []})


def _lost(v: dict) -> list:
    return [a["node"] for a in v["anomalies"] if a["type"] == "lost-committed"]


def test_a_node_destroyed_at_rest_that_never_started_again_is_not_held_to_its_commits():
    at_rest = at_rest_faults(ops(BITFLIP_N2), START_NS)
    v = divergence.check(_cluster(), _hw_then(), at_rest=at_rest)
    assert v["valid"] is True, v["anomalies"]
    assert v["stats"]["not_restarted_after_data_loss"]["n2"]["f"] == DISK.name


def test_the_same_loss_without_the_fault_or_after_a_restart_is_lost_committed():
    assert _lost(divergence.check(_cluster(), _hw_then(), at_rest=[])) == ["n2"]
    # A kill keeps what is on disk: no excuse.
    kill = at_rest_faults(ops((KILL.name, 5, 5.3, {"nodes": ["n2"]})), START_NS)
    assert _lost(divergence.check(_cluster(), _hw_then(), at_rest=kill)) == ["n2"]
    # It started again after the flip: its own recovery is judged as ever.
    restarted = _hw_then(dict(start(6 * S, 7), node="n2"))
    at_rest = at_rest_faults(ops(BITFLIP_N2), START_NS)
    v = divergence.check(_cluster(), restarted, at_rest=at_rest)
    assert _lost(v) == ["n2"] and v["stats"]["not_restarted_after_data_loss"] == {}


def test_the_cluster_wide_loss_still_counts_a_node_that_never_came_back():
    dumps = _cluster()
    for n in ("n1", "n3"):   # nobody else holds 7..19 either
        dumps[n] = dict(dumps["n2"])
    at_rest = at_rest_faults(ops(BITFLIP_N2), START_NS)
    v = divergence.check(dumps, _hw_then(), at_rest=at_rest)
    assert _lost(v) == [None]


def test_a_failed_inject_counts_for_its_own_op_only():
    """A lasting fault whose inject failed (1.5 s, before the claim at 3 s)
    is not in force until a heal that never comes."""
    failed = [Op(0, int(1.5 * S) - START_NS, NEMESIS, "invoke", DISK.name, {}),
              Op(1, int(1.6 * S) - START_NS, NEMESIS, "info", DISK.name, {},
                 error="RuntimeError: no node to aim at")]
    [f] = at_rest_faults(failed, START_NS)
    assert (f.what, f.nodes, f.end) == (DESTROYS, None, int(1.6 * S))
    assert [a["node"] for a in flushed_lost.check(lines(6), [f])[0]] == ["n1"]


def test_a_node_live_at_the_end_or_a_fault_naming_no_node_excuses_no_commit_loss():
    at_rest = at_rest_faults(ops(BITFLIP_N2), START_NS)
    live = {"live": ["n1", "n2", "n3"], "converged": True}
    v = divergence.check(_cluster(), _hw_then(), at_rest=at_rest, convergence=live)
    assert "n2" in _lost(v)
    anywhere = at_rest_faults(ops(("plugin-wipe", 5, 5.2, {})), START_NS)
    v = divergence.check(_cluster(), _hw_then(), at_rest=anywhere)
    assert _lost(v) == ["n2"] and v["stats"]["not_restarted_after_data_loss"] == {}


# --- through the registry (in-process and Spark alike call run_check) -----------


def test_the_registry_places_the_runs_faults_for_divergence():
    from checkers.history import History
    from checkers.registry import run_check
    from checkers.rundir import Run
    dumps = {"n1": {"entries": []}}
    cut_n1 = (TRUNCATE.name, 5, 5.2, {"nodes": ["n1"], "mode": "tail", "cuts": []})
    kill_n1 = (KILL.name, 5, 5.2, {"nodes": ["n1"]})

    def divergence_of(*faults: tuple, run: dict | None = None) -> dict:
        r = Run(None, {"start_monotonic_ns": START_NS} if run is None else run,
                History(ops(*faults)), dumps, lines(6))
        return run_check("divergence", r, {})[0]
    assert divergence_of(cut_n1)["valid"] is True
    flagged = divergence_of(kill_n1)
    assert [a["type"] for a in flagged["anomalies"]] == [flushed_lost.RULE]
    unplaced = divergence_of(kill_n1, run={})
    assert unplaced["valid"] is True
    assert unplaced["stats"]["flushed_lost_on_restart"]["judged"] is False
