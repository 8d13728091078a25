"""Exit statuses and the errors that map to them: one place for every command.

Jepsen's convention: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or
unusable input (one sentence on stderr, nothing started, nothing left), 255
the harness itself failed. A script can tell "the system is broken" (1) from
"we could not tell" (2) from "you called it wrong" (254) from "we broke" (255).
"""

from __future__ import annotations

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_HARNESS_ERROR = 255
# Ctrl-C: the shell's convention (128 + SIGINT); the run is kept, marked interrupted.
EXIT_INTERRUPTED = 130

EXIT_STATUS_HELP = ("exit status: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or "
                    "unusable input (nothing started), 255 harness error, 130 interrupted "
                    "(Ctrl-C), 143 terminated (SIGTERM)")


class UserError(Exception):
    """A mistake of the user's or an unusable input: one sentence, exit 254."""


class HarnessError(Exception):
    """The harness itself failed (not the system under test): exit 255."""


# How much of a client's traceback the terminal, run.json and the report show
# (the whole one is in the worker's log): the raising frame and its callers.
CLIENT_TRACEBACK_LINES = 12


class ClientError(HarnessError):
    """A system's own client raised instead of completing an op (`ok`, `fail` or
    `info`): a bug in the client, so the history cannot be judged. Exit 255."""

    def __init__(self, db: str, slot: int, during: str, traceback_text: str) -> None:
        self.db, self.slot, self.during = db, slot, during
        self.traceback = traceback_text.rstrip("\n").splitlines()[-CLIENT_TRACEBACK_LINES:]
        last = self.traceback[-1] if self.traceback else "no traceback"
        self.summary = f"the {db} client raised in worker {slot} ({during}): {last}"
        super().__init__(self.summary + "\n"
                         + "\n".join(f"  | {line}" for line in self.traceback))

    def to_json(self) -> dict[str, object]:
        """run.json's `client_error`."""
        return {"db": self.db, "worker": self.slot, "during": self.during,
                "traceback": self.traceback}
