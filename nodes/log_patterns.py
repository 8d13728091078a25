"""Lines of a node's output that mean the node tripped over itself, for the
node-log checker (`checkers.node_logs`): the generic ones for nodes written in
Python and in Go. An adapter declares its own (`nodes.db.NodeLogPatterns`),
usually these plus what its system prints; one that declares none gets all of
them.

A failure line is searched in each line (Python `re`); a line that also
matches a benign pattern does not count: it is the operating system's answer
to what a fault did (a disk made to fail, a connection cut), not the node's
own mistake.
"""

from __future__ import annotations

# The last line of a Python traceback: the exception, at the start of a line
# (module-qualified or not), with or without a message.
PYTHON_FAILURE_LINES = (
    r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Transition)(?::|$)",
)
# The operating system's errors, and asyncio's for a peer that went away.
PYTHON_BENIGN_LINES = (
    r"^(?:[A-Za-z_]\w*\.)*(?:OSError|IOError|EnvironmentError|ConnectionError|"
    r"ConnectionResetError|ConnectionRefusedError|ConnectionAbortedError|BrokenPipeError|"
    r"TimeoutError|FileNotFoundError|FileExistsError|PermissionError|BlockingIOError|"
    r"InterruptedError|ProcessLookupError|CancelledError|IncompleteReadError)(?::|$)",
)
# A Go runtime panic or fatal error (both print at the start of a line and
# end the process), and the data race detector's report.
GO_FAILURE_LINES = (
    r"^panic: ",
    r"^fatal error: ",
    r"^WARNING: DATA RACE",
)
# The operating system's answer to a disk made to fail (nemesis.diskfault's
# `eio` and `full`), as Go spells its errno strings (`write
# /data/member/wal/0.wal: input/output error`): a Go node that stops on it
# (etcd's `C |` line, a panic, a zap JSON line) fail-stops as a correct node
# must, as a Python node's OSError line above. Only where the error ends the
# line (closing quotes and brackets aside): a line that goes on says more.
GO_BENIGN_LINES: tuple[str, ...] = (
    r""": (?:input/output error|no space left on device)["')}\]]*\s*$""",
)

GENERIC_FAILURE_LINES = PYTHON_FAILURE_LINES + GO_FAILURE_LINES
GENERIC_BENIGN_LINES = PYTHON_BENIGN_LINES + GO_BENIGN_LINES
