"""One big history across executors.

Linearizability is split per key by `check_job`; a run-scoped checker is one
task per run, so one huge run would be one task however many executors there
are. For a big run, the driver instead runs the checkers below itself and
sends their expensive part to the executors:

- Elle (list-append and rw-register): the driver builds the dependency graph
  and its strongly connected components; each component is a task that
  searches it for cycles (`checkers.elle.cycles.search_component`), and the
  driver merges the results (`merge_searches`) and explains the cycles.
- divergence: the replicas' logs are cut into offset ranges; each range is a
  task that reads it into facts (`checkers.divergence.range_facts`), and the
  driver judges the joined facts.

The verdicts are the in-process checkers' own: the same functions, fed from
Spark. What stays on the driver, and why, is in docs/spark.md ("One big history").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from checkers.divergence import FactsOf, Log, range_facts, split_by_offset
from checkers.elle.cycles import (
    Adjacency,
    Cycle,
    CycleSearch,
    SearchResult,
    find_cycles_by_component,
    search_component,
)
from checkers.history import read_history
from checkers.registry import (
    CHECKS,
    DIVERGENCE,
    ELLE,
    RW_REGISTER,
    Plan,
    load_node_files,
    read_run_json,
    run_check,
    run_from_ops,
)
from checkers.rundir import HISTORY
from checkers.verdict import Verdict

# The checkers a big run's driver splits; every other one runs as usual.
SPLIT_CHECKERS = (ELLE.name, RW_REGISTER.name, DIVERGENCE.name)
# Offset ranges per log: a few per executor core of a small cluster, so a
# free core picks up the next range while another finishes a dense one.
RANGES = 8

ADJACENCY_SCHEMA = "comp long, seq long, u long, v long, kinds long"
RESULT_SCHEMA = "part long, result string"
PandasFn = Callable[[pd.DataFrame], pd.DataFrame]


def _tasks(spark: Any, wanted: int) -> int:
    """How many partitions for `wanted` tasks: one each, up to the session's
    shuffle width (set explicitly on the frame: the session's setting is
    shared with the job checking the other runs at the same time)."""
    from checkers.spark.session import SHUFFLE_LIMIT_KEY

    limit = int(spark.conf.get(SHUFFLE_LIMIT_KEY,
                               spark.conf.get("spark.sql.shuffle.partitions", "200")))
    return max(1, min(limit, wanted))


# --- Elle: one task per strongly connected component -------------------------


def adjacency_rows(adjacencies: list[Adjacency]) -> pd.DataFrame:
    """Each component's adjacency as rows, in order: which of several equally
    short cycles the search finds depends on it. A node with no edge inside
    (none in a component, but the format allows it) is one row with v = -1."""
    comp, seq, u, v, kinds = [], [], [], [], []
    for c, adj in enumerate(adjacencies):
        i = 0
        for node, out in adj.items():
            for succ, mask in out or [(-1, 0)]:
                comp.append(c)
                seq.append(i)
                u.append(node)
                v.append(succ)
                kinds.append(mask)
                i += 1
    return pd.DataFrame({"comp": comp, "seq": seq, "u": u, "v": v, "kinds": kinds},
                        dtype="int64")


def adjacency_from_rows(rows: pd.DataFrame) -> Adjacency:
    adj: Adjacency = {}
    rows = rows.sort_values("seq")
    for node, succ, mask in zip(rows["u"].tolist(), rows["v"].tolist(), rows["kinds"].tolist(),
                                strict=True):
        out = adj.setdefault(node, [])
        if succ >= 0:
            out.append((succ, mask))
    return adj


def result_json(r: SearchResult) -> str:
    return json.dumps({"cycles": [[c.type, c.steps] for c in r.cycles],
                       "undecided": r.undecided, "largest": r.largest_component,
                       "seconds": r.seconds})


def result_from_json(text: str) -> SearchResult:
    d = json.loads(text)
    return SearchResult([Cycle(t, [tuple(s) for s in steps]) for t, steps in d["cycles"]],
                        d["undecided"], 1, d["largest"], d["seconds"])


def search_fn(budget_s: float) -> PandasFn:
    def search(rows: pd.DataFrame) -> pd.DataFrame:
        found = search_component(adjacency_from_rows(rows), budget_s)
        return pd.DataFrame({"part": [int(rows["comp"].iloc[0])],
                             "result": [result_json(found)]})
    return search


def component_search(spark: Any) -> CycleSearch:
    """A `find_cycles` whose components are searched as Spark tasks."""

    def search_all(adjacencies: list[Adjacency], budget_s: float) -> list[SearchResult]:
        if not adjacencies:
            return []
        frame = spark.createDataFrame(adjacency_rows(adjacencies), ADJACENCY_SCHEMA)
        out = (frame.repartition(_tasks(spark, len(adjacencies)), "comp").groupBy("comp")
               .applyInPandas(search_fn(budget_s), RESULT_SCHEMA).toPandas())
        by_part = dict(zip(out["part"].tolist(), out["result"].tolist(), strict=True))
        return [result_from_json(by_part[i]) for i in range(len(adjacencies))]

    return lambda g, budget_s: find_cycles_by_component(g, budget_s, search_all)


# --- divergence: one task per offset range -----------------------------------


def encode_range(logs: dict[str, Log]) -> str:
    """The fields the rules read of each entry, as JSON (a dump's values are
    JSON to begin with; anything else raises TypeError)."""
    return json.dumps({n: [[o, e["epoch"], e.get("digest"), e.get("committed")]
                           for o, e in log.items()] for n, log in logs.items()})


def decode_range(text: str) -> dict[str, Log]:
    return {n: {o: {"offset": o, "epoch": epoch, "digest": digest, "committed": committed}
                for o, epoch, digest, committed in entries}
            for n, entries in json.loads(text).items()}


def _facts(rows: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"part": rows["part"].tolist(),
                         "result": [json.dumps(range_facts(decode_range(t)))
                                    for t in rows["logs"]]})


def range_search(spark: Any, ranges: int = RANGES) -> FactsOf:
    """`range_facts` of `ranges` offset ranges, each range a Spark task."""

    def facts_of(logs: dict[str, Log]) -> list[dict[str, Any]]:
        cuts = split_by_offset(logs, ranges)
        try:
            texts = [encode_range(c) for c in cuts]
        except TypeError:  # a value JSON cannot carry: read the logs here
            return [range_facts(logs)]
        frame = spark.createDataFrame(pd.DataFrame({"part": range(len(texts)), "logs": texts}),
                                      "part long, logs string")
        # By range of `part`: one range per partition, where hashing would
        # put two in one task and leave another task empty.
        out = frame.repartitionByRange(_tasks(spark, len(texts)), "part").mapInPandas(
            lambda batches: (_facts(b) for b in batches), RESULT_SCHEMA).toPandas()
        by_part = dict(zip(out["part"].tolist(), out["result"].tolist(), strict=True))
        return [json.loads(by_part[i]) for i in range(len(texts))]

    return facts_of


# --- a big run's split checkers, on the driver --------------------------------


def split_options(spark: Any, name: str, options: dict[str, Any]) -> dict[str, Any]:
    if name == DIVERGENCE.name:
        return {**options, "facts_of": range_search(spark)}
    return {**options, "cycle_search": component_search(spark)}


def check_split(spark: Any, run_dir: Path, plan: Plan) -> list[tuple[str, Verdict, float]]:
    """The SPLIT_CHECKERS of `plan` on one run, their expensive parts as Spark
    tasks: (checker, verdict, seconds) each (loading the run not counted, as
    in-process)."""
    names = [n for n in plan if n in SPLIT_CHECKERS]
    if not names:
        return []
    r = run_from_ops(run_dir, read_run_json(run_dir), read_history(run_dir / HISTORY).ops)
    if any(CHECKS[n].needs_node_files for n in names):
        r.dumps, r.events = load_node_files(run_dir)
    out = []
    for name in names:
        v, seconds = run_check(name, r, split_options(spark, name, plan[name]))
        out.append((name, v, seconds))
    return out
