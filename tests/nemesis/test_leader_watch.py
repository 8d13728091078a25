"""The leader poll for systems without election events (harness.run.leader_watch)."""

import threading
import time

from harness.run.leader_watch import SOURCE, LeaderWatch, record_change


def test_record_change_keeps_only_changes():
    changes: list = []
    for t, leader in [(1, "n1"), (2, "n1"), (3, None), (4, None), (5, "n2")]:
        record_change(changes, t, leader)
    assert changes == [[1, "n1"], [3, None], [5, "n2"]]


def test_the_watch_records_each_leader_and_counts_failed_polls():
    answers = iter(["n1", "n1", RuntimeError("down"), "n2"])
    done = threading.Event()

    def leader():
        a = next(answers, None)
        if a is None:
            done.set()
            return "n2"
        if isinstance(a, Exception):
            raise a
        return a

    watch = LeaderWatch(leader, time.monotonic_ns(), poll_s=0.001)
    watch.start()
    assert done.wait(10)
    doc = watch.stop()
    assert [c[1] for c in doc["changes"]] == ["n1", None, "n2"]
    assert doc["errors"] == 1 and doc["source"] == SOURCE and doc["polls"] >= 5
    assert [c[0] for c in doc["changes"]] == sorted(c[0] for c in doc["changes"])
