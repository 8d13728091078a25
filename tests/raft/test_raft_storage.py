import os

import pytest

from nodes.raft import storage
from nodes.raft.storage import LogRecord, SegmentedLog


def records(start, n, epoch=1):
    return [LogRecord(o, epoch, f"p-{o}".encode() * (o % 5 + 1)) for o in range(start, start + n)]


def append_one_by_one(log, recs):
    # a batch always lands in one segment; single appends let segments roll
    for r in recs:
        log.append([r])


def reopen(path, **kw):
    return SegmentedLog.open(path, **kw)


def test_round_trip_across_segments(tmp_path):
    log, rec = reopen(tmp_path, segment_bytes=200)
    assert rec.records == [] and rec.truncated_bytes == 0
    written = records(0, 50) + records(50, 30, epoch=2)
    for i in range(0, len(written), 7):
        log.append(written[i : i + 7])
    assert log.sync() == 80
    assert len(log.files()) > 3
    log.close()
    log2, rec2 = reopen(tmp_path, segment_bytes=200)
    assert rec2.records == written
    assert rec2.truncated_bytes == 0
    assert log2.log_end == 80 and log2.flushed_end == 80
    log2.append(records(80, 1, epoch=3))
    log2.sync()
    log2.close()
    assert reopen(tmp_path)[1].records == written + records(80, 1, epoch=3)


def test_append_rejects_gaps(tmp_path):
    log, _ = reopen(tmp_path)
    log.append(records(0, 3))
    with pytest.raises(ValueError):
        log.append(records(5, 1))
    with pytest.raises(ValueError):
        log.append([LogRecord(3, 1, b""), LogRecord(5, 1, b"")])
    log.close()


def last_segment(path):
    return storage.list_segments(path / storage.LOG_DIR)[-1][1]


def test_torn_tail_is_cut(tmp_path):
    log, _ = reopen(tmp_path)
    log.append(records(0, 10))
    log.sync()
    log.close()
    seg = last_segment(tmp_path)
    size = seg.stat().st_size
    with open(seg, "r+b") as f:
        f.truncate(size - 3)  # half of the last record made it to disk
    log2, rec = reopen(tmp_path)
    assert rec.records == records(0, 9)
    assert rec.truncated_bytes == len(storage.encode_record(records(9, 1)[0])) - 3
    assert seg.stat().st_size == size - len(storage.encode_record(records(9, 1)[0]))
    # the cut is where new appends go, and they survive another restart
    log2.append(records(9, 2, epoch=4))
    log2.sync()
    log2.close()
    assert reopen(tmp_path)[1].records == records(0, 9) + records(9, 2, epoch=4)


def test_corrupt_crc_cuts_that_record_and_everything_after(tmp_path):
    log, _ = reopen(tmp_path, segment_bytes=150)
    append_one_by_one(log, records(0, 30))
    log.sync()
    log.close()
    segments = storage.list_segments(tmp_path / storage.LOG_DIR)
    assert len(segments) >= 3
    base, victim = segments[1]
    data = bytearray(victim.read_bytes())
    first_len = len(storage.encode_record(records(base, 1)[0]))
    data[first_len + storage.RECORD_HEADER.size] ^= 0xFF  # flip a payload byte of record 2
    victim.write_bytes(bytes(data))
    later = sum(p.stat().st_size for _, p in segments[2:])
    _, rec = reopen(tmp_path, segment_bytes=150)
    assert rec.records == records(0, base + 1)
    assert rec.truncated_bytes == len(data) - first_len + later
    assert len(storage.list_segments(tmp_path / storage.LOG_DIR)) == 2


def test_garbage_segment_is_cut_to_nothing(tmp_path):
    log_dir = tmp_path / storage.LOG_DIR
    log_dir.mkdir()
    (log_dir / storage.segment_name(0)).write_bytes(os.urandom(1000))
    log, rec = reopen(tmp_path)
    assert rec.records == [] and rec.truncated_bytes == 1000
    log.append(records(0, 1))
    log.close()


def test_read_log_is_read_only(tmp_path):
    log, _ = reopen(tmp_path)
    log.append(records(0, 5))
    log.sync()
    log.close()
    seg = last_segment(tmp_path)
    with open(seg, "ab") as f:
        f.write(b"\x00\x01torn")
    before = seg.read_bytes()
    got, bad = storage.read_log(tmp_path)
    assert got == records(0, 5) and bad == 6
    assert seg.read_bytes() == before


def test_truncate_is_durable_and_offsets_reused(tmp_path):
    log, _ = reopen(tmp_path, segment_bytes=150)
    append_one_by_one(log, records(0, 40))
    log.sync()
    n_before = len(log.files())
    log.truncate(12)
    assert log.log_end == 12 and log.flushed_end == 12
    assert len(log.files()) < n_before
    log.append(records(12, 3, epoch=7))
    log.sync()
    log.close()
    assert reopen(tmp_path)[1].records == records(0, 12) + records(12, 3, epoch=7)


def test_truncate_to_a_segment_boundary_and_to_zero(tmp_path):
    log, _ = reopen(tmp_path, segment_bytes=150)
    append_one_by_one(log, records(0, 40))
    bases = [int(p.name.split(".")[0]) for p in log.files()]
    log.truncate(bases[2])
    assert log.log_end == bases[2]
    log.truncate(0)
    assert log.log_end == 0
    log.append(records(0, 2, epoch=9))
    log.sync()
    log.close()
    _, rec = reopen(tmp_path)
    assert rec.records == records(0, 2, epoch=9) and rec.truncated_bytes == 0


def test_unsynced_appends_are_not_reported_flushed(tmp_path):
    log, _ = reopen(tmp_path)
    log.append(records(0, 3))
    assert log.flushed_end == 0
    assert log.sync() == 3
    log.append(records(3, 2))
    assert log.flushed_end == 3
    log.close()


def test_quorum_state_round_trip_and_atomic_replace(tmp_path):
    assert storage.read_quorum_state(tmp_path) is None
    state = {"epoch": 3, "leader": "n2", "voted_for": "n2", "cluster_id": "C",
             "applied_offset": 7, "current_voters": ("n1", "n2"),
             "target_voters": ("n1", "n2", "n3"), "abstain": False}
    storage.write_quorum_state(tmp_path, state)
    assert storage.read_quorum_state(tmp_path) == state
    # A voter that lost its votes' record keeps abstaining across restarts.
    storage.write_quorum_state(tmp_path, state | {"abstain": True})
    assert storage.read_quorum_state(tmp_path)["abstain"] is True
    storage.write_quorum_state(tmp_path, state | {"epoch": 4, "leader": None})
    assert storage.read_quorum_state(tmp_path)["epoch"] == 4
    assert not (tmp_path / (storage.QUORUM_STATE_FILE + ".tmp")).exists()
    # a left-over tmp from a crash mid-write does not affect the real file
    (tmp_path / (storage.QUORUM_STATE_FILE + ".tmp")).write_bytes(b"{\"epo")
    assert storage.read_quorum_state(tmp_path)["epoch"] == 4


def test_quorum_state_without_voter_fields_reads_as_bootstrap_voters(tmp_path):
    # A file written before KIP-595's voter fields were kept.
    (tmp_path / storage.QUORUM_STATE_FILE).write_text(
        '{"version": 1, "epoch": 2, "leader": null, "voted_for": null, "cluster_id": "C"}')
    assert storage.read_quorum_state(tmp_path) == {
        "epoch": 2, "leader": None, "voted_for": None, "cluster_id": "C",
        "applied_offset": -1, "current_voters": None, "target_voters": None,
        "abstain": False}


def test_quorum_state_garbage_reads_as_missing(tmp_path):
    (tmp_path / storage.QUORUM_STATE_FILE).write_bytes(b"\xff\xfe not json")
    assert storage.read_quorum_state(tmp_path) is None
    (tmp_path / storage.QUORUM_STATE_FILE).write_text('{"epoch": -1}')
    assert storage.read_quorum_state(tmp_path) is None


def test_epoch_checkpoint_and_high_watermark(tmp_path):
    assert storage.read_epoch_checkpoint(tmp_path) == []
    assert storage.read_high_watermark(tmp_path) == 0
    storage.write_epoch_checkpoint(tmp_path, [(1, 0), (3, 17)])
    storage.write_high_watermark(tmp_path, 42)
    assert storage.read_epoch_checkpoint(tmp_path) == [(1, 0), (3, 17)]
    assert storage.read_high_watermark(tmp_path) == 42
    (tmp_path / storage.HIGH_WATERMARK_FILE).write_text("garbage")
    assert storage.read_high_watermark(tmp_path) == 0


def test_sync_in_a_thread_while_appending_and_truncating(tmp_path):
    # The server fsyncs in a worker thread while the loop appends (group commit).
    import threading

    log, _ = reopen(tmp_path, segment_bytes=4096)
    stop = threading.Event()
    reported = []

    def flusher():
        while not stop.is_set():
            reported.append(log.sync())

    t = threading.Thread(target=flusher)
    t.start()
    try:
        for start in range(0, 2000, 10):
            log.append(records(start, 10))
            if start == 1000:
                log.truncate(995)
                log.append(records(995, 15, epoch=2))
    finally:
        stop.set()
        t.join()
    assert all(r <= 2000 for r in reported)
    assert log.sync() == 2000
    log.close()
    got = reopen(tmp_path)[1].records
    assert [r.offset for r in got] == list(range(2000))
    assert [r.epoch for r in got[990:1011]] == [1] * 5 + [2] * 15 + [1]


def test_an_atomic_write_that_fails_leaves_no_tmp_and_the_old_file(tmp_path, monkeypatch):
    """A full disk mid-write (a log dump into a results dir that filled): the
    old file stands and no half-written .tmp is left beside it."""
    import errno

    from nodes.raft.storage import write_file_atomically
    path = tmp_path / "log.msgpack"
    write_file_atomically(path, b"old")

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        write_file_atomically(path, b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.msgpack"]
    assert path.read_bytes() == b"old"
