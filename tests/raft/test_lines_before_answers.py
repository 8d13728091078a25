"""What checkers.read_commit_point rests on: the raft node writes the `hw`
line a read's answer rests on before that answer leaves, and its start line
says so (`hw_before_answers`). Before it did (cbf6e05), a correct run's
reads reached the harness 0.1-2.7 ms before the line."""

from __future__ import annotations

import contextlib
import io
import json
import time
from typing import Any

import msgpack

from nodes.raft.core import Entry, Ready
from nodes.raft.requests import QUORUM
from nodes.raft.server import NodeOptions, Pending, RaftServer


class _Order:
    def __init__(self) -> None:
        self.order: list[str] = []

    def emit(self, event: dict[str, Any]) -> None:
        self.order.append(f"line {event['event']}")

    def reply(self, request_id: Any, outcome: Any, definite: bool = True,
              leader: str | None = None) -> None:
        self.order.append(f"answer {request_id} ok={outcome.ok}")


def _server(data_dir) -> tuple[RaftServer, list[dict[str, Any]]]:
    server = RaftServer(NodeOptions(node_id="n1", cluster_id="c", listen=("127.0.0.1", 0),
                                    peers={p: ("127.0.0.1", 1) for p in ("n1", "n2", "n3")},
                                    data_dir=data_dir))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        server.recover()
    return server, [json.loads(x) for x in out.getvalue().splitlines()]


def test_the_start_line_says_hw_lines_precede_answers(tmp_path):
    server, lines = _server(tmp_path)
    server.log.close()
    [start] = [x for x in lines if x["event"] == "start"]
    assert start["hw_before_answers"] is True


def test_a_reads_hw_line_is_written_before_its_answer(tmp_path):
    server, _ = _server(tmp_path)
    server.log.close()
    recorder = _Order()
    server.emit = recorder.emit
    epoch = server.core.epoch
    server.pending[0] = Pending(epoch, {"id": 7, "op": "get", "key": "k"}, recorder,
                                time.monotonic() + 5)
    barrier = msgpack.packb({"op": "read_barrier", "rid": "n1-0-0"}, use_bin_type=True)
    server._handle(Ready(committed=[Entry(offset=0, epoch=epoch, payload=barrier)],
                         high_watermark=1, acked=[(0, QUORUM)],
                         events=[{"event": "hw", "hw": 1, "epoch": epoch}]))
    assert recorder.order == ["line hw", "answer 7 ok=True"]


class _CutOrder(_Order):
    """Records when the log is cut among the lines."""

    def __init__(self, log: Any) -> None:
        super().__init__()
        self.log = log

    def truncate(self, end: int) -> None:
        self.order.append(f"cut {end}")
        self.log.truncate(end)


def test_a_truncate_line_is_written_before_the_cut_it_reports(tmp_path):
    """A node killed between cutting its log and writing the line recovered
    less than its `flushed` lines said, with nothing to say why
    (checkers.flushed_lost). The lines before it keep their order; those after
    it follow the cut."""
    server, _ = _server(tmp_path)
    recorder = _CutOrder(server.log)
    server.emit = recorder.emit
    server.log = recorder  # type: ignore[assignment]  # records the cut, then does it
    epoch = server.core.epoch
    server._handle(Ready(truncate_to=0, events=[
        {"event": "role", "role": "Follower", "epoch": epoch, "leader": "n2"},
        {"event": "truncate", "from": 2, "to": 0, "reason": "diverging-epoch"},
        {"event": "hw", "hw": 0, "epoch": epoch}]))
    recorder.log.close()
    assert recorder.order == ["line role", "line truncate", "cut 0", "line hw"]
